package ptfence.script;

import java.nio.ByteBuffer;

/**
 * perf script's {@code bpf-output} field: the payload as perf's binary__fprintf prints it, 8 bytes a line
 * ("BPF output: 0000: 62 70 ...  bpto..."), and after it a "BPF string:" line when the payload is one printable C
 * string followed by NULs only. Bytes perf counts printable go out raw (Latin-1), as perf writes them.
 */
public final class BpfOutputDump {
    private static final int PER_LINE = 8;

    private BpfOutputDump() {
    }

    /**
     * perf's isprint: tools/include's ctype table, Latin-1, where 0xa0-0xff print too (as the raw byte, which the
     * lines then carry as they are).
     */
    static boolean printable(int c) {
        return c >= 0x20 && c <= 0x7e || c >= 0xa0;
    }

    /** Appends the lines (each ending in a newline), starting with the newline perf puts before the first. */
    public static void append(LineBytes b, ByteBuffer payload) {
        int n = payload.remaining();
        int base = payload.position();
        boolean hitNul = false, printable = true;
        b.nl();
        for (int line = 0; line * PER_LINE < n; line++) {
            int from = line * PER_LINE, to = Math.min(n, from + PER_LINE);
            b.right(line == 0 ? "BPF output:" : "", 17).ch(' ').hexZero(from, 4).ch(':');
            for (int i = from; i < to; i++) {
                b.ch(' ').hexZero(payload.get(base + i) & 0xff, 2);
            }
            b.spaces(3 * (from + PER_LINE - to)).spaces(2);
            for (int i = from; i < to; i++) {
                int c = payload.get(base + i) & 0xff;
                if (hitNul && c != 0) {
                    printable = false;
                }
                if (!printable(c)) {
                    b.ch('.');
                    if (printable) {
                        if (c == 0) {
                            hitNul = true;
                        } else {
                            printable = false;
                        }
                    }
                } else {
                    b.ch((char) c);
                }
            }
            b.spaces(from + PER_LINE - to).nl();
        }
        if (printable && hitNul) {
            int end = base;
            while (payload.get(end) != 0) {
                end++;
            }
            byte[] s = new byte[end - base];
            payload.get(base, s);
            b.right("BPF string:", 17).str(" \"").bytes(s).str("\"").nl();
        }
    }
}
