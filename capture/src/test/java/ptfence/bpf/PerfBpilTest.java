package ptfence.bpf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.perfdata.AttrIds;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.Feature;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfDataWriter;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Metadata in perf's own BPF_PROG_INFO layout: our perf.data reader and real perf both read it back. */
class PerfBpilTest {
    @TempDir
    Path dir;

    static EventAttr dummyAttr() {
        ByteBuffer b = ByteBuffer.allocate(EventAttr.SIZE_PERF61).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, 1).putInt(4, EventAttr.SIZE_PERF61).putLong(8, 9);    // PERF_TYPE_SOFTWARE, COUNT_SW_DUMMY
        b.putLong(40, EventAttr.FLAG_SAMPLE_ID_ALL | EventAttr.FLAG_KSYMBOL | EventAttr.FLAG_BPF_EVENT);
        return new EventAttr(b);
    }

    @Test
    void perfListsEveryFunctionAtItsAddressAndSize() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to load BPF programs");
        ProgramMetadata m;
        try (BpfFd fd = Bpf.get().progLoad(TestPrograms.withSubprograms("bpil", 2, 5))) {
            m = ProgramMetadata.fetch(fd);
        }
        Path file = dir.resolve("bpil.data");
        try (PerfDataWriter w = PerfDataWriter.create(file, List.of(new AttrIds(dummyAttr(), List.of(1L))))) {
            w.setFeature(new Feature.BpfProgInfos(List.of(m.toPerfBpil())));
        }
        ProgInfo info = m.info();
        try (PerfDataFile f = PerfDataFile.open(file)) {
            Feature.BpfProgInfo back = f.features().bpfProgInfo().get(0);
            assertEquals(info.id(), back.progId());
            assertEquals("bpil", back.name());
            byte[] jited = new byte[back.jitedInsns().remaining()];
            back.jitedInsns().get(jited);
            assertArrayEquals(info.jitedInsns(), jited);
            assertArrayEquals(info.jitedKsyms(), back.jitedKsyms());
            assertArrayEquals(info.jitedFuncLens(), back.jitedFuncLens());
        }
        String out = perfHeader(file);
        assumeTrue(out != null, "perf is not installed");
        assertTrue(out.contains("bpf_prog_info " + info.id()), out);
        for (int i = 0; i < info.functionCount(); i++) {
            String want = String.format("addr 0x%x size %d", info.jitedKsyms()[i], info.jitedFuncLens()[i]);
            assertTrue(out.contains(want), "perf does not list function " + i + " (" + want + "):\n" + out);
        }
    }

    static String perfHeader(Path file) throws InterruptedException {
        try {
            Process p = new ProcessBuilder("perf", "report", "--header-only", "-I", "-i", file.toString())
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            return out;
        } catch (IOException e) {
            return null;
        }
    }
}
