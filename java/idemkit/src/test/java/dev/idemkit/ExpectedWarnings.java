package dev.idemkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The warnings a test provokes on purpose, each named by a text it contains: {@link QuietLogs}
 * keeps them out of the run's output. On a test method, the test fails unless it logged (on the
 * {@code dev.idemkit} loggers) a warning containing each text; on a class, its tests may log them
 * (a warning only some runs provoke, such as a table's first creation). A warning no annotation
 * names is printed, under the test's name.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
public @interface ExpectedWarnings {
    /** A text each expected warning contains (one warning may match several). */
    String[] value();
}
