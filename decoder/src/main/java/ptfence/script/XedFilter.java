package ptfence.script;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * perf script's {@code --xed}: perf pipes its lines through {@code xed -F insn: -A -64}, which replaces the
 * {@code insn:} bytes of each line by the instruction in AT&amp;T syntax. This stream does the same to the lines that go
 * through it, with the project's disassembler (capstone) in place of XED: the line up to {@code insn:}, two tabs, the
 * instruction, then what followed the bytes. As XED's filter, it takes the line's first hex number of 8 or more digits
 * followed by a blank as the instruction's address (branch targets are printed from it) and decodes 64-bit code.
 * The instruction is written in XED's spelling ({@link XedText}), which differs from capstone's own AT&amp;T text.
 */
public final class XedFilter extends OutputStream {
    private static final byte[] PREFIX = "insn:".getBytes(StandardCharsets.US_ASCII);

    private final OutputStream out;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
    private final XedText xed = new XedText();

    public XedFilter(OutputStream out) {
        this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
        line.write(b);
        if (b == '\n') {
            line();
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        int end = off + len;
        int from = off;
        for (int i = off; i < end; i++) {
            if (b[i] == '\n') {
                line.write(b, from, i + 1 - from);
                line();
                from = i + 1;
            }
        }
        line.write(b, from, end - from);
    }

    private void line() throws IOException {
        byte[] l = line.toByteArray();
        line.reset();
        int at = indexOf(l, PREFIX);
        if (at < 0) {
            out.write(l);
            return;
        }
        byte[] code = new byte[32];
        int n = 0;
        int p = at + PREFIX.length;
        int end = p;
        while (n < code.length) {
            int q = p;
            while (q < l.length && (l[q] == ' ' || l[q] == '\t')) {
                q++;
            }
            int digits = 0;
            int v = 0;
            while (q + digits < l.length && Character.digit(l[q + digits], 16) >= 0) {
                v = v * 16 + Character.digit(l[q + digits], 16);
                digits++;
            }
            if (digits == 0) {
                break;
            }
            code[n++] = (byte) v;
            p = q + digits;
            end = p;
        }
        // XED decodes its 32-byte buffer (the bytes, then zeros) at the line's address; an address of more than 16
        // digits is strtoul's ULONG_MAX, for which it prints no instruction
        long ip = ip(l, at);
        String text = ip == -1 ? "" : xed.text(code, code.length, ip);
        out.write(l, 0, at);
        out.write('\t');
        out.write('\t');
        out.write((text == null ? "GENERAL_ERROR" : text).getBytes(StandardCharsets.UTF_8));
        out.write(l, end, l.length - end);
    }

    /** XED's filter: the first hex number of at least 8 digits that a blank follows, before the prefix. */
    private static long ip(byte[] l, int before) {
        for (int i = 0; i < before; i++) {
            int d = 0;
            while (i + d < l.length && Character.digit(l[i + d], 16) >= 0) {
                d++;
            }
            if (d >= 8 && i + d < l.length && Character.isWhitespace(l[i + d])) {
                return d > 16 ? -1 : Long.parseUnsignedLong(new String(l, i, d, StandardCharsets.US_ASCII), 16);
            }
            i += d;
        }
        return 0;
    }

    private static int indexOf(byte[] l, byte[] p) {
        outer:
        for (int i = 0; i + p.length <= l.length; i++) {
            for (int k = 0; k < p.length; k++) {
                if (l[i + k] != p[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Override
    public void flush() throws IOException {
        out.flush();
    }

    @Override
    public void close() throws IOException {
        if (line.size() > 0) {
            line();
        }
        out.flush();
    }
}
