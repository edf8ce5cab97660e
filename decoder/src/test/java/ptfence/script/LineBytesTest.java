package ptfence.script;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** LineBytes' printf formats against the JDK's Formatter (C's %lx and %lu of the same bits). */
class LineBytesTest {
    private static long value(Random r) {
        // every digit count: a random value shifted right by 0..63 bits, some exact powers, zero and -1
        return switch (r.nextInt(6)) {
            case 0 -> 0;
            case 1 -> -1;
            case 2 -> 1L << r.nextInt(64);
            default -> r.nextLong() >>> r.nextInt(64);
        };
    }

    @Test
    void hexAndDecimalFormatsAsPrintfDoes() {
        Random r = new Random(46);
        LineBytes b = new LineBytes(16);
        for (int k = 0; k < 200_000; k++) {
            long v = value(r);
            int width = r.nextInt(24);
            int blanks = r.nextInt(100) - 4;
            b.clear();
            b.ch('<').hex(v).ch('|').hex(v, 16).ch('|').hex(v, width).ch('|').hexZero(v, width).ch('|')
                    .dec(v).ch('|').dec(v, 10).ch('|').dec(v, width).ch('|').spaces(blanks).ch('>');
            String u = Long.toUnsignedString(v);
            String expected = "<" + Long.toHexString(v) + "|" + String.format("%16x", v) + "|"
                    + (width == 0 ? Long.toHexString(v) : String.format("%" + width + "x", v)) + "|"
                    + (width == 0 ? Long.toHexString(v) : String.format("%0" + width + "x", v)) + "|" + u + "|"
                    + String.format("%10s", u) + "|" + (width == 0 ? u : String.format("%" + width + "s", u)) + "|"
                    + " ".repeat(Math.max(0, blanks)) + ">";
            assertEquals(expected, b.toString(), "value " + Long.toHexString(v) + ", width " + width);
        }
    }
}
