package dev.idemkit;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Writes the native core's log lines to {@code System.Logger}. The core (Rust's {@code log} facade)
 * queues its warnings, errors and own info lines in native memory, on whatever thread it logs from;
 * this drains them on a Java thread, after a native call has returned: when a store opens, after
 * each native step of a call, after the store operations and on {@link
 * NativeIdempotencyStore#close()}. No Java code runs inside a native frame.
 *
 * <p>Each line goes to the logger {@value #LOGGER} or, for a line from a module of the core, to one
 * below it named after the module ({@code idemkit::store::postgres} logs to {@code
 * dev.idemkit.native.store.postgres}), at the mapped level: {@code ERROR} to {@code ERROR}, {@code
 * WARN} to {@code WARNING}, {@code INFO} to {@code INFO}. The queue holds at most 256 lines; lines
 * dropped because it was full are counted in a warning of their own.
 */
final class NativeLog {
    /** The logger of the native core's lines (and the parent of its per-module loggers). */
    static final String LOGGER = "dev.idemkit.native";

    private static final ConcurrentHashMap<String, System.Logger> LOGGERS =
            new ConcurrentHashMap<>();

    static {
        NativeLibrary.load();
    }

    private NativeLog() {}

    /** Logs the lines waiting in the native core, oldest first, on this thread. */
    static void drain() {
        String[] fields = NativeBridge.logDrain();
        if (fields == null) {
            return;
        }
        for (int i = 0; i + 2 < fields.length; i += 3) {
            String level = fields[i];
            if ("DROPPED".equals(level)) {
                log(
                        LOGGER,
                        System.Logger.Level.WARNING,
                        "idemkit: "
                                + fields[i + 2]
                                + " lines of the native core's log were dropped: more than 256"
                                + " waited between two native calls");
                continue;
            }
            log(loggerName(fields[i + 1]), level(level), fields[i + 2]);
        }
    }

    private static void log(String name, System.Logger.Level level, String message) {
        System.Logger logger = LOGGERS.computeIfAbsent(name, System::getLogger);
        try {
            logger.log(level, message);
        } catch (RuntimeException ignored) {
            // A logger that throws must not fail the idempotent call that drained the line; there
            // is nowhere left to report it.
        }
    }

    private static System.Logger.Level level(String level) {
        switch (level) {
            case "ERROR":
                return System.Logger.Level.ERROR;
            case "WARN":
                return System.Logger.Level.WARNING;
            case "INFO":
                return System.Logger.Level.INFO;
            default:
                return System.Logger.Level.DEBUG;
        }
    }

    /**
     * The logger of a Rust target: {@value #LOGGER}, then the target's path past the crate {@code
     * idemkit} with dots ({@code idemkit::store::postgres} is {@code
     * dev.idemkit.native.store.postgres}; a driver's {@code tokio_postgres::connection} is {@code
     * dev.idemkit.native.tokio_postgres.connection}).
     */
    static String loggerName(String target) {
        if (target == null || target.isEmpty() || target.equals("idemkit")) {
            return LOGGER;
        }
        String path = target.startsWith("idemkit::") ? target.substring(9) : target;
        return LOGGER + "." + path.replace("::", ".");
    }
}
