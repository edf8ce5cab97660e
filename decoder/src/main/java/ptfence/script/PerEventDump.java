package ptfence.script;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * perf script's --per-event-dump: each event's sample lines to a file of its own, {@code INPUT.NAME.dump}, then a
 * line per event on stdout saying what was written. perf opens a file per event of its list with fopen("w") before
 * any line (the synthesized events' on their attr, before it names them), so events with one name share a file:
 * each stream truncated it, and each writes through its own 4096-byte stdio buffer at its own offset, whole buffers
 * as they fill and the rest as it closes them in list order; where they overlap the last write stands. Each stream
 * here keeps that buffer and offset, so the files come out as perf's do.
 */
public final class PerEventDump {
    /** glibc's buffer for a file stream: the file system's block size. */
    private static final int BUFFER = 4096;

    private static final class Stream {
        final String name;
        final FileChannel file;
        final byte[] buf = new byte[BUFFER];
        int used;
        long offset;
        long samples;

        Stream(String name, FileChannel file) {
            this.name = name;
            this.file = file;
        }
    }

    private final List<Stream> streams = new ArrayList<>();

    /** perf's name of the file for the event named {@code event} of the recording read from {@code input}. */
    public static String fileName(String input, String event) {
        return input + "." + event + ".dump";
    }

    /**
     * Opens (and truncates) each file in order, one stream per event.
     *
     * @param names the file of each event, in perf's order
     */
    public PerEventDump(List<String> names) throws IOException {
        try {
            for (String n : names) {
                streams.add(new Stream(n, FileChannel.open(Path.of(n), StandardOpenOption.WRITE,
                        StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING)));
            }
        } catch (IOException e) {
            close();
            throw e;
        }
    }

    /** A sample's line of event {@code stream} (1 up, in the order given). */
    void write(int stream, byte[] b, int len) {
        Stream s = streams.get(stream - 1);
        s.samples++;
        int off = 0;
        try {
            while (off < len) {
                if (s.used == BUFFER) {
                    flush(s); // stdio writes a full buffer when more comes
                }
                int n = Math.min(len - off, BUFFER - s.used);
                System.arraycopy(b, off, s.buf, s.used, n);
                s.used += n;
                off += n;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void flush(Stream s) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(s.buf, 0, s.used);
        while (bb.hasRemaining()) {
            s.offset += s.file.write(bb, s.offset);
        }
        s.used = 0;
    }

    /**
     * Closes the streams in order, each after perf's line on {@code out}: the file's size before the close (what full
     * buffers wrote) in MiB (three decimals, as C rounds them), its name and the samples written to it.
     */
    public void finish(OutputStream out) throws IOException {
        StringBuilder sb = new StringBuilder();
        try {
            for (Stream s : streams) {
                // perf's fstat comes before fclose: the size counts what the full buffers wrote so far
                double mb = s.file.size() / 1024.0 / 1024.0;
                sb.append("[ perf script: Wrote ")
                        .append(new java.math.BigDecimal(mb).setScale(3, java.math.RoundingMode.HALF_EVEN).toPlainString())
                        .append(" MB ").append(s.name).append(" (").append(s.samples).append(" samples) ]\n");
                flush(s);
                s.file.close();
            }
        } finally {
            close();
        }
        out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** Closes what is open (a failed run: the files stay as far as written). */
    public void close() {
        for (Stream s : streams) {
            try {
                s.file.close();
            } catch (IOException e) {
                // closing after a failure: nothing more to say
            }
        }
    }
}
