package dev.idemkit;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/**
 * The shortest decimal that reads back as the same {@code double} (or {@code float}): what
 * ECMAScript's Number-to-String picks, which SPEC §2 requires for native numbers. JDK 17's {@code
 * Double.toString} is not shortest ({@code 1e23} prints as {@code 9.999999999999999E22}).
 *
 * <p>For each precision from 1 digit up, the two decimals of that precision around the exact binary
 * value are candidates; the first precision at which a candidate reads back wins, and if both do,
 * the one nearer the exact value (ties: the even last digit). A simple search over {@link
 * BigDecimal}, used only for numbers handed over as Java floating-point values.
 */
final class ShortestDecimal {
    private static final MathContext[] FLOOR = new MathContext[18];
    private static final MathContext[] CEILING = new MathContext[18];

    static {
        for (int p = 1; p < 18; p++) {
            FLOOR[p] = new MathContext(p, RoundingMode.FLOOR);
            CEILING[p] = new MathContext(p, RoundingMode.CEILING);
        }
    }

    private ShortestDecimal() {}

    /** JSON number text for a finite double. */
    static String of(double d) {
        if (d == 0) {
            return "0";
        }
        if (d == Math.rint(d) && Math.abs(d) < 0x1p53) {
            return Long.toString((long) d);
        }
        BigDecimal exact = new BigDecimal(d);
        for (int p = 1; p <= 17; p++) {
            BigDecimal low = exact.round(FLOOR[p]);
            BigDecimal high = exact.round(CEILING[p]);
            boolean lowOk = low.doubleValue() == d;
            boolean highOk = high.doubleValue() == d;
            BigDecimal pick = choose(exact, low, lowOk, high, highOk);
            if (pick != null) {
                return pick.stripTrailingZeros().toString();
            }
        }
        return exact.toString(); // not reached: 17 digits always round-trip
    }

    /** JSON number text for a finite float: the shortest decimal that reads back as this float. */
    static String of(float f) {
        if (f == 0) {
            return "0";
        }
        if (f == Math.rint(f) && Math.abs(f) < 0x1p24f) {
            return Long.toString((long) f);
        }
        BigDecimal exact = new BigDecimal((double) f);
        for (int p = 1; p <= 9; p++) {
            BigDecimal low = exact.round(FLOOR[p]);
            BigDecimal high = exact.round(CEILING[p]);
            boolean lowOk = low.floatValue() == f;
            boolean highOk = high.floatValue() == f;
            BigDecimal pick = choose(exact, low, lowOk, high, highOk);
            if (pick != null) {
                return pick.stripTrailingZeros().toString();
            }
        }
        return exact.toString();
    }

    private static BigDecimal choose(
            BigDecimal exact, BigDecimal low, boolean lowOk, BigDecimal high, boolean highOk) {
        if (lowOk && highOk) {
            int cmp = exact.subtract(low).compareTo(high.subtract(exact));
            if (cmp != 0) {
                return cmp < 0 ? low : high;
            }
            return low.unscaledValue().testBit(0) ? high : low;
        }
        return lowOk ? low : highOk ? high : null;
    }
}
