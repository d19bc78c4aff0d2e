package dev.idemkit.spring.boot;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * What Spring logs while a test starts a context that must fail: kept for the test to assert on,
 * instead of printed (the warning of a deliberate failure is no news in the build's output).
 */
final class CapturedLog implements AutoCloseable {
    private final Logger logger;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final boolean additive;

    /** Captures the loggers under {@code org.springframework} until {@link #close()}. */
    CapturedLog() {
        this("org.springframework");
    }

    /** Captures the loggers under {@code name} until {@link #close()}. */
    CapturedLog(String name) {
        logger = (Logger) LoggerFactory.getLogger(name);
        appender.start();
        logger.addAppender(appender);
        additive = logger.isAdditive();
        logger.setAdditive(false);
    }

    /** Each captured line: its level, message and exception's class and message. */
    List<String> lines() {
        List<String> lines = new ArrayList<>();
        for (ILoggingEvent e : appender.list) {
            String thrown =
                    e.getThrowableProxy() == null ? "" : " " + e.getThrowableProxy().getClassName();
            lines.add(e.getLevel() + " " + e.getFormattedMessage() + thrown);
        }
        return lines;
    }

    @Override
    public void close() {
        logger.setAdditive(additive);
        logger.detachAppender(appender);
        appender.stop();
    }
}
