package ptfence.ptrec;

import static org.junit.jupiter.api.Assertions.*;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.bpf.BpfAssembler;
import ptfence.bpf.ProgInfo;
import ptfence.cli.Tool;
import ptfence.perfdata.EventAttr;
import ptfence.ptarchive.PtarchiveCommand;
import ptfence.record.CpuList;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;
import ptfence.sys.PerfEvent;

/**
 * BPF programs run as perf event overflow handlers, live, as root: one attached to a cpu-clock event by
 * PERF_EVENT_IOC_SET_BPF, one by a BPF link of type perf_event; ptrec keeps each event with its program, and
 * ptarchive show prints what the test attached (event, period, CPU, how).
 */
class PerfAttachLiveTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirements() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "needs root: perf_event_open system-wide, BPF program loads and the fence");
    }

    private static BpfFd perfEventProgram(String name) throws Exception {
        byte[] insns = new BpfAssembler().mov(BpfAssembler.Reg.R0, 0).exit().assemble();
        return Bpf.get().progLoad(new Bpf.ProgLoad(Bpf.PROG_TYPE_PERF_EVENT, insns, "GPL", name, 0, 0));
    }

    private static PerfEvent cpuClock(long period, int cpu) {
        EventAttr a = EventAttr.builder().type(1).config(0).samplePeriod(period).sampleType(0x2 | 0x4).build();
        return PerfEvent.open(a, "cpu-clock", -1, cpu);
    }

    @Test
    void theEventEachProgramRunsOnIsKeptAndShown() throws Exception {
        Path data = dir.resolve("attach.data"), archive = dir.resolve("archive");
        int[] cpus = CpuList.online();
        int linkCpu = cpus[cpus.length - 1];
        String err;
        ProgInfo byIoctl, byLink;
        int linkId;
        try (BpfFd p1 = perfEventProgram("ptf_on_ioctl"); BpfFd p2 = perfEventProgram("ptf_on_link");
                PerfEvent e1 = cpuClock(100003, cpus[0]); PerfEvent e2 = cpuClock(200003, linkCpu)) {
            e1.setBpf(p1);
            try (BpfFd link = Bpf.get().linkCreate(p2, e2.fd(), Bpf.ATTACH_PERF_EVENT)) {
                byte[] info = new byte[16];
                Bpf.get().objGetInfo(link, info, List.of());
                linkId = java.nio.ByteBuffer.wrap(info).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(4);
                byIoctl = ProgInfo.fetch(p1);
                byLink = ProgInfo.fetch(p2);
                // until a short command ends: the attachments are there when the recording starts and ends, however
                // long a loaded machine takes to start ptrec
                PtrecLiveTest.Running ptrec = PtrecLiveTest.startPtrec(Map.of(), "--sideband-only", "-a", "-v", "-o",
                        data.toString(), "--archive", archive.toString(), "--", "sleep", "0.2");
                err = ptrec.waitForLog(300);
                assertEquals(0, ptrec.process().exitValue(), err);
            }
        }
        String ioctlLine = "runs on: cpu-clock, period 100003, cpu " + cpus[0] + " (ioctl)";
        String linkLine = "runs on: cpu-clock, period 200003, cpu " + linkCpu + " (link " + linkId + ")";
        String shown1 = show(archive, "bpf_prog_" + byIoctl.tagHex() + "_ptf_on_ioctl");
        String shown2 = show(archive, "bpf_prog_" + byLink.tagHex() + "_ptf_on_link");
        assertTrue(shown1.contains("bpf prog id " + byIoctl.id() + ",") && shown1.contains(ioctlLine),
                shown1 + "\nptrec said:\n" + err);
        assertTrue(shown2.contains("bpf prog id " + byLink.id() + ",") && shown2.contains(linkLine),
                shown2 + "\nptrec said:\n" + err);
        // ptrec's end-of-run summary names each attached program's event (without -v too: the summary's lines)
        for (String l : List.of("[ ptrec: BPF program " + byIoctl.id() + " " + ioctlLine.replace("runs on:", "runs on")
                + " ]", "[ ptrec: BPF program " + byLink.id() + " " + linkLine.replace("runs on:", "runs on") + " ]")) {
            assertTrue(err.lines().anyMatch(l::equals), l + " in ptrec's summary:\n" + err);
        }
        assertFalse(shown1.contains("(link"), "the ioctl program has no link: " + shown1);
        assertFalse(shown2.contains("(ioctl)"), "the link's event is not counted again as an ioctl: " + shown2);
    }

    static String show(Path archive, String name) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int rc = Tool.run("ptarchive", new PtarchiveCommand(), new PrintWriter(out), new PrintWriter(err),
                "--archive", archive.toString(), "show", name);
        assertEquals(0, rc, err.toString());
        return out.toString();
    }
}
