package ptfence.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.packet.LastIp;

/**
 * Issue 14: PSB-segment decoding on several threads prints exactly the sequential decode's times: each segment starts
 * with the clock (TSC, MTC, CYC calibration, CBR, TMA) the trace before it set. Compared byte for byte with --threads
 * 1, with --time and --event:time, in every format, on segments as small as one PSB each. (The execution mode a
 * MODE.Exec repeats, and the status events of the PSB a segment ends at, are carried across the seam as well; the
 * forged cycle-accurate walk in fixtures' ParallelTimesTest is where the CYC calibration itself must cross.)
 */
class TimedParallelTest {
    static final List<String> FORMATS = List.of("ptxed", "text", "jsonl");

    static List<String> with(List<String> args, String... more) {
        List<String> out = new ArrayList<>(args);
        out.addAll(List.of(more));
        return out;
    }

    /**
     * Compares --threads 1 with 2 and 4 threads on one-PSB segments, with --time, in each of {@code formats}; returns
     * the number of timed lines compared.
     */
    static long compare(String name, Path dir, List<String> args, List<String> formats, List<String> failures) {
        return compare(name, dir, args, formats, List.of(List.of("--time")), failures);
    }

    /**
     * Output options: the time column; none (what "resumed" is, and errors, decide alone); event IPs; a count (errors
     * and the count only).
     */
    static final List<List<String>> VARIANTS = List.of(List.of("--time"), List.of(), List.of("--event:ip"),
            List.of("--quiet", "--stat"));

    /**
     * As above with each of {@code variants} added to the options (the count only once, it has no format); returns the
     * number of timed lines compared.
     */
    static long compare(String name, Path dir, List<String> args, List<String> formats, List<List<String>> variants,
            List<String> failures) {
        long timed = 0;
        for (List<String> variant : variants) {
            boolean quiet = variant.contains("--quiet");
            for (String format : quiet ? formats.subList(0, 1) : formats) {
                List<String> a = with(args, "--format", format);
                for (String v : variant) {
                    if (!a.contains(v)) {
                        a.add(v);
                    }
                }
                String seq = PtxedCorpusTest.decode(dir, with(a, "--threads", "1"));
                for (String threads : List.of("2", "4")) {
                    String par = PtxedCorpusTest.decode(dir, with(a, "--threads", threads, "--segment-bytes", "1"));
                    if (!seq.equals(par)) {
                        failures.add(name + " " + format + " " + variant + " threads " + threads);
                    }
                }
                timed += seq.lines().filter(l -> l.matches("[0-9a-f]{16}  .*") || l.contains("\"tsc\":")).count();
            }
        }
        return timed;
    }

    @Test
    void corpusTimesStitchToTheSequential() throws IOException {
        Path dir = PtxedCorpusTest.corpus();
        List<String> failures = new ArrayList<>();
        int runs = 0;
        long timed = 0;
        for (PtxedCorpusTest.Run r : PtxedCorpusTest.runs(dir)) {
            if (r.args().stream().anyMatch(a -> a.startsWith("--pevent:") || a.equals("--offset"))) {
                continue; // sequential by design
            }
            Path d = dir.resolve(r.name());
            List<String> args = new ArrayList<>(r.args());
            timed += compare(r.name() + (r.block() ? " block" : " insn"), d, args, FORMATS, VARIANTS, failures);
            runs++;
        }
        assertEquals(List.of(), failures);
        assertTrue(runs > 300, "runs " + runs);
        assertTrue(timed > 1000, "timed lines " + timed);
    }

