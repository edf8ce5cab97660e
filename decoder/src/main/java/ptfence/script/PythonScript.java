package ptfence.script;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;

/**
 * perf script's {@code -s script.py}: one of perf's Python scripts, run unchanged by python3 through the project's
 * host program ({@code perf_script_host.py}, which gives the script {@code perf_trace_context} and calls its handlers
 * as perf's Python engine does). The samples reach the host in perf's order: SampleLines and SidebandLines write each
 * call as a marked line into the merged output ({@link #MARK}, then the call in JSON), and the stream of
 * {@link #output} makes the call when the line's turn comes and writes what the handler printed in its place. One
 * call at a time, in time order, on the thread that writes the output, as under perf's one thread.
 */
public final class PythonScript implements AutoCloseable {
    /** First byte of a line that is a call to the script, not text. */
    public static final byte MARK = 1;

    /**
     * The script ended the run: {@code sys.exit(status)}, or an exception (its traceback and perf's lines about it
     * already on stderr; 255 at the top level, where perf script returns -1; 134 in a handler, where perf aborts).
     * perf's entry exits with {@link #status} and says nothing more; {@link #printed} is what the script printed in
     * its last call, which goes to the output first (perf's stdout has it too, but where perf aborts).
     */
    public static final class Ended extends BadInputException {
        private static final long serialVersionUID = 1L;
        public final int status;
        private byte[] printed = new byte[0];

        Ended(String script, int status) {
            super("-s " + script + ": the script ended the run (exit " + status + ")");
            this.status = status;
        }

        /** What the script printed before it ended the run, for the output: given once (then nothing). */
        public byte[] takePrinted() {
            byte[] p = printed;
            printed = new byte[0];
            return p;
        }

        Ended printed(byte[] text) {
            printed = text;
            return this;
        }

        /** The script's end among {@code ex}'s causes, or null. */
        public static Ended in(Throwable ex) {
            for (Throwable t = ex; t != null; t = t.getCause()) {
                if (t instanceof Ended e) {
                    return e;
                }
            }
            return null;
        }
    }

    private final Process process;
    private final OutputStream toHost;
    private final InputStream fromHost;
    private final String name;
    private String itrace;
    private byte[] prologue;

    private PythonScript(Process process, String name) {
        this.process = process;
        this.name = name;
        this.toHost = process.getOutputStream();
        this.fromHost = process.getInputStream();
    }

    /** perf's places for a bare script name: here, then perf's scripts directory. */
    static Path find(String script) {
        Path p = Path.of(script);
        if (Files.isRegularFile(p) || script.contains("/")) {
            return p;
        }
        String exec = System.getenv("PERF_EXEC_PATH");
        for (String dir : new String[] {exec == null ? null : exec + "/scripts/python", "/usr/lib/perf-core/scripts/python"}) {
            if (dir != null && Files.isRegularFile(Path.of(dir, script))) {
                return Path.of(dir, script);
            }
        }
        return p;
    }

