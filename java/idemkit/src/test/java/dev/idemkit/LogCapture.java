package dev.idemkit;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;

/** A {@code java.util.logging} handler that keeps every record it is given, for tests to read. */
final class LogCapture extends Handler {
    /** What was logged, in order. */
    final List<LogRecord> records = new CopyOnWriteArrayList<>();

    @Override
    public void publish(LogRecord record) {
        record.getSourceClassName(); // the caller is found now, while it is on the stack
        records.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
}
