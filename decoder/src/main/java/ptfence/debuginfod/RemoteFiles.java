package ptfence.debuginfod;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import ptfence.image.Elf;

/**
 * ELF files of user processes fetched by build id (what an MMAP2 or the BUILD_ID header names), as gdb and perf fetch
 * them: from the client cache, else from the servers, kept in the client cache ({@link ClientCache}) where those
 * tools find them too. A file is taken only if its build id is the one asked for.
 */
public final class RemoteFiles {
    private final DebuginfodClient client;
    private final ClientCache cache;
    /**
     * Without DEBUGINFOD_MAXSIZE, the largest file taken: a user program's executable or library is read whole to
     * decode it, and a server sending more than this (or a Content-Length above it) is refused, not read on.
     */
    static final long FILE_LIMIT = 1L << 30;
    private final List<String> missing = new ArrayList<>();
    private final java.util.Set<String> servers = new java.util.LinkedHashSet<>();
    private int fetched;
    private long bytes;

    public RemoteFiles(DebuginfodClient client) {
        this.client = client;
        this.cache = new ClientCache(client.settings().cache());
    }

    /** The file with this build id, or null (then {@link #missing()} says why). {@code name} is for messages. */
    public synchronized Path find(String name, byte[] buildId) {
        String hex = HexFormat.of().formatHex(buildId);
        ClientCache.Lookup l = cache.lookup(hex, "executable");
        if (l instanceof ClientCache.Lookup.Hit h) {
            Elf e = Elf.read(h.file());
            if (e != null && Arrays.equals(e.buildId(), buildId)) {
                return h.file();
            }
        } else if (l instanceof ClientCache.Lookup.RecentMiss m) {
            missing.add(name + " (build id " + hex + ") not found: the client cache " + cache.root()
                    + " holds a miss for it (asked again in " + m.secondsLeft() + " s)");
            return null;
        }
        cache.cleanIfDue();
        DebuginfodClient.Answer a = client.fetch(hex, "executable", FILE_LIMIT, b -> {
            Elf e = Elf.of(Path.of(name), b);
            if (e == null) {
                return "not a 64-bit little-endian ELF file";
            }
            return Arrays.equals(e.buildId(), buildId) ? null
                    : "its build id is " + HexFormat.of().formatHex(e.buildId());
        });
        if (a instanceof DebuginfodClient.Answer.Found f) {
            try {
                Path p = cache.store(hex, "executable", f.bytes(), null);
                fetched++;
                bytes += f.bytes().length;
                servers.add(f.server());
                return p;
            } catch (IOException e) {
                missing.add(name + " (build id " + hex + ") fetched from " + f.server() + " but not kept in "
                        + cache.root() + ": " + e.getMessage());
                return null;
            }
        }
        DebuginfodClient.Answer.NotFound nf = (DebuginfodClient.Answer.NotFound) a;
        if (nf.allSaidNotFound()) {
            cache.storeMiss(hex, "executable");
        }
        missing.add(name + " (build id " + hex + ") not found: " + String.join("; ", nf.servers()));
        return null;
    }

    /** Files fetched from servers (not found in the cache). */
    public synchronized int fetched() {
        return fetched;
    }

    public synchronized long bytes() {
        return bytes;
    }

    /** The servers files were fetched from, as DEBUGINFOD_URLS names them. */
    public synchronized List<String> servers() {
        return List.copyOf(servers);
    }

    /** One line per file no server had. */
    public synchronized List<String> missing() {
        return List.copyOf(missing);
    }
}
