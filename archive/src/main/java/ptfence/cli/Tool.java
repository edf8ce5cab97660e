package ptfence.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import picocli.CommandLine;

/**
 * Runs one of the ptfence commands with the error policy every tool shares: bad input and wrong flags
 * are one line on stderr and exit code 2; anything else is an internal error, one line too, with the
 * stack trace only when PTFENCE_DEBUG is set.
 */
public final class Tool {
    public static final int EXIT_OK = 0;
    public static final int EXIT_BAD_INPUT = 2;
    public static final int EXIT_INTERNAL = 70;

    private static final String CONVERTERS_EXCLUDES = "picocli.converters.excludes";
    private static final String JNR_ASM = "jnr.ffi.asm.enabled";

    private Tool() {}

    /** Parses, runs and returns the exit code; never calls System.exit, so tests can use it. */
    public static int run(String name, Object command, String... args) {
        return run(name, command, null, null, args);
    }

    /** Same, with the command's output and error streams given (tests capture them). */
    public static int run(String name, Object command, PrintWriter out, PrintWriter errOut, String... args) {
        // No option is a java.time or java.sql type, yet picocli registers their converters by reflection, loading
        // and initialising 82 JDK classes (DateTimeFormatter's tables among them) in every process.
        if (System.getProperty(CONVERTERS_EXCLUDES) == null) {
            System.setProperty(CONVERTERS_EXCLUDES, "java\\.time\\..*,java\\.sql\\..*");
        }
        Inputs.forget();
        CommandLine cl = model(command, args);
        if (out != null) {
            cl.setOut(out);
        }
        if (errOut != null) {
            cl.setErr(errOut);
        }
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.setUsageHelpWidth(120); // the examples in every footer are one command and its comment per line
        cl.setParameterExceptionHandler((ex, a) -> {
            if (java.util.Arrays.asList(a).contains("--help")) {
                // "--func --help": the option took --help for its value's place; the user asked for help
                ex.getCommandLine().usage(ex.getCommandLine().getOut());
                return EXIT_OK;
            }
            PrintWriter err = ex.getCommandLine().getErr();
            err.println(name + ": " + ex.getMessage() + " (see '" + name + " --help')");
            err.flush();
            return EXIT_BAD_INPUT;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> failed(name, ex, c.getErr()));
        return cl.execute(args);
    }

    /** What a command's exception comes to: one line on {@code err} and the exit code (picocli's handler too). */
    private static int failed(String name, Exception ex, PrintWriter err) {
        if (ReaderGone.in(ex)) {
            return EXIT_OK; // ... | head: the reader has what it wanted
        }
        err.println(name + ": " + describe(ex));
        if (System.getenv("PTFENCE_DEBUG") != null) {
            ex.printStackTrace(err);
        }
        err.flush();
        return isUserError(ex) ? EXIT_BAD_INPUT : EXIT_INTERNAL;
    }

    /**
     * Runs a command whose line {@link QuickLine#takeQuickly} took, as picocli's {@code execute} runs a parsed one:
     * the exit code is what {@code call} returns, an exception goes through the same handler.
     */
    public static int runTaken(String name, java.util.concurrent.Callable<?> command) {
        Inputs.forget();
        try {
            return command.call() instanceof Integer status ? status : EXIT_OK;
        } catch (Exception ex) {
            return failed(name, ex, stderr());
        }
    }

    /** stderr as picocli writes to it by default (its encoding: sun.stderr.encoding, else the default charset). */
    private static PrintWriter stderr() {
        String name = System.getProperty("sun.stderr.encoding");
        java.nio.charset.Charset cs = java.nio.charset.Charset.defaultCharset();
        if (name != null) {
            try {
                cs = java.nio.charset.Charset.forName(name.equalsIgnoreCase("cp65001") ? "UTF-8" : name);
            } catch (RuntimeException e) {
                // as picocli: an unknown name falls back to the default
            }
        }
        return new PrintWriter(new java.io.BufferedWriter(new java.io.OutputStreamWriter(System.err, cs)), true);
    }

    /**
     * The command's model with the subcommands {@code args} can reach: all of them when {@code args} is null (help
     * pages, man pages, completion) or asks for help; else those it names (see {@link LazySubcommands}).
     */
    public static CommandLine model(Object command, String... args) {
        CommandLine cl = new CommandLine(command);
        if (command instanceof LazySubcommands lazy) {
            java.util.Set<String> words = args == null ? java.util.Set.of() : new java.util.HashSet<>(java.util.Arrays.asList(args));
            boolean all = args == null || words.contains("--help") || words.contains("-h") || words.contains("help");
            if (!all && lazy.allWhenNoneNamed()) {
                all = lazy.subcommands().stream().noneMatch(s -> words.contains(s.name()));
            }
            for (LazySubcommands.Subcommand s : lazy.subcommands()) {
                if (all || words.contains(s.name())) {
                    cl.addSubcommand(s.name(), s.make().get());
                }
            }
        }
        return cl;
    }

    /** The whole model: every subcommand (help, man pages, completion). */
    public static CommandLine fullModel(Object command) {
        return model(command, (String[]) null);
    }

    /**
     * For commands that make few native calls (ptdecode, ptarchive: a handful of LMDB and directory calls per run):
     * jnr-ffi then binds a library's functions through reflection instead of generating a stub class with ASM at run
     * time, a class no start-up cache can keep: a third of {@code ptarchive ls}'s CPU (docs/install.md). ptrec, which
     * calls bpf() and perf_event_open in loops, keeps the stubs. An explicit -Djnr.ffi.asm.enabled wins.
     */
    public static void fewNativeCalls() {
        if (System.getProperty(JNR_ASM) == null) {
            System.setProperty(JNR_ASM, "false");
        }
    }

    /** Entry point for the launchers. */
    public static void main(String name, Object command, String... args) {
        String version = quickVersion(name, args);
        if (version != null) {
            System.out.println(version);
            System.exit(System.out.checkError() ? EXIT_INTERNAL : EXIT_OK);
        }
        if (command instanceof QuickLine quick && quick.takeQuickly(args)) {
            System.exit(runTaken(name, quick.taken()));
        }
        PrintWriter out = stdoutWriter();
        int status = run(name, command, out, null, args);
        try {
            out.flush();
        } catch (ReaderGone e) {
            // the reader has what it wanted
        }
        System.exit(status);
    }

    /**
     * The writer a command prints its lines to (picocli's {@code getOut()}, or a quickly taken line's): UTF-8 on
     * standard output, and quiet when its reader goes away ('ptarchive ls | head').
     */
    public static PrintWriter stdoutWriter() {
        return new PrintWriter(new java.io.OutputStreamWriter(Stdout.stream(), java.nio.charset.StandardCharsets.UTF_8),
                true);
    }

    /**
     * What {@code --version} (or {@code -V}) alone prints, without picocli: building a command's model reads
     * every option's annotation by reflection, the larger part of a start-up (docs/install.md); null for any other
     * command line, which picocli parses. The commands' {@code @Command(version)} is the same string.
     */
    static String quickVersion(String name, String... args) {
        return args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))
                ? Version.line(name) : null;
    }

    /** True if {@code ex} is the user's doing (bad input, a missing file), not ptfence's. */
    public static boolean isUserError(Throwable ex) {
        Throwable t = unwrap(ex);
        return t instanceof BadInputException || t instanceof OutputFailed || t instanceof NoSuchFileException
                || t instanceof AccessDeniedException || t instanceof java.io.FileNotFoundException
                || t instanceof java.nio.file.FileSystemException; // -o DIR, a read-only file system, ...
    }

    /** The one line that says what went wrong. */
    public static String describe(Throwable ex) {
        Throwable t = unwrap(ex);
        if (t instanceof BadInputException || t instanceof OutputFailed) {
            return t.getMessage();
        }
        if (t instanceof NoSuchFileException) {
            return "no such file: " + ((NoSuchFileException) t).getFile();
        }
        if (t instanceof AccessDeniedException) {
            return "permission denied: " + ((AccessDeniedException) t).getFile();
        }
        if (t instanceof java.nio.file.FileSystemException f) {
            return f.getFile() + ": " + (f.getReason() != null ? f.getReason() : inWords(f));
        }
        if (t instanceof OutOfMemoryError) {
            return "out of memory (raise it with JAVA_OPTS=-Xmx...)";
        }
        String msg = t.getMessage();
        return "internal error: " + t.getClass().getSimpleName() + (msg == null ? "" : ": " + msg)
                + " (set PTFENCE_DEBUG=1 for the stack trace)";
    }

    /** What a file system exception without a reason says, in words (the class name is no message). */
    private static String inWords(java.nio.file.FileSystemException f) {
        return f instanceof java.nio.file.FileAlreadyExistsException ? "already exists"
                : f instanceof java.nio.file.DirectoryNotEmptyException ? "directory not empty"
                : f instanceof java.nio.file.NotDirectoryException ? "not a directory"
                : f instanceof java.nio.file.NotLinkException ? "not a symbolic link"
                : f instanceof java.nio.file.FileSystemLoopException ? "a loop of symbolic links"
                : f instanceof java.nio.file.AtomicMoveNotSupportedException ? "cannot be renamed atomically there"
                : "file system error";
    }

    private static Throwable unwrap(Throwable ex) {
        OutputFailed failed = OutputFailed.in(ex);
        if (failed != null) {
            return failed; // however a decode wrapped it, the failed write is the story
        }
        Throwable t = ex;
        while ((t instanceof UncheckedIOException || t instanceof CommandLine.ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