    /**
     * The real DynamoRIO trace (Skylake-SP, MTC and CYC) four times over: each copy's PSB starts a segment, and its CYC
     * packets before the first MTC are timed only by the calibration the copies before it left.
     */
    @Test
    void realTraceRepeatedTimesStitch(@TempDir Path tmp) throws IOException {
        Path d = RealTraceTest.dir("test_simple.tracedir_2022-07-06");
        byte[] one = Files.readAllBytes(d.resolve("pt.bin"));
        ByteArrayOutputStream four = new ByteArrayOutputStream();
        for (int i = 0; i < 4; i++) {
            four.write(one, 8, one.length - 8); // 8 stray bytes before the first PSB
        }
        Path trace = tmp.resolve("dr4.pt");
        Files.write(trace, four.toByteArray());
        List<String> failures = new ArrayList<>();
        long timed = 0;
        for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
            for (String events : List.of("--time", "--event:time")) {
                List<String> args = List.of(decoder, "--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                        "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax", "2", "--cpuid-0x15.ebx", "308", events,
                        "--pt", trace.toString());
                timed += compare("dynamorio x4 " + decoder + " " + events, tmp, args, FORMATS, failures);
            }
        }
        assertEquals(List.of(), failures);
        assertTrue(timed > 4 * 59_234, "timed lines " + timed);
    }

    /**
     * The DynamoRIO trace with a PSB+ where tracing is off (PSB, PSBEND) put right after each TIP.PGD of its first
     * {@code copies} copies, and the TIP.PGE after it given its IP in full (a PSB resets IP compression); with
     * {@code tntEvery} > 0, a TNT packet after every {@code tntEvery}-th such PSB+ that follows a synchronous disable
     * without IP (an error while tracing is off: it reports the IP after the last instruction). So segments start where the IP tracing resumes at is the code's: after
     * a disable without IP (the instruction after a system call, which the packets do not tell) or one at a FUP.
     */
    static byte[] withPsbsWhereTracingIsOff(byte[] trace, int copies, int tntEvery) {
        return withPsbsWhereTracingIsOff(trace, copies, tntEvery, 0x04);
    }

    /**
     * As above, the packet put after every {@code every}-th PSB+ being the one byte {@code packet} (0x01, a TIP.PGD
     * without IP: an error of the flow, which reports the IP tracing was disabled at).
     */
    static byte[] withPsbsWhereTracingIsOff(byte[] trace, int copies, int every, int packet) {
        int tntEvery = every;
        FlowConfig cfg = new FlowConfig();
        cfg.setCpu("6/85/4");
        PacketInput in = CursorInput.of(ByteBuffer.wrap(trace), cfg.errata);
        PacketInput.Pkt p = new PacketInput.Pkt();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] psbPlus = new byte[18];
        for (int i = 0; i < 16; i += 2) {
            psbPlus[i] = 0x02;
            psbPlus[i + 1] = (byte) 0x82;
        }
        psbPlus[16] = 0x02;
        psbPlus[17] = 0x23;
        long lastIp = 0;
        int copied = 0;
        int psbs = 0;
        int inserted = 0;
        boolean fullNextIp = false;
        boolean lastFup = false;
        while (true) {
            int at = (int) in.position();
            if (in.next(p) < 0) {
                break;
            }
            int end = (int) in.position();
            lastIp = LastIp.combine(lastIp, p.ipc, p.ip);
            if (p.type == PacketInput.Pkt.PSB) {
                lastIp = 0;
                psbs++;
            }
            boolean afterFup = lastFup;
            if (p.type != PacketInput.Pkt.CYC && p.type != PacketInput.Pkt.MTC && p.type != PacketInput.Pkt.PAD) {
                lastFup = p.type == PacketInput.Pkt.FUP;
            }
            boolean ipPacket = p.type == PacketInput.Pkt.TIP || p.type == PacketInput.Pkt.TIP_PGE
                    || p.type == PacketInput.Pkt.TIP_PGD || p.type == PacketInput.Pkt.FUP;
            if (fullNextIp && ipPacket && p.ipc != 0) {
                out.write(trace, copied, at - copied);
                out.write(0xc0 | (trace[at] & 0x1f)); // the same packet, its IP in full
                for (int k = 0; k < 8; k++) {
                    out.write((int) (lastIp >>> (8 * k)));
                }
                copied = end;
                fullNextIp = false;
            }
            if (p.type == PacketInput.Pkt.TIP_PGD && psbs <= copies) {
                out.write(trace, copied, end - copied);
                out.write(psbPlus, 0, psbPlus.length);
                boolean sync = p.ipc == 0 && !afterFup; // the IP it resumes at is the code's
                inserted += sync ? 1 : 0;
                if (tntEvery > 0 && sync && inserted % tntEvery == 0) {
                    out.write(packet);
                }
                copied = end;
                fullNextIp = true;
            }
        }
        out.write(trace, copied, trace.length - copied);
        return out.toByteArray();
    }

    /** The DynamoRIO trace (without the stray bytes before its first PSB) {@code n} times over. */
    static byte[] dynamorio(int n) throws IOException {
        byte[] one = Files.readAllBytes(RealTraceTest.dir("test_simple.tracedir_2022-07-06").resolve("pt.bin"));
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            all.write(one, 8, one.length - 8);
        }
        return all.toByteArray();
    }

    /** ParallelFlow on the DynamoRIO image, ptxed format (or a count), one PSB per segment; returns its text. */
    static String parallel(byte[] trace, int threads, boolean count, ParallelFlow[] used) throws Exception {
        return parallel(trace, threads, count, false, used);
    }

    /** As above; {@code settleLate}: each segment's start settled after its decode ran ahead (redone counts fixed). */
    static String parallel(byte[] trace, int threads, boolean count, boolean settleLate, ParallelFlow[] used)
            throws Exception {
        FlowConfig cfg = new FlowConfig();
        cfg.setCpu("6/85/4");
        ptfence.image.Image image = new ptfence.image.Image();
        image.addAll(ptfence.image.ElfSegments.parse(
                RealTraceTest.dir("test_simple.tracedir_2022-07-06").resolve("hello").toString()));
        ParallelFlow par = new ParallelFlow(image, cfg, b -> CursorInput.of(b, cfg.errata), false, threads, 1)
                .carrySeams(!count);
        par.settleLate = settleLate;
        java.io.StringWriter sw = new java.io.StringWriter();
        java.io.PrintWriter pw = new java.io.PrintWriter(sw);
        par.run(ByteBuffer.wrap(trace), pw, w -> count ? new ptfence.output.CountingSink(w)
                : new ptfence.output.PtxedPrinter(w, false, false));
        pw.flush();
        used[0] = par;
        return sw.toString();
    }

    /**
     * Segments start at PSBs where tracing is off. The DynamoRIO trace x4 (each copy starts disabled, at a PSB without
     * FUP) and with such PSBs forged after every disable of its first copy: where the IP tracing resumes at is the
     * code's (the instruction after the system call that disabled it: "[resumed]"), a segment's guess (0: not known)
     * is wrong and the segment is decoded again; where it is the FUP's (an asynchronous disable) the guess is right.
     * And where an error while tracing is off reports that IP. Every format and output option equals --threads 1.
     */
    @Test
    void segmentsStartWhereTracingIsOff(@TempDir Path tmp) throws Exception {
        Path d = RealTraceTest.dir("test_simple.tracedir_2022-07-06");
        byte[] four = dynamorio(4);
        byte[] forged = withPsbsWhereTracingIsOff(four, 1, 0);
        byte[] errors = withPsbsWhereTracingIsOff(four, 1, 2, 0x04); // the event layer's error
        byte[] flowErrors = withPsbsWhereTracingIsOff(four, 1, 2, 0x01); // the flow's
        List<String> failures = new ArrayList<>();
        int i = 0;
        for (byte[] t : List.of(four, forged, errors, flowErrors)) {
            Path trace = tmp.resolve("t" + i++ + ".pt");
            Files.write(trace, t);
            List<String> args = List.of("--elf", d.resolve("hello").toString(), "--cpu", "6/85/4", "--pt", trace.toString());
            compare(trace.getFileName().toString(), tmp, args, FORMATS, VARIANTS, failures);
            compare(trace.getFileName() + " block", tmp, with(args, "--block-decoder"), List.of("ptxed"),
                    List.of(List.of()), failures);
        }
        assertEquals(List.of(), failures);

        // the forged PSBs are seams, resumed where the flow says, and the wrong guesses were decoded again
        String seq = PtxedCorpusTest.decode(tmp, List.of("--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                "--pt", tmp.resolve("t1.pt").toString(), "--threads", "1"));
        long resumed = seq.lines().filter(l -> l.equals("[resumed]")).count();
        ParallelFlow[] used = new ParallelFlow[1];
        assertEquals(seq, parallel(forged, 2, false, used));
        // how many wrong guesses are read before their turn depends on the schedule: settle late for fixed counts
        assertEquals(seq, parallel(forged, 2, false, true, used));
        int seams = used[0].boundaries(ByteBuffer.wrap(forged)).size();
        assertTrue(seams > 4 + 25, "segments " + seams);
        assertTrue(resumed > 4 * 25, "resumed " + resumed);
        assertTrue(used[0].redone > 4, "decoded again " + used[0].redone);
        assertTrue(used[0].redone < seams / 2, "decoded again " + used[0].redone + " of " + seams);
        // a count does not show "resumed": no segment is decoded again for it
        String count = parallel(forged, 2, true, used);
        assertEquals(PtxedCorpusTest.decode(tmp, List.of("--elf", d.resolve("hello").toString(), "--cpu", "6/85/4",
                "--pt", tmp.resolve("t1.pt").toString(), "--threads", "1", "--quiet", "--stat")), count + "insn: "
                + used[0].instructions + ".\n");
        assertEquals(0, used[0].redone);
        // errors while tracing is off report the IP after the last instruction, or the IP tracing was disabled at:
        // known only from the segment before (the instruction after a system call)
        for (String t : List.of("t2.pt", "t3.pt")) {
            String seqErrors = PtxedCorpusTest.decode(tmp, List.of("--elf", d.resolve("hello").toString(), "--cpu",
                    "6/85/4", "--pt", tmp.resolve(t).toString(), "--threads", "1", "--quiet"));
            assertTrue(seqErrors.lines().anyMatch(l -> l.matches("\\[[0-9a-f]+, 468867: error: .*")), seqErrors);
            assertEquals(seqErrors, parallel(Files.readAllBytes(tmp.resolve(t)), 2, true, used));
            assertEquals(seqErrors, parallel(Files.readAllBytes(tmp.resolve(t)), 2, true, true, used));
            assertTrue(used[0].redone > 0, t + " decoded again " + used[0].redone);
        }
    }

    /**
     * The AUX data of real perf recordings (HASE's Skylake and Broadwell user traces with their static binaries; the
     * quipper Skylake per-CPU trace, user and kernel, MTC and TSC, without its code: every instruction an error) with
     * --time and --event:time, on one-PSB segments.
     */
    @Test
    void realRecordingsTimesStitch() {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path real = Path.of(shared, "real");
        List<String> failures = new ArrayList<>();
        long timed = 0;
        int traces = 0;
        String[][] hase = {
            {"control_flow-20180404T163033", "aux-idx1.bin", "control_flow", "6/94/3"},
            {"control_flow-20180515T180451", "aux-idx1.bin", "control_flow", "6/61/4"},
            {"loopy-20180404T162955", "aux-idx2.bin", "loopy", "6/94/3"},
            {"loopy-20180514T145114", "aux-idx1.bin", "loopy", "6/61/4"},
        };
        for (String[] h : hase) {
            Path d = real.resolve("hase").resolve(h[0]);
            if (!Files.isRegularFile(d.resolve(h[1]))) {
                continue;
            }
            traces++;
            for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
                List<String> args = List.of(decoder, "--elf", d.resolve(h[2]).toString(), "--cpu", h[3], "--event:time",
                        "--pt", d.resolve(h[1]).toString());
                timed += compare(h[0] + " " + decoder, d, args, FORMATS, failures);
            }
        }
        Path q = real.resolve("quipper_perf_data_converter");
        for (String aux : List.of("aux_file-idx0.bin", "aux_file-idx3.bin")) {
            if (!Files.isRegularFile(q.resolve(aux))) {
                continue;
            }
            traces++;
            List<String> args = List.of("--cpu", "6/78/3", "--mtc-freq", "3", "--nom-freq", "12", "--cpuid-0x15.eax", "2",
                    "--cpuid-0x15.ebx", "100", "--event:time", "--pt", q.resolve(aux).toString());
            timed += compare("quipper " + aux, q, args, FORMATS, failures);
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(traces > 0, "no real recordings");
        assertEquals(List.of(), failures);
        assertEquals(6, traces);
        assertTrue(timed > 3 * 2 * (57 + 1_092 + 57 + 956), "timed lines " + timed);
    }
}
