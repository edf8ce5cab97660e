package ptfence.fence;

import ptfence.bpf.Kallsyms;
import ptfence.recording.Recordings;
import ptfence.region.KernelMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A boot's core kernel text ([_stext, _etext)) and its kallsyms, in the archive once per boot: the first recording of
 * a boot copies them (the BPF read program or /proc/kcore: ~19 MB, 1–5 s here), every later one links the regions it
 * finds, so a decode — here or on another machine, from a bundle — reads the kernel code and names it as it was,
 * never the decoding machine's. Text pokes during a recording are versions of their own ({@link RegionTracker}).
 */
public final class KernelText {
    /** The region's name: perf's name for the kernel map. */
    public static final String NAME = TextFence.CORE_TEXT_NAME;
    public static final Path OSRELEASE = Path.of("/proc/sys/kernel/osrelease");

    /** What happened: the bytes copied now (0 when the boot's copy was already there) and the regions linked. */
    public record Result(long bytesCopied, List<Region> regions, String backend) {
        public int regionsLinked() {
            return regions.size();
        }

        public String summary() {
            return bytesCopied > 0 ? "kernel text: " + bytesCopied + " bytes and kallsyms archived for this boot ("
                    + backend + ")" : "kernel text: this boot's, archived before (" + regionsLinked() + " region)";
        }
    }

    private KernelText() {}

    /**
     * Links this boot's archived kernel text to {@code recordingId}, copying it with {@code memory} first when the
     * archive does not have it yet.
     */
    public static Result archive(Archive archive, String bootId, String recordingId, KernelMemory memory)
            throws IOException {
        return archive(archive, bootId, recordingId, memory, RunningKernel.current());
    }

    /** As above, on the recording's one reading of kallsyms (for the core text's bounds). */
    public static Result archive(Archive archive, String bootId, String recordingId, KernelMemory memory,
            RunningKernel kernel) throws IOException {
        List<Region> known = archive.read(s -> RegionIndex.byName(s, NAME).stream()
                .filter(r -> r.bootId().equals(bootId) && r.kind() == RegionKind.KERNEL_TEXT).toList());
        if (!known.isEmpty()) {
            archive.write(b -> {
                for (Region r : known) {
                    Recordings.link(b, recordingId, RegionIndex.add(b, r));
                }
                return null;
            });
            return new Result(0, known, memory.backend());
        }
        byte[] kallsyms = Files.readAllBytes(Kallsyms.PROC);
        Kallsyms k = kernel.kallsyms();
        long start = k.require("_stext"), end = k.require("_etext");
        byte[] text = memory.read(start, Math.toIntExact(end - start));
        String release = Files.isReadable(OSRELEASE) ? Files.readString(OSRELEASE).trim() : "";
        Region region = new Region(bootId, start, text.length, 0, Region.OPEN, RegionKind.KERNEL_TEXT, NAME,
                ContentKey.of(text), new KernelMetadata(release, kallsyms, null));
        archive.write(b -> {
            b.put(text);
            Recordings.link(b, recordingId, RegionIndex.add(b, region));
            return null;
        });
        return new Result(text.length, List.of(region), memory.backend());
    }
}
