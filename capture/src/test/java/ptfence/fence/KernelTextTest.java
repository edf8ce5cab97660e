package ptfence.fence;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.Btf;
import ptfence.bpf.Kallsyms;
import ptfence.bundle.BundleReader;
import ptfence.bundle.BundleWriter;
import ptfence.recording.Recording;
import ptfence.recording.Recordings;
import ptfence.region.KernelMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.region.RegionKind;
import ptfence.store.Archive;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The boot's kernel text and kallsyms go into the archive once: the first recording copies them (live, through the
 * BPF read program here: no /proc/kcore), a second links the same region and copies nothing, and a bundle of either
 * recording carries both, whole, to an archive that never saw this machine.
 */
class KernelTextTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void live() {
        assumeTrue(LiveKernel.canLoadBpf(), LiveKernel.reason());
    }

    @Test
    void oncePerBootThenLinkedAndCarriedByBundles() throws Exception {
        String boot = RegionTracker.currentBootId();
        Path a = dir.resolve("archive");
        try (Archive archive = Archive.open(a);
             KernelMemory memory = KernelMemory.open(KernelLayout.from(Btf.vmlinux()))) {
            archive.write(b -> {
                Recordings.register(b, Recording.started("first", "", boot, 1));
                Recordings.register(b, Recording.started("second", "", boot, 2));
                return null;
            });
            long t0 = System.nanoTime();
            KernelText.Result first = KernelText.archive(archive, boot, "first", memory);
            long t1 = System.nanoTime();
            KernelText.Result second = KernelText.archive(archive, boot, "second", memory);
            long t2 = System.nanoTime();
            System.out.printf("kernel text: first recording %s in %.2f s; second %s in %.3f s%n", first.summary(),
                    (t1 - t0) / 1e9, second.summary(), (t2 - t1) / 1e9);
            assertTrue(first.bytesCopied() > 1 << 20, first.summary());
            assertEquals(0, second.bytesCopied(), "the second recording of the boot copies nothing");
            assertEquals(1, second.regionsLinked());

            Kallsyms k = Kallsyms.read();
            long stext = k.require("_stext");
            List<Region> linked = archive.read(s -> Recordings.regions(s, "second"));
            assertEquals(archive.read(s -> Recordings.regions(s, "first")), linked, "one region, two recordings");
            Region r = archive.read(s -> RegionIndex.withContent(s, linked.get(0)));
            assertEquals(RegionKind.KERNEL_TEXT, r.kind());
            assertEquals(stext, r.address());
            assertEquals(k.require("_etext") - stext, r.length());
            byte[] bytes = archive.get(r.key()).orElseThrow();
            assertArrayEquals(memory.read(stext, 4096), Arrays.copyOf(bytes, 4096), "the text at _stext");
            KernelMetadata m = (KernelMetadata) r.metadata();
            assertEquals(Files.readString(KernelText.OSRELEASE).trim(), m.release());
            String kallsyms = new String(m.kallsyms(), StandardCharsets.UTF_8);
            assertTrue(kallsyms.contains(Long.toHexString(stext) + " T _stext"), "the boot's symbols");

            Path bundle = dir.resolve("second.ptfb");
            BundleWriter.export(archive, "second", bundle);
            try (Archive elsewhere = Archive.open(dir.resolve("elsewhere"))) {
                BundleReader.importInto(elsewhere, bundle, "");
                Region there = elsewhere.read(s -> RegionIndex.withContent(s,
                        Recordings.regions(s, "second").get(0)));
                assertEquals(r, there, "the region and its kallsyms");
                assertArrayEquals(bytes, elsewhere.get(there.key()).orElseThrow(), "the kernel text");
            }
        }
    }
}
