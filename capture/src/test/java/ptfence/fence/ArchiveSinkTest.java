package ptfence.fence;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.ProgInfo;
import ptfence.bpf.TestPrograms;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.ImageAt;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The fence into the archive, live: every churned program becomes a closed region of the recording. */
class ArchiveSinkTest {
    @TempDir
    Path dir;

    @Test
    void churnedProgramsAreClosedRegionsWithTheirExactBytes() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        int n = 300;
        String boot = RegionTracker.currentBootId();
        Map<String, ProgInfo> infos = new HashMap<>();
        try (Archive archive = Archive.open(dir.resolve("archive"))) {
            archive.write(b -> {
                Recordings.register(b, Recording.started("rec1", "", boot, 0));
                return null;
            });
            FenceCounters c;
            try (ArchiveSink sink = new ArchiveSink(archive, "rec1");
                 TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false),
                         new RegionTracker(boot, sink))) {
                for (int i = 0; i < n; i++) {
                    try (BpfFd fd = Bpf.get().progLoad(TestPrograms.constant("arc" + i, i))) {
                        infos.put("arc" + i, ProgInfo.fetch(fd));
                    }
                }
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(60));
                c = fence.counters();
            }
            assertEquals(0, c.losses(), c.summary());
            List<Region> regions = archive.read(s -> Recordings.regions(s, "rec1")).stream()
                    .filter(r -> r.name().contains("_arc")).toList();
            assertEquals(n, regions.size());
            for (Region r : regions) {
                ProgInfo info = infos.get(r.name().substring(r.name().lastIndexOf('_') + 1));
                assertEquals(info.jitedKsyms()[0], r.address());
                assertEquals(RegionKind.BPF_PROG, r.kind());
                assertEquals(info.tagHex(), r.tag());
                assertFalse(r.isOpen(), "closed at FREE: " + r);
                long mid = r.validFrom() + (r.validTo() - r.validFrom()) / 2;
                ImageAt at = archive.read(s -> RegionIndex.bytesAt(s, boot, r.address() + 3, mid)).orElseThrow();
                assertEquals(r.id(), at.region().id());
                assertArrayEquals(info.jitedInsns(), at.bytes());
                assertTrue(archive.read(s -> RegionIndex.at(s, boot, r.address(), r.validTo())).map(x -> x.id() != r.id())
                        .orElse(true), "not valid after its free");
            }
        }
    }

    @Test
    void metadataFetchedOnTheRecordersRequestReachesTheRegion() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        String boot = RegionTracker.currentBootId();
        Bpf.ProgLoad p = TestPrograms.withSubprograms("meta", 2, 3);
        try (Archive archive = Archive.open(dir.resolve("archive"))) {
            archive.write(b -> {
                Recordings.register(b, Recording.started("rec2", "", boot, 0));
                return null;
            });
            ProgInfo info;
            try (ArchiveSink sink = new ArchiveSink(archive, "rec2", Duration.ofSeconds(5), 1 << 20);
                 TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false),
                         new RegionTracker(boot, sink))) {
                try (BpfFd fd = Bpf.get().progLoad(p)) {
                    info = ProgInfo.fetch(fd);
                    assertTrue(fence.onProgramLoaded(info.id()).isPresent()); // what ptrec does on BPF_EVENT
                }
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(60));
                assertEquals(0, sink.metadataTooLate());
            }
            List<Region> regions = archive.read(s -> Recordings.regions(s, "rec2")).stream()
                    .filter(r -> r.address() == info.jitedKsyms()[0] || r.address() == info.jitedKsyms()[2]).toList();
            assertEquals(2, regions.size());
            for (Region r : regions) {
                var meta = (ptfence.region.BpfMetadata) r.metadata();
                assertEquals(info.id(), meta.progId());
                assertArrayEquals(info.jitedKsyms(), meta.jitedKsyms());
                assertArrayEquals(info.xlatedInsns(), meta.xlatedInsns());
                assertFalse(r.isOpen());
            }
        }
    }

    /**
     * Issue 21: bcc loads programs without BTF and writes their C source to /var/tmp/bcc/bpf_prog_TAG/ just after
     * the load returns. A program without line info gets those files in its archived metadata, even when they appear
     * after its region was committed (looked up again at its FREE); a program with line info gets none.
     */
    @Test
    void aProgramWithoutLineInfoKeepsTheSourceBccStoredForItsTag() throws Exception {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
        String boot = RegionTracker.currentBootId();
        Path bcc = dir.resolve("bcc");
        byte[] source = "int kprobe__bcc_src(void *ctx) { return 42; }\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ProgInfo plain, lined;
        try (Archive archive = Archive.open(dir.resolve("archive"))) {
            archive.write(b -> {
                Recordings.register(b, Recording.started("rec3", "", boot, 0));
                return null;
            });
            try (ArchiveSink sink = new ArchiveSink(archive, "rec3", Duration.ofMillis(1), 1 << 20);
                 TextFence fence = TextFence.start(TextFence.Config.defaults().withStartupScan(false),
                         new RegionTracker(boot, sink, java.util.function.LongUnaryOperator.identity(),
                                 new ptfence.bpf.BccProgramStore(bcc)))) {
                var code = new ptfence.bpf.BpfAssembler().mov(ptfence.bpf.BpfAssembler.Reg.R0, 42);
                var lines = TestPrograms.lines(code.exit(), "bcc_lined");
                try (BpfFd fd = Bpf.get().progLoad(TestPrograms.constant("bcc_src", 4242));
                     BpfFd btf = Bpf.get().btfLoad(lines.btf());
                     BpfFd withLines = TestPrograms.loadWithLines("bcc_lined", code, btf, lines.info())) {
                    plain = ProgInfo.fetch(fd);
                    lined = ProgInfo.fetch(withLines);
                    fence.awaitQuiet(Duration.ofMillis(300), Duration.ofSeconds(60)); // LOAD regions committed
                    for (ProgInfo i : List.of(plain, lined)) { // as bcc does, after the load
                        Path d = bcc.resolve(ptfence.bpf.BccProgramStore.directoryName(i.tagHex()));
                        java.nio.file.Files.createDirectories(d);
                        java.nio.file.Files.write(d.resolve(i.name() + ".c"), source);
                    }
                }
                fence.awaitQuiet(Duration.ofSeconds(2), Duration.ofSeconds(60));
                assertEquals(0, sink.metadataTooLate());
            }
            List<Region> regions = archive.read(s -> Recordings.regions(s, "rec3"));
            Region p = regions.stream().filter(r -> r.address() == plain.jitedKsyms()[0]
                    && r.name().endsWith("_bcc_src")).findFirst().orElseThrow();
            var meta = (ptfence.region.BpfMetadata) p.metadata();
            assertEquals(List.of(new ptfence.region.BpfMetadata.SourceFile("bcc_src.c", source)), meta.sources());
            assertFalse(p.isOpen());
            Region l = regions.stream().filter(r -> r.address() == lined.jitedKsyms()[0]
                    && r.name().endsWith("_bcc_lined")).findFirst().orElseThrow();
            var lmeta = (ptfence.region.BpfMetadata) l.metadata();
            assertTrue(lmeta.lineInfo().length > 0);
            assertEquals(List.of(), lmeta.sources(), "line info is the source: bcc's files are not needed");
        }
    }
}
