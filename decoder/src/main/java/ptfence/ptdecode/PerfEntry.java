package ptfence.ptdecode;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;
import ptfence.cli.ReaderGone;
import ptfence.cli.Stdout;
import ptfence.cli.Tool;

/**
 * ptdecode behind perf's own command line ({@code bin/ptperf}, and {@code libexec/perf} in the release): a tool that
 * runs {@code perf} from PATH (magic-trace, perf's scripts, FlameGraph's pipelines) gets ptdecode's decode with
 * perf's conventions: {@code script} as the first word, {@code perf --version}'s line (magic-trace reads
 * {@code perf version %d.%d} from it to decide which options perf has), perf's exit statuses (255 when the command
 * fails, 129 for a wrong option, with perf's {@code Error:} line and usage on stderr; {@code -h} prints that usage and
 * exits 129 too) and perf script's output with no options at all. ptdecode's own interface is not changed by it.
 * Commands other than script and version are run by the real perf (the launcher finds it further on PATH).
 */
public final class PerfEntry {
    /** The perf release whose perf script the lines follow; tools compare it with the versions they know. */
    static final String PERF_VERSION = "6.1";
    static final int EXIT_FAILED = 255; // perf's exit(-1)
    static final int EXIT_USAGE = 129; // parse-options' usage_with_options
    /** perf script's options among ptdecode's own (the others are ptdecode's views). */
    private static final java.util.Set<String> PERF_OPTIONS = java.util.Set.of("--call-trace", "--call-ret-trace",
            "--pid", "--tid", "--comms", "--cpu", "--time");

    private PerfEntry() {
    }

