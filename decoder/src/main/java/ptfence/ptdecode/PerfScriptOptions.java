package ptfence.ptdecode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * perf script's options, so that a perf user's command line works as it is ({@code ptdecode -i perf.data
 * --itrace=i1i -F ip,sym --ns}); a mixin of {@link PtdecodeCommand}. Given any of them, ptdecode prints perf script's
 * lines ({@link PerfScript}); without, its own listing. Options that only shape perf's own machinery (pagers, script
 * languages, guests) are accepted and have nothing to do here.
 */
public final class PerfScriptOptions {
    /** The value --itrace takes when given without one: perf script's default letters. */
    static final String ITRACE_DEFAULT = "\u0000default";

    @Option(names = {"-i", "--input"}, paramLabel = "FILE", description = "perf script's input file (as RECORDING).")
    String input;

    @Option(names = {"-F", "--fields"}, paramLabel = "FIELDS", description = "perf script's fields: comm,tid,pid,time,"
            + "cpu,event,ip,sym,symoff,dso,addr,flags,insn,insnlen,srcline,period,ipc,misc,synth...; +f/-f add or "
            + "remove; type: prefix (hw, sw, synth...).", parameterConsumer = FieldsValue.class)
    List<String> fields = new ArrayList<>();

    /**
     * -F's value is taken whatever it starts with, as perf takes it: {@code -F -ip}, {@code --fields=-ip} and
     * {@code -F-ip,+addr} remove or add fields (picocli would otherwise read a value starting with '-' as an option).
     */
    static final class FieldsValue implements picocli.CommandLine.IParameterConsumer {
        @Override
        public void consumeParameters(java.util.Stack<String> args, picocli.CommandLine.Model.ArgSpec argSpec,
                picocli.CommandLine.Model.CommandSpec spec) {
            if (args.isEmpty()) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), "-F/--fields needs a value: "
                        + "perf script's fields (-F ip,sym; -F +addr adds, -F -ip removes)");
            }
            List<String> v = argSpec.getValue();
            if (v == null) {
                v = new ArrayList<>();
                argSpec.setValue(v);
            }
            if (callViewGiven(spec)) {
                for (picocli.CommandLine.Model.CommandSpec m : spec.mixins().values()) {
                    if (m.userObject() instanceof PerfScriptOptions o && o.callViewAt < 0) {
                        o.callViewAt = v.size();
                    }
                }
            }
            v.add(args.pop());
        }

        private static boolean callViewGiven(picocli.CommandLine.Model.CommandSpec spec) {
            for (String name : new String[] {"--call-trace", "--call-ret-trace"}) {
                picocli.CommandLine.Model.OptionSpec o = spec.findOption(name);
                if (o != null && Boolean.TRUE.equals(o.getValue())) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * How many of {@link #fields} came before --call-trace or --call-ret-trace (-1: all of them, or no call view):
     * perf applies a call view's own field changes where the option stands among the -F (its options' order).
     */
    int callViewAt = -1;

    @Option(names = "--itrace", arity = "0..1", fallbackValue = ITRACE_DEFAULT, paramLabel = "OPTS",
            description = "What to synthesize, as perf script --itrace: i[period] instructions (i1i, i100ns), b "
                    + "branches, c calls, r returns, x, w, p, o, I, e errors, g, l, s<n>, q... (default: ce + power "
                    + "and ptwrite events, as perf script).")
    List<String> itrace; // each given (perf takes --itrace again and adds it up: ItraceOptions.parseAll)

    @Option(names = {"-s", "--script"}, paramLabel = "SCRIPT.py", description = "Run one of perf's Python scripts "
            + "(intel-pt-events.py, ...) on the samples, unchanged, through python3.")
    String script;

    /**
     * With -s, the script's arguments: every positional where the recording is -i's (or perf's entry, whose
     * recording is always -i's or ./perf.data), else those after RECORDING ({@code moreArgs}: perf script -s
     * script.py ARG... or -s script.py -- ARG...; perf passes what follows its options as sys.argv[1:]); null where
     * positionals are left over without a script (a wrong command line).
     */
    List<String> scriptArgs(String recording, List<String> moreArgs) {
        List<String> out = new ArrayList<>();
        if (recording != null && (input != null || perfEntry)) {
            out.add(recording);
        }
        out.addAll(moreArgs);
        return script == null && !out.isEmpty() ? null : out;
    }

    @Option(names = "--no-itrace", description = "Decode no trace: only the recorded samples and sideband (perf's "
            + "--no-itrace).")
    boolean noItrace;

    @Option(names = "--ns", description = "Nine decimals in times (perf script --ns).")
    boolean ns;

    @Option(names = "--reltime", description = "Times relative to the first line.")
    boolean reltime;

    @Option(names = "--deltatime", description = "Times relative to the line before.")
    boolean deltatime;

    @Option(names = "--symfs", paramLabel = "DIR", description = "Look for the recorded files under DIR (as --sysroot).")
    Path symfs;

    @Option(names = {"-S", "--symbols"}, paramLabel = "SYMS", split = ",",
            description = "Only samples in these functions (names or hex addresses).")
    List<String> symbols;

    @Option(names = "--addr-range", paramLabel = "N", description = "With -S: addresses within N bytes after each.")
    Integer addrRange;

    @Option(names = "--dsos", paramLabel = "DSOS", split = ",", description = "Only samples in these files.")
    List<String> dsos;

    @Option(names = "--insn-trace", arity = "0..1", fallbackValue = "raw", paramLabel = "raw|disasm",
            description = "Every instruction with its bytes (perf script --insn-trace); disasm: with its text.")
    String insnTrace;

    @Option(names = "--xed", description = "Disassemble the insn field (perf pipes through xed; here capstone).")
    boolean xed;

    @Option(names = "--graph-function", paramLabel = "SYMS", description = "With --call-trace/--call-ret-trace: only "
            + "these functions and their callees.")
    String graphFunction;

    @Option(names = "--show-task-events", description = "Show COMM, FORK and EXIT records.")
    boolean showTask;

    @Option(names = "--show-mmap-events", description = "Show MMAP and MMAP2 records.")
    boolean showMmap;

    @Option(names = "--show-switch-events", description = "Show context switch records.")
    boolean showSwitch;

    @Option(names = "--show-namespace-events", description = "Show namespace records.")
    boolean showNamespace;

    @Option(names = "--show-lost-events", description = "Show LOST records.")
    boolean showLost;

    @Option(names = "--show-round-events", description = "Show FINISHED_ROUND records.")
    boolean showRound;

    @Option(names = "--show-bpf-events", description = "Show KSYMBOL and BPF_EVENT records.")
    boolean showBpf;

    @Option(names = "--show-cgroup-events", description = "Show cgroup records.")
    boolean showCgroup;

    @Option(names = "--show-text-poke-events", description = "Show TEXT_POKE and KSYMBOL records.")
    boolean showTextPoke;

    @Option(names = "--header", description = "Show the perf.data header first (as perf report --header-only).")
    boolean header;

    @Option(names = "--header-only", description = "Show only the perf.data header.")
    boolean headerOnly;

    @Option(names = {"-D", "--dump-raw-trace"}, description = "Dump the records and the trace's packets (perf's -D).")
    boolean dumpRaw;

    @Option(names = "--dump-unsorted-raw-trace", description = "As -D.")
    boolean dumpUnsorted;

    @Option(names = "--full-source-path", description = "Source lines with the file's full path.")
    boolean fullSourcePath;

    @Option(names = "--dlfilter", paramLabel = "FILE", description = "Filter the samples through a shared object "
            + "built against perf's perf_dlfilter.h (perf script --dlfilter; magic-trace's, dlfilter-show-cycles.so).")
    String dlfilter;

    @Option(names = "--guest-code", description = "Decode guest code from a recording made on a VM host (refused: "
            + "ptdecode reads no guest's memory or sideband).")
    boolean guestCode;

    @Option(names = "--dlarg", paramLabel = "ARG", description = "An argument for the --dlfilter (may be repeated).")
    List<String> dlargs = new ArrayList<>();

    @Option(names = "-k", paramLabel = "FILE", description = "The kernel's ELF image (as --vmlinux).")
    Path vmlinux;

    // Accepted for a perf user's command line; nothing to do here.
    @Option(names = {"-G", "--hide-call-graph"}, hidden = true)
    boolean hideCallGraph;
    @Option(names = "--stop-bt", hidden = true, paramLabel = "SYMS")
    String stopBt;
    @Option(names = "--max-stack", hidden = true, paramLabel = "N")
    Integer maxStack;
    @Option(names = "--inline", negatable = true, hidden = true)
    Boolean inline;
    @Option(names = "--demangle", negatable = true, hidden = true)
    Boolean demangle;
    @Option(names = "--demangle-kernel", hidden = true)
    boolean demangleKernel;
    @Option(names = {"-f", "--force"}, hidden = true)
    boolean force;
    @Option(names = {"-a", "--all-cpus"}, hidden = true)
    boolean allCpus;
    @Option(names = {"-I", "--show-info"}, description = "With --header: the topologies and caches in full (a "
            + "pipe-mode recording's feature lines even without --header, as perf).")
    boolean showInfo;
    @Option(names = "--show-kernel-path", hidden = true)
    boolean showKernelPath;
    @Option(names = "--max-blocks", hidden = true, paramLabel = "N")
    Integer maxBlocks;
    @Option(names = "--per-event-dump", description = "Each event's sample lines to RECORDING.EVENT.dump (perf's "
            + "names, beside the recording), what was written on stdout.")
    boolean perEventDump;
    @Option(names = {"-d", "--debug-mode"}, hidden = true)
    boolean debugMode;
    // a recording without guest samples, which is all ptdecode decodes (--guest-code is refused): nothing to do
    @Option(names = {"--guestmount", "--guestvmlinux", "--guestkallsyms", "--guestmodules"}, hidden = true,
            paramLabel = "PATH")
    List<String> guestFiles;
    @Option(names = "--stitch-lbr", hidden = true)
    boolean stitchLbr;
    @Option(names = {"-l", "--list"}, hidden = true)
    boolean list;
    @Option(names = "--list-dlfilters", hidden = true)
    boolean listDlfilters;
    @Option(names = {"-g", "--gen-script"}, hidden = true, paramLabel = "LANG")
    String genScript;
    @Option(names = "--switch-on", hidden = true, paramLabel = "EVENT")
    String switchOn;
    @Option(names = "--switch-off", hidden = true, paramLabel = "EVENT")
    String switchOff;
    @Option(names = "--show-on-off-events", hidden = true)
    boolean showOnOffEvents;
    @Option(names = "--addr2line", hidden = true, paramLabel = "PATH")
    String addr2line;

    /** Set by the command: --call-trace or --call-ret-trace is given (the views --graph-function works with). */
    boolean callViews;

    /** Run as perf itself ({@link PerfEntry}): perf script's lines even with no option at all. */
    boolean perfEntry;

    /** True if any perf script option was given (or ptdecode runs as perf): the output is then perf script's. */
    boolean given() {
        return perfEntry || noItrace || script != null || dlfilter != null || guestCode || input != null || !fields.isEmpty() || itrace != null || ns || reltime || deltatime || symfs != null
                || symbols != null || addrRange != null || dsos != null || insnTrace != null || xed
                || graphFunction != null || showTask || showMmap || showSwitch || showNamespace || showLost
                || showRound || showBpf || showCgroup || showTextPoke || header || headerOnly || dumpRaw
                || dumpUnsorted || fullSourcePath || vmlinux != null || hideCallGraph || stopBt != null
                || maxStack != null || inline != null || demangle != null || demangleKernel || force
                || allCpus || showInfo || showKernelPath || maxBlocks != null || perEventDump || debugMode
                || addr2line != null || guestFiles != null || stitchLbr || list || listDlfilters
                || genScript != null || switchOn != null || switchOff != null || showOnOffEvents;
    }

    /**
     * The first perf script option given that ptdecode does not do yet, as "--option: what is missing", or null: such
     * an option is refused with that line rather than dropped without a word.
     */
    String unsupported() {
        if (guestCode) {
            return "--guest-code: not done: ptdecode has no guest's code or its sideband (perf reads them from a "
                    + "QEMU/KVM host's recording with the guest's kcore or memory); decode the guest's own recording";
        }
        if (graphFunction != null && !callViews) {
            return "--graph-function: not done yet with the sample views (it is with --call-trace and "
                    + "--call-ret-trace)";
        }
        if (genScript != null) {
            return "-g/--gen-script " + genScript + ": not done (ptdecode runs perf's scripts with -s, unchanged, but "
                    + "writes no script skeleton; 'perf script -g python' writes one)";
        }
        if (debugMode) {
            return "-d/--debug-mode: not done yet (perf's check of the samples' order; ptdecode merges them in perf's "
                    + "order)";
        }
        return null;
    }

    /** The --itrace strings perf would work with, in order (null for one given without a value: perf's default). */
    List<String> itraceSpecs() {
        if (insnTrace != null) {
            return List.of("i0nse");
        }
        List<String> out = new ArrayList<>();
        if (itrace != null) {
            itrace.forEach(s -> out.add(ITRACE_DEFAULT.equals(s) ? null : s));
        }
        return out;
    }
}
