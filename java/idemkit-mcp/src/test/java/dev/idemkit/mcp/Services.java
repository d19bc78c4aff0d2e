package dev.idemkit.mcp;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * The servers of the tests, and the one rule for a missing one: skipped (a JUnit assumption), or
 * failed when {@code IDEMKIT_REQUIRE_SERVICES} ({@code 1}, or names) guarantees it.
 */
final class Services {
    private Services() {}

    static String url(String variable, String what) {
        String url = System.getenv(variable);
        if (url == null || url.isEmpty()) {
            String message =
                    variable
                            + " is not set: SKIPPING the "
                            + what
                            + " tests (start the servers with scripts/services.sh start, then eval"
                            + " \"$(scripts/services.sh env)\")";
            if (required(variable)) {
                Assertions.fail(
                        message.replace("SKIPPING", "cannot run")
                                + "; IDEMKIT_REQUIRE_SERVICES guarantees it, so this fails");
            }
            System.err.println("idemkit: " + message);
            Assumptions.abort(message);
        }
        return url;
    }

    static boolean required(String what) {
        String list = System.getenv().getOrDefault("IDEMKIT_REQUIRE_SERVICES", "");
        for (String name : list.split("[ ,]+")) {
            if (name.equals("1") || name.equals(what)) {
                return true;
            }
        }
        return false;
    }
}
