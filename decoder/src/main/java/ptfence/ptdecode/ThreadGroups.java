package ptfence.ptdecode;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * --per-thread: the merged lines regrouped by thread. Each thread's lines go, in the time order they arrive, to its
 * own temporary file (at most {@value #OPEN} open at once), so memory stays bounded however long the recording; at
 * the end the threads are written out by pid, then tid, each after a header line (text) naming it.
 */
final class ThreadGroups implements AutoCloseable {
    private static final int OPEN = 64;

    private record Key(int pid, int tid) implements Comparable<Key> {
        public int compareTo(Key o) {
            return pid != o.pid ? Integer.compare(pid, o.pid) : Integer.compare(tid, o.tid);
        }
    }

    private final Path dir;
    private final boolean header;
    private final Map<Key, Path> files = new TreeMap<>();
    private final Map<Key, String> comms = new TreeMap<>();
    private final LinkedHashMap<Key, Writer> open = new LinkedHashMap<>(16, 0.75f, true);

    ThreadGroups(boolean header) throws IOException {
        this.dir = Files.createTempDirectory("ptdecode-threads");
        this.header = header;
    }

    private Key last;
    private Writer lastWriter;
    private String lastComm;

    void add(int pid, int tid, String comm, String line) {
        try {
            // a thread's lines come in runs (it holds its CPU for a while): the run's writer and name stay at hand
            if (last != null && pid == last.pid() && tid == last.tid()) {
                if (comm != null && comm != lastComm) {
                    comms.put(last, comm);
                    lastComm = comm;
                }
                lastWriter.write(line);
                lastWriter.write('\n');
                return;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Key k = new Key(pid, tid);
        try {
            Writer w = open.get(k);
            if (w == null) {
                if (open.size() >= OPEN) {
                    var eldest = open.entrySet().iterator().next();
                    eldest.getValue().close();
                    open.remove(eldest.getKey());
                    if (eldest.getKey().equals(last)) {
                        last = null;
                    }
                }
                Path f = files.computeIfAbsent(k, x -> dir.resolve(x.pid() + "_" + x.tid()));
                w = new BufferedWriter(Files.newBufferedWriter(f, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND), 1 << 14);
                open.put(k, w);
            }
            if (comm != null) {
                comms.put(k, comm); // the thread's latest name heads its group
            }
            last = k;
            lastWriter = w;
            lastComm = comm;
            w.write(line);
            w.write('\n');
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes every thread's lines to {@code out}. */
    void finish(Appendable out) throws IOException {
        last = null;
        for (Writer w : open.values()) {
            w.close();
        }
        open.clear();
        char[] buf = new char[1 << 14];
        for (Map.Entry<Key, Path> e : files.entrySet()) {
            Key k = e.getKey();
            if (header) {
                String c = comms.get(k);
                out.append("# ").append(c == null ? ":" + k.tid() : c).append(' ')
                        .append(Integer.toString(k.pid())).append('/').append(Integer.toString(k.tid())).append('\n');
            }
            try (Reader r = Files.newBufferedReader(e.getValue(), StandardCharsets.UTF_8)) {
                for (int n; (n = r.read(buf)) > 0; ) {
                    out.append(java.nio.CharBuffer.wrap(buf, 0, n));
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        for (Writer w : open.values()) {
            w.close();
        }
        open.clear();
        for (Path f : files.values()) {
            Files.deleteIfExists(f);
        }
        Files.deleteIfExists(dir);
    }
}
