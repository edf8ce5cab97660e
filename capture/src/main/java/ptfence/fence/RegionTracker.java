package ptfence.fence;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Turns the fence's images into time-bounded regions: an image seen at LOAD (or by the startup scan, the user-space
 * fence, a kernel read) opens a region at once — so a crash keeps it — and the FREE image of the same function
 * (same address and name) closes it at the free time. JIT space is reused within seconds, so regions are keyed
 * by (address, time), never by address alone.
 */
public final class RegionTracker implements TextSink {
    public static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

    /** Where regions go: the archive, or a test's list. */
    public interface RegionWriter {
        /** A region whose bytes are known; validTo may still be OPEN. */
        void opened(TextRegion region) throws IOException;

        /** The same region (same bytes, address, validFrom) now with its end time. */
        void closed(TextRegion region) throws IOException;

        default void flush() throws IOException {}
    }

    private record Key(long address, String name) {}

    private final String bootId;
    private final RegionWriter writer;
    private final Map<Key, TextRegion> live = new HashMap<>();

    public RegionTracker(String bootId, RegionWriter writer) {
        this.bootId = bootId;
        this.writer = writer;
    }

    public static String currentBootId() throws IOException {
        return Files.readString(BOOT_ID).trim();
    }

    @Override
    public synchronized void accept(CapturedText t) throws IOException {
        if (t.bytes().length == 0 || !t.complete()) return;
        Key key = new Key(t.address(), t.name());
        switch (t.hook()) {
            case FREE, TRAMPOLINE_FREE -> {
                TextRegion open = live.remove(key);
                if (open != null && Arrays.equals(open.bytes(), t.bytes())) {
                    writer.closed(open.closedAt(t.monotonicNs()));
                } else {
                    // Never seen live (predates the fence, or loaded where LOAD cannot see), or its bytes changed
                    // after load (tail-call pokes): the bytes at free are a version valid up to the free.
                    if (open != null) writer.closed(open.closedAt(t.monotonicNs()));
                    TextRegion atFree = new TextRegion(bootId, t.address(), t.bytes(),
                            open != null ? open.validFromNs() : 0, t.monotonicNs(), kindOf(t), t.name(), t.progId(),
                            t.tag(), t.hook());
                    writer.opened(atFree);
                    writer.closed(atFree);
                }
            }
            default -> {
                TextRegion previous = live.get(key);
                if (previous != null && Arrays.equals(previous.bytes(), t.bytes())) return; // seen by two sources
                long from = t.hook() == Hook.SCAN ? 0 : t.monotonicNs();
                if (previous != null) writer.closed(previous.closedAt(t.monotonicNs())); // a new version replaces it
                TextRegion r = new TextRegion(bootId, t.address(), t.bytes(), from, TextRegion.OPEN, kindOf(t),
                        t.name(), t.progId(), t.tag(), t.hook());
                live.put(key, r);
                writer.opened(r);
            }
        }
    }

    /**
     * A PERF_RECORD_KSYMBOL with the UNREGISTER flag: ends the live region of that symbol — the unload time where
     * there is no FREE hook (user-space fence, out-of-line regions). False if none is live.
     */
    public synchronized boolean ksymbolUnregistered(long address, String name, long monotonicNs) throws IOException {
        TextRegion open = live.remove(new Key(address, name));
        if (open == null) return false;
        writer.closed(open.closedAt(monotonicNs));
        return true;
    }

    /**
     * A PERF_RECORD_TEXT_POKE: the live region holding {@code [address, address + newBytes.length)} ends at
     * {@code monotonicNs} and a new version with the poked bytes begins. False if no live region holds the range
     * (the recorder then copies the region anew).
     */
    public synchronized boolean textPoke(long address, byte[] newBytes, long monotonicNs) throws IOException {
        for (var e : live.entrySet()) {
            TextRegion r = e.getValue();
            long off = address - r.address();
            if (off < 0 || off + newBytes.length > r.bytes().length) continue;
            byte[] patched = r.bytes().clone();
            System.arraycopy(newBytes, 0, patched, (int) off, newBytes.length);
            writer.closed(r.closedAt(monotonicNs));
            TextRegion next = new TextRegion(bootId, r.address(), patched, monotonicNs, TextRegion.OPEN, r.kind(),
                    r.name(), r.progId(), r.tag(), r.firstSeenBy());
            e.setValue(next);
            writer.opened(next);
            return true;
        }
        return false;
    }

    /** Regions still open (live programs at the end of a recording stay open in the archive). */
    public synchronized int liveRegions() { return live.size(); }

    @Override
    public void flush() throws IOException {
        writer.flush();
    }

    private static String kindOf(CapturedText t) {
        if (t.name().startsWith("bpf_prog_") || t.progId() != 0) return "bpf_prog";
        if (t.hook() == Hook.TRAMPOLINE_FREE || t.name().startsWith("bpf_trampoline")) return "bpf_trampoline";
        if (t.name().startsWith("bpf_dispatcher")) return "bpf_dispatcher";
        if (t.hook() == Hook.KERNEL_READ) return "kernel_text";
        return "bpf_prog";
    }
}
