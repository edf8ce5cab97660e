package ptfence.fence;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.PerfDataWriter;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleId;
import ptfence.perfdata.SampleType;
import ptfence.store.Archive;

/**
 * The guest check's verdicts on kcore copies, against an archive written through the tracker and a perf.data with
 * the kernel's KSYMBOL records: equal while the region is live, "read after its unregister" only where perf.data has
 * an unregister at that address before the read (and no new symbol there since), "not archived" otherwise.
 */
class GuestFenceCheckTest {
    static final long A = 0xffffffffc0002000L, B = 0xffffffffc0004000L;

    @Test
    void aCopyReadAfterItsSymbolsUnregisterIsToldApart(@TempDir Path dir) throws Exception {
        String boot = "boot-guestcheck";
        byte[] image = new byte[256];
        Arrays.fill(image, (byte) 0x90);
        try (Archive archive = TrampolineCopiesTest.recordingArchive(dir.resolve("archive"), boot)) {
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image, 0, 0, "bpf_trampoline_1", 10, 0, 1, 0, 0, true));
                t.ksymbolUnregistered(A, "bpf_trampoline_1", 100);
                sink.flush();
            }
        }
        Path kcore = Files.createDirectories(dir.resolve("kcore"));
        Files.write(kcore.resolve("bpf_trampoline_1.0"), image);
        Files.write(kcore.resolve("bpf_trampoline_1.1"), image);
        Files.write(kcore.resolve("bpf_trampoline_2.0"), image);
        Files.write(kcore.resolve("bpf_trampoline_3.0"), image);
        Files.write(kcore.resolve("index"), List.of(
                String.format("%x %d %d %d %s", A, image.length, 50, 60, "bpf_trampoline_1.0"),   // live: equal
                String.format("%x %d %d %d %s", A, image.length, 118, 120, "bpf_trampoline_1.1"), // after unregister
                String.format("%x %d %d %d %s", B, image.length, 118, 120, "bpf_trampoline_2.0"), // no unregister there
                String.format("%x %d %d %d %s", A, image.length, 210, 220, "bpf_trampoline_3.0"))); // a new symbol
        Path perfData = dir.resolve("perf.data");
        EventAttr attr = EventAttr.builder().type(1).config(9).sampleType(SampleType.TIME)
                .flags(EventAttr.FLAG_SAMPLE_ID_ALL | EventAttr.FLAG_KSYMBOL).build();
        try (PerfDataWriter w = PerfDataWriter.create(perfData, List.of(new AttrIds(attr, List.of(1L))))) {
            w.write(ksymbol(A, "bpf_trampoline_1", false, 5));
            w.write(ksymbol(A, "bpf_trampoline_1", true, 100));
            w.write(ksymbol(A, "bpf_trampoline_3", false, 200)); // a new image at the address, never archived
            w.write(ksymbol(B, "bpf_trampoline_2", false, 110));
        }
        GuestFenceCheck.Result r = GuestFenceCheck.check(dir.resolve("archive"), List.of(kcore), perfData);
        assertEquals(1, r.equal(), r.summary());
        assertEquals(1, r.afterUnregister().size(), r.summary());
        assertTrue(r.afterUnregister().get(0).startsWith("bpf_trampoline_1.1"), r.afterUnregister().toString());
        assertEquals(2, r.missing().size(), r.summary());
        assertTrue(r.missing().stream().anyMatch(m -> m.startsWith("bpf_trampoline_2.0")), r.missing().toString());
        assertTrue(r.missing().stream().anyMatch(m -> m.startsWith("bpf_trampoline_3.0")), r.missing().toString());
        GuestFenceCheck.Result without = GuestFenceCheck.check(dir.resolve("archive"), List.of(kcore));
        assertEquals(3, without.missing().size(), "without the kernel's records: not archived " + without.summary());
    }

    /**
     * A copy caught between text_poke_bp's INT3 and its last byte (0xcc over a call the kernel re-pokes): told apart
     * only where every differing byte is an INT3 at the first byte of a TEXT_POKE recorded near the read whose old or
     * new byte the archive holds; the same INT3 far from any record, at a byte no poke starts at, or a byte other
     * than an INT3 there, differs.
     */
    @Test
    void aCopyCaughtMidPokeIsToldApartOnlyAtARecordedPokesFirstByte(@TempDir Path dir) throws Exception {
        String boot = "boot-midpoke";
        long s = 1_000_000_000L; // the records' clock: ns
        byte[] image = new byte[229];
        Arrays.fill(image, (byte) 0x90);
        byte[] call = {(byte) 0xe8, (byte) 0xf7, 0x59, (byte) 0xd5, (byte) 0xc0};
        System.arraycopy(call, 0, image, 0x94, 5);
        try (Archive archive = TrampolineCopiesTest.recordingArchive(dir.resolve("archive"), boot)) {
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1")) {
                RegionTracker t = new RegionTracker(boot, sink);
                t.accept(new CapturedText(Hook.KERNEL_READ, A, image, 0, 0, "ftrace_trampoline", 10 * s, 0, 1, 0, 0,
                        true));
                sink.flush();
            }
        }
        Path kcore = Files.createDirectories(dir.resolve("kcore"));
        byte[] midPoke = image.clone();
        midPoke[0x94] = (byte) 0xcc;
        byte[] otherByte = image.clone();
        otherByte[0x95] = (byte) 0xcc;
        byte[] notInt3 = image.clone();
        notInt3[0x94] = (byte) 0xe9;
        Files.write(kcore.resolve("ftrace_trampoline.0"), midPoke);
        Files.write(kcore.resolve("ftrace_trampoline.1"), midPoke);
        Files.write(kcore.resolve("ftrace_trampoline.2"), otherByte);
        Files.write(kcore.resolve("ftrace_trampoline.3"), notInt3);
        Files.write(kcore.resolve("ftrace_trampoline.4"), image);
        Files.write(kcore.resolve("index"), List.of(
                String.format("%x %d %d %d %s", A, image.length, 183 * s, 183 * s + 3_000_000, "ftrace_trampoline.0"),
                String.format("%x %d %d %d %s", A, image.length, 190 * s, 190 * s + 3_000_000, "ftrace_trampoline.1"),
                String.format("%x %d %d %d %s", A, image.length, 183 * s, 183 * s + 3_000_000, "ftrace_trampoline.2"),
                String.format("%x %d %d %d %s", A, image.length, 183 * s, 183 * s + 3_000_000, "ftrace_trampoline.3"),
                String.format("%x %d %d %d %s", A, image.length, 184 * s, 184 * s + 3_000_000, "ftrace_trampoline.4")));
        Path perfData = dir.resolve("perf.data");
        EventAttr attr = EventAttr.builder().type(1).config(9).sampleType(SampleType.TIME)
                .flags(EventAttr.FLAG_SAMPLE_ID_ALL | EventAttr.FLAG_TEXT_POKE).build();
        try (PerfDataWriter w = PerfDataWriter.create(perfData, List.of(new AttrIds(attr, List.of(1L))))) {
            // the same call re-poked (another ftrace user's register): the record comes 5 ms after the read began
            w.write(new PerfRecord.TextPoke(0, A + 0x94, java.nio.ByteBuffer.wrap(call), java.nio.ByteBuffer.wrap(call),
                    new SampleId(SampleType.TIME, 0, 0, 183 * s + 5_000_000, 0, 0, 0, 0, 0)));
        }
        GuestFenceCheck.Result r = GuestFenceCheck.check(dir.resolve("archive"), List.of(kcore), perfData);
        assertEquals(1, r.equal(), r.summary());
        assertEquals(List.of("ftrace_trampoline.0"), r.midPoke().stream().map(m -> m.split(" ")[0]).toList(),
                r.summary());
        assertEquals(List.of("ftrace_trampoline.1", "ftrace_trampoline.2", "ftrace_trampoline.3"),
                r.differ().stream().map(m -> m.split(" ")[0]).sorted().toList(), r.summary());
        GuestFenceCheck.Result without = GuestFenceCheck.check(dir.resolve("archive"), List.of(kcore));
        assertEquals(4, without.differ().size(), "without the kernel's records: " + without.summary());
    }

    private static PerfRecord.Ksymbol ksymbol(long addr, String name, boolean unregister, long time) {
        return new PerfRecord.Ksymbol(0, addr, 4096, PerfRecord.Ksymbol.TYPE_BPF,
                unregister ? PerfRecord.Ksymbol.FLAG_UNREGISTER : 0, name,
                new SampleId(SampleType.TIME, 0, 0, time, 0, 0, 0, 0, 0));
    }
}