    public static void main(String[] args) {
        ptfence.cli.Tool.fewNativeCalls();
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(Stdout.stream(),
                java.nio.charset.StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err,
                java.nio.charset.StandardCharsets.UTF_8), true);
        int status = run(new PtdecodeCommand(), out, err, args);
        try {
            out.flush();
        } catch (ReaderGone e) {
            // the reader has what it wanted
        }
        System.exit(status);
    }

    /** Runs one perf command line ({@code script ...}, {@code --version}, ...); the exit status. */
    public static int run(PtdecodeCommand command, PrintWriter out, PrintWriter err, String... args) {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help") || args[0].equals("help")) {
            err.println();
            err.println(" usage: perf [--version] [--help] [OPTIONS] COMMAND [ARGS]");
            err.println();
            err.println(" The commands of this perf (ptfence's ptdecode; the others run the perf found next on PATH):");
            err.println("   script          Read perf.data (created by perf record) and display trace output");
            err.println("   version         display the version of perf binary");
            err.flush();
            return args.length == 0 ? 1 : 0;
        }
        String first = args[0];
        if (first.equals("--version") || first.equals("-v") || first.equals("version")) {
            out.println("perf version " + PERF_VERSION + ".0 (ptfence ptdecode " + version() + ")");
            out.flush();
            return 0;
        }
        if (!first.equals("script")) {
            err.println("perf: '" + first + "' is not a perf-command here: ptfence's perf entry runs 'perf script' "
                    + "and 'perf version' (and passes other commands to a perf further on PATH, none found)");
            err.flush();
            return 1;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        for (String a : rest) {
            if (a.equals("--")) {
                break;
            }
            if (a.equals("-h") || a.equals("--help")) {
                usage(err);
                return EXIT_USAGE;
            }
        }
        command.perf.perfEntry = true;
        CommandLine cl = ptfence.cli.Tool.model(command); // perf script has no subcommands
        cl.setOut(out);
        cl.setErr(err);
        cl.setCaseInsensitiveEnumValuesAllowed(false);
        // perf's parse-options: an option given again replaces its value (--time A --time B is B)
        cl.setOverwrittenOptionsAllowed(true);
        cl.setParameterExceptionHandler((ex, a) -> {
            err.println("  Error: " + perfWords(ex));
            usage(err);
            return EXIT_USAGE;
        });
        int[] scriptStatus = {-1}; // an exit status perf gives in its own words: -s's, evswitch's
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            if (ReaderGone.in(ex)) {
                return 0;
            }
            for (Throwable t = ex; t != null; t = t.getCause()) {
                if (t instanceof PtdecodeCommand.PerfStatus ps) {
                    scriptStatus[0] = ps.status; // perf's own words are on stderr
                    return ps.status;
                }
            }
            ptfence.script.PythonScript.Ended ended = ptfence.script.PythonScript.Ended.in(ex);
            if (ended != null) {
                // -s: the script's sys.exit status, or perf's for its exception (the host printed perf's lines)
                scriptStatus[0] = ended.status;
                return ended.status;
            }
            String line = Tool.describe(ex);
            err.println("ptdecode: " + line);
            if (System.getenv("PTFENCE_DEBUG") != null) {
                ex.printStackTrace(err);
            }
            if (line.startsWith("-F ") || line.startsWith("--itrace=")) {
                // perf checks these in the options' callbacks: a wrong value is a usage error there
                usage(err);
                return EXIT_USAGE;
            }
            err.flush();
            // a --time string perf refuses: its cmd_script returns -EINVAL there, not -1
            return ex instanceof ptfence.script.TimeStringException ? ptfence.script.TimeStringException.PERF_STATUS
                    : EXIT_FAILED;
        });
        int status = cl.execute(rest);
        if (scriptStatus[0] >= 0) {
            return scriptStatus[0];
        }
        // ptdecode's non-zero statuses (2: bad input, 70: internal) are perf's one failure status
        return status == 0 || status == EXIT_USAGE || status == ptfence.script.TimeStringException.PERF_STATUS
                ? status : EXIT_FAILED;
    }

    /** picocli's complaint in parse-options' words where there are such. */
    private static String perfWords(CommandLine.ParameterException ex) {
        if (ex instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            String a = u.getUnmatched().get(0);
            if (a.startsWith("--")) {
                return "unknown option `" + a.substring(2).replaceFirst("=.*", "") + "'";
            }
            if (a.startsWith("-") && a.length() > 1) {
                return "unknown switch `" + a.charAt(1) + "'";
            }
            return "unexpected argument `" + a + "'";
        }
        if (ex instanceof CommandLine.MissingParameterException) {
            return ex.getMessage();
        }
        return ex.getMessage();
    }

    /** perf script's usage: the synopsis and the perf script options this entry takes, on stderr. */
    static void usage(PrintWriter err) {
        err.println();
        err.println(" Usage: perf script [<options>]");
        err.println();
        CommandLine.Model.CommandSpec spec = ptfence.cli.Tool.model(new PtdecodeCommand()).getCommandSpec();
        List<OptionSpec> options = new ArrayList<>();
        for (CommandLine.Model.CommandSpec m : spec.mixins().values()) {
            if (m.userObject() instanceof PerfScriptOptions) {
                m.options().stream().filter(o -> !o.hidden()).forEach(options::add);
            }
        }
        spec.options().stream().filter(o -> PERF_OPTIONS.contains(o.longestName())).forEach(options::add);
        for (OptionSpec o : options) {
            String names = String.join(", ", o.names());
            String label = o.arity().max() > 0 ? " <" + o.paramLabel().toLowerCase(java.util.Locale.ROOT)
                    .replaceAll("[<>]", "") + ">" : "";
            String left = "    " + names + label;
            String text = o.description().length > 0 ? o.description()[0] : "";
            int dot = text.indexOf(". ");
            text = dot > 0 ? text.substring(0, dot) : text;
            err.println(left.length() < 26 ? String.format("%-26s%s", left, text)
                    : left + "\n" + " ".repeat(26) + text);
        }
        err.println();
        err.flush();
    }

    private static String version() {
        String v = PerfEntry.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0";
    }
}
