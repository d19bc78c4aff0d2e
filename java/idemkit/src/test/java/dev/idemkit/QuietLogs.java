package dev.idemkit;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Every test's warnings on the {@code dev.idemkit} loggers, captured: a test marked {@link
 * ExpectedWarnings} has them asserted and kept out of the output (a green run is quiet); any other
 * test's are printed as before, so an unexpected warning is still seen. Registered for every test
 * (src/test/resources/META-INF/services, junit-platform.properties).
 */
@SuppressWarnings("exports") // JUnit's types in its API: the tests are patched into the module
public final class QuietLogs implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NS =
            ExtensionContext.Namespace.create(QuietLogs.class);
    // Held strongly: java.util.logging keeps loggers only weakly.
    private static final Logger LOGGER = Logger.getLogger("dev.idemkit");

    @Override
    public void beforeEach(ExtensionContext context) {
        drainNative(); // an earlier test's lines are logged as before, not charged to this one
        LogCapture capture = new LogCapture();
        capture.setLevel(Level.ALL);
        LOGGER.addHandler(capture);
        LOGGER.setUseParentHandlers(false);
        context.getStore(NS).put(LogCapture.class, capture);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        drainNative(); // the core's lines of this test, logged now on this thread
        LogCapture capture = context.getStore(NS).remove(LogCapture.class, LogCapture.class);
        LOGGER.removeHandler(capture);
        LOGGER.setUseParentHandlers(true);
        List<LogRecord> warnings =
                capture.records.stream()
                        .filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue())
                        .collect(Collectors.toList());
        List<String> required =
                context.getTestMethod()
                        .map(m -> m.getAnnotation(ExpectedWarnings.class))
                        .map(e -> List.of(e.value()))
                        .orElse(List.of());
        List<String> allowed = new java.util.ArrayList<>(required);
        context.getTestClass()
                .map(c -> c.getAnnotation(ExpectedWarnings.class))
                .ifPresent(e -> allowed.addAll(List.of(e.value())));
        // Everything else (other levels, warnings nobody expects) is printed as the logger's
        // parents would have, under the test's name: never hidden.
        List<LogRecord> shown =
                capture.records.stream()
                        .filter(r -> !warnings.contains(r) || !matches(r, allowed))
                        .collect(Collectors.toList());
        if (shown.stream().anyMatch(warnings::contains)) {
            System.err.println(
                    "QuietLogs: "
                            + context.getUniqueId()
                            + " logged warnings it does not expect (mark it @ExpectedWarnings"
                            + " if it provokes them on purpose):");
        }
        for (LogRecord r : shown) {
            Logger.getLogger("").log(r);
        }
        if (context.getExecutionException().isPresent()) {
            return; // the test's own failure says more
        }
        for (String text : required) {
            if (warnings.stream().noneMatch(r -> message(r).contains(text))) {
                throw new AssertionError(
                        "expected a warning containing \""
                                + text
                                + "\"; the test logged "
                                + warnings.stream()
                                        .map(QuietLogs::message)
                                        .collect(Collectors.toList()));
            }
        }
    }

    /** The native core's queued log lines, logged now if the library is loaded (never loads it). */
    private static void drainNative() {
        try {
            java.lang.reflect.Field loaded = NativeLibrary.class.getDeclaredField("loaded");
            loaded.setAccessible(true);
            if (loaded.getBoolean(null)) {
                NativeLog.drain();
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            // No native library here: nothing is queued.
        }
    }

    private static boolean matches(LogRecord r, List<String> texts) {
        String text = message(r);
        return texts.stream().anyMatch(text::contains);
    }

    private static String message(LogRecord r) {
        String text = r.getMessage();
        Object[] params = r.getParameters();
        if (params != null && params.length > 0) {
            text = java.text.MessageFormat.format(text, params);
        }
        return text;
    }
}