    /**
     * Starts python3 on {@code script} with {@code args} (the script's own, after its name on perf's command line) and
     * runs the script's top level and its trace_begin; {@link #itrace()} is then what the script asked for.
     */
    public static PythonScript start(String script, List<String> args) throws IOException {
        Path file = find(script);
        if (!Files.isRegularFile(file)) {
            throw new BadInputException("-s " + script + ": no such script (looked here, in $PERF_EXEC_PATH/scripts/"
                    + "python and /usr/lib/perf-core/scripts/python)");
        }
        if (!file.toString().endsWith(".py")) {
            throw new BadInputException("-s " + script + ": only Python scripts (.py) are run (perf's Perl engine is "
                    + "not provided)");
        }
        Path host = Files.createTempFile("ptdecode-script-host", ".py");
        try (InputStream in = PythonScript.class.getResourceAsStream("perf_script_host.py")) {
            Files.write(host, in.readAllBytes());
        }
        host.toFile().deleteOnExit();
        List<String> cmd = new ArrayList<>(List.of("python3", "-u", host.toString(), file.toString()));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().putIfAbsent("PERF_EXEC_PATH", "/usr/lib/perf-core");
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new BadInputException("-s " + script + ": python3 cannot be run (" + e.getMessage() + ")");
        }
        PythonScript s = new PythonScript(p, script);
        java.io.ByteArrayOutputStream top = new java.io.ByteArrayOutputStream();
        try {
            s.answer(top);
            top.write(s.call("{\"h\":\"trace_begin\"}"));
        } catch (Ended e) {
            top.write(e.takePrinted());
            throw e.printed(top.toByteArray());
        }
        s.prologue = top.toByteArray();
        return s;
    }

    /** The --itrace options the script set (perf_set_itrace_options), or null. */
    public String itrace() {
        return itrace;
    }

    /** What the script printed while loading and in trace_begin. */
    public byte[] prologue() {
        return prologue;
    }

    /** Calls a handler: {@code request} is the call as the host reads it; returns what the handler printed. */
    public byte[] call(String request) throws IOException {
        try {
            toHost.write(request.getBytes(StandardCharsets.UTF_8));
            toHost.write('\n');
            toHost.flush();
        } catch (IOException e) {
            throw new BadInputException("-s " + name + ": the script stopped (exit " + exitStatus() + ")");
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try {
            answer(out);
        } catch (Ended e) {
            throw e.printed(out.toByteArray());
        }
        return out.toByteArray();
    }

    private int exitStatus() {
        try {
            return process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private void answer(OutputStream into) throws IOException {
        StringBuilder head = new StringBuilder();
        for (int c; (c = fromHost.read()) != '\n'; ) {
            if (c < 0) {
                throw new BadInputException("-s " + name + ": the script stopped (exit " + exitStatus() + ")");
            }
            head.append((char) c);
        }
        String h = head.toString();
        int n = Integer.parseInt(h.replaceAll(".*\"n\": *([0-9]+).*", "$1"));
        int i = h.indexOf("\"itrace\": \"");
        if (i >= 0) {
            int from = i + "\"itrace\": \"".length();
            itrace = h.substring(from, h.indexOf('"', from));
        }
        into.write(fromHost.readNBytes(n));
        int e = h.indexOf("\"exit\": ");
        if (e >= 0) {
            int status = Integer.parseInt(h.substring(e + "\"exit\": ".length()).replaceAll("[^0-9].*", ""));
            exitStatus(); // the host has gone
            throw new Ended(name, status);
        }
    }

    /** What the script prints at the end (trace_end); the host then exits. */
    public byte[] end() throws IOException {
        byte[] b = call("{\"h\":\"trace_end\"}");
        toHost.close();
        return b;
    }

    /** The merged output with each marked line replaced by what the script printed for that call. */
    public OutputStream output(OutputStream out) {
        return new OutputStream() {
            private final java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
            private boolean lineStart = true;
            private boolean marked;

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                int end = off + len;
                for (int i = off; i < end; i++) {
                    if (lineStart) {
                        marked = b[i] == MARK;
                        lineStart = false;
                        if (marked) {
                            continue;
                        }
                    }
                    if (marked) {
                        if (b[i] == '\n') {
                            byte[] printed;
                            try {
                                printed = call(line.toString(StandardCharsets.UTF_8));
                            } catch (Ended e) {
                                out.write(e.takePrinted()); // the lines before the end are kept, as perf's
                                out.flush();
                                throw e;
                            }
                            out.write(printed);
                            line.reset();
                            lineStart = true;
                            marked = false;
                        } else {
                            line.write(b[i]);
                        }
                        continue;
                    }
                    out.write(b[i]);
                    if (b[i] == '\n') {
                        lineStart = true;
                    }
                }
            }

            @Override
            public void flush() throws IOException {
                out.flush();
            }
        };
    }

    @Override
    public void close() {
        process.destroy();
    }

    // ---- the calls, as JSON (the project's one JSON writer, ptfence.cli.Json) ---------------------------------

    /** Bytes as the host reads them: {"b": "hex"}. */
    public static String bytes(byte[] v, int len) {
        return "{\"b\":\"" + hex(v, len) + "\"}";
    }

    /** perf's PERF_IP_FLAG_CHARS: the letters of the branch flags, bit 0 first. */
    private static final String FLAG_CHARS = "bcrosyiABExghDt";

    /**
     * The sample dictionary perf 6.1's Python engine makes, in its order, up to cpumode (time 0 where the recording
     * has none, as perf): "values" is perf's read value list, [(id, value, NULL)] (6.1 leaves the lost count's slot
     * empty; the host gives an object printed as perf's <NULL>), data_src 0 and its text.
     */
    public static Json sample(int pid, int tid, int cpu, long ip, long time, long period, long addr, int flags) {
        return sample(pid, tid, cpu, ip, time, period, addr, 0, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A");
    }

    /**
     * A recorded event's sample without PERF_SAMPLE_DATA_SRC: perf's parse leaves data_src at
     * PERF_MEM_DATA_SRC_NONE (a synthesized one is zeroed: {@link #sample}).
     */
    public static Json recordedSample(int pid, int tid, int cpu, long ip, long time, long period, long addr) {
        return sample(pid, tid, cpu, ip, time, period, addr, 0x5080021L,
                "|OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A");
    }

    private static Json sample(int pid, int tid, int cpu, long ip, long time, long period, long addr, long datasrc,
            String datasrcDecode) {
        Json j = new Json().field("pid", pid).field("tid", tid).field("cpu", Integer.toUnsignedLong(cpu))
                .raw("ip", Long.toUnsignedString(ip)).raw("time", Long.toUnsignedString(time == -1 ? 0 : time))
                .raw("period", Long.toUnsignedString(period)).field("phys_addr", 0)
                .raw("addr", Long.toUnsignedString(addr)).raw("values", "[{\"t\":[0,0,{\"null\":0}]}]")
                .field("weight", 0).field("transaction", 0).field("datasrc", datasrc)
                .field("datasrc_decode", datasrcDecode)
                // intel_pt_cpumode: the kernel's half of the address space, by ip (by addr where ip is 0)
                .field("cpumode", (ip != 0 ? ip : addr) < 0 ? 1 : 2);
        return j;
    }

    /** The sample's flags as perf adds them (python_process_sample_flags), only where it has some. */
    public static Json flags(Json j, int flags) {
        if (flags == 0) {
            return j;
        }
        StringBuilder fl = new StringBuilder();
        for (int i = 0; i < FLAG_CHARS.length(); i++) {
            if ((flags >>> i & 1) != 0) {
                fl.append(FLAG_CHARS.charAt(i));
            }
        }
        // perf_sample__sprintf_flags' text, padded as perf pads it
        return j.field("flags", fl.toString()).field("flags_disp",
                String.format("%-21s", ptfence.calls.BranchFlags.perfName(flags).stripTrailing()));
    }

    /**
     * perf's set_sym_in_dict for one end: "dso", "dso_bid", "dso_map_start", "dso_map_end" where a map covers it
     * ({@code bid} non-null, {@code map} its [start, end)), "symbol" and "symoff" where a symbol does; with
     * {@code prefix} "addr_" for the branch target.
     */
    public static void symbol(Json j, String prefix, String dso, String bid, long[] map, String sym, long symoff) {
        if (dso != null && bid != null) {
            j.field(prefix + "dso", dso).field(prefix + "dso_bid", bid)
                    .raw(prefix + "dso_map_start", Long.toUnsignedString(map[0]))
                    .raw(prefix + "dso_map_end", Long.toUnsignedString(map[1]));
        } else if (dso != null) {
            j.field(prefix + "dso", dso);
        }
        if (sym != null) {
            j.field(prefix + "symbol", sym).raw(prefix + "symoff", Long.toUnsignedString(symoff));
        }
    }

    /**
     * A process_event call: perf's param_dict (ev_name, attr, sample, raw_buf, comm, and dso, symbol, symoff where
     * perf resolved them), with the instruction's bytes for perf_sample_insn.
     */
    public static String processEvent(String evName, String comm, Json sample, byte[] raw, String dso, String sym,
            long symoff, byte[] insn, int insnLen) {
        return processEvent(evName, comm, sample, raw, dso, sym, symoff, insn, insnLen, "[]", "[]", "[]");
    }

    /** The same with the sample's callchain, brstack and brstacksym lists (JSON arrays; perf gives [] for none). */
    public static String processEvent(String evName, String comm, Json sample, byte[] raw, String dso, String sym,
            long symoff, byte[] insn, int insnLen, String callchain, String brstack, String brstacksym) {
        Json where = new Json();
        symbol(where, "", dso, null, null, sym, symoff);
        return processEvent(evName, new byte[0], comm, sample, raw, where, insn, insnLen, callchain, brstack,
                brstacksym);
    }

    /**
     * A process_event call with perf 6.1's param_dict in its order: ev_name, attr, sample, raw_buf, comm, the
     * sample's dso and symbol ({@code where}, {@link #symbol}), callchain, brstack, brstacksym, and iregs and uregs
     * (perf's "" for samples without registers, as Intel PT's are).
     */
    public static String processEvent(String evName, byte[] attr, String comm, Json sample, byte[] raw, Json where,
            byte[] insn, int insnLen, String callchain, String brstack, String brstacksym) {
        Json param = new Json().field("ev_name", evName).raw("attr", bytes(attr, attr.length))
                .raw("sample", sample.toString()).raw("raw_buf", bytes(raw, raw.length)).field("comm", comm);
        String w = where.toString();
        String mid = w.length() > 2 ? w.substring(1, w.length() - 1) : "";
        String head = param.toString();
        String tail = new Json().raw("callchain", callchain).raw("brstack", brstack).raw("brstacksym", brstacksym)
                .field("iregs", "").field("uregs", "").toString();
        String all = head.substring(0, head.length() - 1) + (mid.isEmpty() ? "" : "," + mid) + ","
                + tail.substring(1);
        String call = request("process_event", all);
        if (insn != null && insnLen > 0) {
            call = call.substring(0, call.length() - 1) + ",\"insn\":\"" + hex(insn, insnLen) + "\"}";
        }
        return call;
    }

    /** A call of {@code handler} with positional {@code args} (JSON values), as a marked line's text. */
    public static String request(String handler, String... args) {
        return "{\"h\":\"" + handler + "\",\"a\":[" + String.join(",", args) + "]}";
    }

    /** Bytes as the host's hex. */
    public static String hex(byte[] v, int len) {
        StringBuilder b = new StringBuilder(2 * len);
        for (int i = 0; i < len; i++) {
            b.append(Character.forDigit(v[i] >> 4 & 0xf, 16)).append(Character.forDigit(v[i] & 0xf, 16));
        }
        return b.toString();
    }

}
