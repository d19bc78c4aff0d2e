package dev.idemkit;

import org.junit.jupiter.api.Assumptions;

/** The Redis/PostgreSQL servers of the store tests: skipped loudly when their URL is not set. */
final class Services {
    private Services() {}

    static String url(String variable, String what) {
        String url = System.getenv(variable);
        if (url == null || url.isEmpty()) {
            String message =
                    variable
                            + " is not set: SKIPPING the "
                            + what
                            + " tests (start the servers with"
                            + " scripts/services.sh start, then eval \"$(scripts/services.sh env)\")";
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
        return url;
    }
}
