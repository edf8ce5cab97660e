package ptfence.guest;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A stock Debian kernel booted under QEMU for tests that need what this machine's kernel lacks (kprobes, modules,
 * tracefs, BPF trampolines, /proc/kcore, older BTF layouts). The kernel package is looked up by name when a test asks
 * for it (the package {@code linux-image-amd64} or {@code linux-image-6.12-amd64} depends on today), extracted, never
 * installed, into {@code ~/.cache/ptfence/vm/<package>} and reused by later runs. The guest's root is this machine's
 * root, shared read-only over 9p under a tmpfs overlay, so the JDK, the project's classes and jars, perf and bpftool are
 * all there at the same paths; a boot's output folder is shared read-write at {@code /mnt/out}, and results come back
 * as files in it. A boot runs several {@link Check}s in order, each in its own folder with its own time bound, and
 * powers off after the last or when anything fails; QEMU itself is bounded too (300 s by default).
 *
 * <p>TCG runs single-threaded: with {@code thread=multi} JIT-compiled Java code in the guest died with SIGILL/SIGSEGV
 * in most boots (a pure-Java program included), with {@code thread=single} never.
 */
public final class GuestKernel {
    /** Debian 12's kernels: its default (6.1) and the newer one it offers (6.12). */
    public static final List<String> DEBIAN_12 = List.of("linux-image-amd64", "linux-image-6.12-amd64");

    /** The kernels the guest tests boot: {@code -Dptfence.guest.kernels=a,b} (package names), else {@link #DEBIAN_12}. */
    public static List<String> kernels() {
        String k = System.getProperty("ptfence.guest.kernels", "");
        return k.isBlank() ? DEBIAN_12 : List.of(k.split(","));
    }
    /**
     * Each boot's bound: 720 s, or {@code -Dptfence.guest.bound=SECONDS} for longer runs by hand. A bound for a hung
     * guest, not a speed goal: single-threaded TCG runs at whatever share of a core the host leaves it, and on 6.1 at
     * host load 12 ptrec alone took 225 s to start (the verifier's walk of the chunked hooks), past the 270 s a
     * 300 s bound left the churn.
     */
    public static final Duration BOOT_BOUND = Duration.ofSeconds(Integer.getInteger("ptfence.guest.bound", 720));

    private static final Map<String, Object> PREPARED = new ConcurrentHashMap<>();

    private final String meta;
    private final Path dir;
    private final String release;

    private GuestKernel(String meta, Path dir, String release) {
        this.meta = meta;
        this.dir = dir;
        this.release = release;
    }

    /** The package name the test asked for ({@code linux-image-amd64}). */
    public String meta() {
        return meta;
    }

    /** The kernel as an ELF file (with its .BTF section), or null where it could not be unpacked. */
    public Path vmlinux() {
        Path v = dir.resolve("vmlinux");
        return Files.exists(v) ? v : null;
    }

    /** The kernel release the package holds ({@code 6.1.0-41-amd64}). */
    public String release() {
        return release;
    }

    /**
     * The kernel behind package {@code meta}, ready to boot; the calling test is skipped, with the reason, where this
     * is not root, QEMU is missing or the package cannot be had.
     */
    public static GuestKernel of(String meta) {
        Object got = PREPARED.computeIfAbsent(meta, GuestKernel::prepare);
        Assumptions.assumeTrue(got instanceof GuestKernel, () -> "no guest kernel " + meta + ": " + got);
        return (GuestKernel) got;
    }

    /** A GuestKernel, or the reason there is none (a String). */
    private static Object prepare(String meta) {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "needs root (QEMU exports this machine's root to the guest)";
        }
        if (!onPath("qemu-system-x86_64")) return "qemu-system-x86_64 is not installed (bin/setup installs it)";
        try {
            Path cache = cacheRoot();
            Files.createDirectories(cache);
            Path init = cache.resolve("init"), script = cache.resolve("prepare.sh");
            resource("init", init);
            resource("prepare.sh", script);
            Process p = new ProcessBuilder("bash", script.toString(), meta, cache.toString(), init.toString())
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(15, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                return "preparing " + meta + " took over 15 minutes";
            }
            String last = out.substring(out.lastIndexOf('\n') + 1);
            if (p.exitValue() != 0) return out.isEmpty() ? "prepare.sh exited " + p.exitValue() : out;
            Path dir = Path.of(last);
            return new GuestKernel(meta, dir, Files.readString(dir.resolve("ready")).strip());
        } catch (IOException e) {
            return "preparing " + meta + ": " + e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /** {@code $XDG_CACHE_HOME/ptfence/vm}, else {@code ~/.cache/ptfence/vm}: outside any checkout, kept across runs. */
    static Path cacheRoot() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isEmpty() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("ptfence").resolve("vm");
    }

    private static void resource(String name, Path to) throws IOException {
        // a name of its own: the kernels are prepared at once, in two threads of one JVM
        Path tmp = Files.createTempFile(to.getParent(), to.getFileName() + ".", ".tmp");
        try (InputStream in = GuestKernel.class.getResourceAsStream("/ptfence/guest/" + name)) {
            if (in == null) throw new IOException("test resource ptfence/guest/" + name + " missing");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        }
        Files.move(tmp, to, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, tool))) return true;
        }
        return false;
    }

    /**
     * One part of a boot: {@code script} (sh) runs in the guest in {@code /mnt/out/<name>} with {@code $OUT} naming that
     * folder, its stdout and stderr in {@code log}, its exit status in {@code rc} (124 past {@code seconds}).
     */
    public record Check(String name, int seconds, String script) {
        public Check {
            if (!name.matches("[A-Za-z0-9_.-]+")) throw new IllegalArgumentException("check name " + name);
        }
    }

    /** What one boot left: its folder on this machine, the serial console, wall time, and whether QEMU was cut off. */
    public record Boot(GuestKernel kernel, Path out, double seconds, boolean timedOut) {
        public String serial() throws IOException {
            return Files.readString(out.resolve("serial.log"), StandardCharsets.ISO_8859_1);
        }

        /** The check's folder ({@code /mnt/out/<name>} in the guest). */
        public Path dir(String check) {
            return out.resolve(check);
        }

        /** The check's exit status, or -1 where it never ended (the guest died or was cut off first). */
        public int rc(String check) throws IOException {
            Path rc = dir(check).resolve("rc");
            return Files.exists(rc) ? Integer.parseInt(Files.readString(rc).strip()) : -1;
        }

        public String log(String check) throws IOException {
            Path log = dir(check).resolve("log");
            return Files.exists(log) ? Files.readString(log, StandardCharsets.ISO_8859_1) : "";
        }

        /** A line for a failing assertion: the check's status, its log's tail and the console's tail. */
        public String describe(String check) throws IOException {
            String serial = serial();
            return kernel.meta + " (" + kernel.release + "), check " + check + ": rc " + rc(check)
                    + (timedOut ? ", QEMU cut off after " + seconds + " s" : "") + "\n--- log (tail):\n"
                    + tail(log(check), 6000) + "\n--- console (tail):\n" + tail(serial, 3000);
        }

        private static String tail(String s, int n) {
            return s.length() <= n ? s : "..." + s.substring(s.length() - n);
        }
    }

    /** Boots with {@link #BOOT_BOUND}. */
    public Boot boot(Path out, List<Check> checks) throws IOException, InterruptedException {
        return boot(out, checks, BOOT_BOUND);
    }

    /**
     * The guest's /tmp is a tmpfs of its own, which would hide a checkout cloned under the host's /tmp (its classes,
     * jars and scripts, which the checks run from their host paths): its top folder there is bound back over it.
     */
    private static String guestTmp() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath().normalize();
        if (!dir.startsWith("/tmp") || dir.getNameCount() < 2) return "mount -t tmpfs -o size=2G tmpfs /tmp\n";
        String top = "/tmp/" + dir.getName(1);
        return "mkdir -p /mnt/hosttmp && mount --bind /tmp /mnt/hosttmp\n"
                + "mount -t tmpfs -o size=2G tmpfs /tmp; mkdir -p '" + top + "' && mount --bind '/mnt/hosttmp/"
                + dir.getName(1) + "' '" + top + "'\n";
    }

    /**
     * Boots this kernel, runs {@code checks} in order (each bounded by its own seconds; one that fails does not stop the
     * next), powers off. {@code out} (a new folder on this machine) receives every check's files and the console log.
     */
    public Boot boot(Path out, List<Check> checks, Duration bound) throws IOException, InterruptedException {
        Files.createDirectories(out);
        StringBuilder s = new StringBuilder();
        s.append("#!/bin/sh\n")
                .append("# stage 2 (PID 1 in the guest): everything in /mnt/out, then power off\n")
                .append("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8\n")
                .append("exec > /dev/console 2>&1\n")
                .append("trap 'echo o > /proc/sysrq-trigger' EXIT\n")
                .append(guestTmp())
                .append("mount -t tmpfs tmpfs /run\n")
                .append("mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null\n")
                .append("mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null\n")
                .append("mount -t bpf bpf /sys/fs/bpf 2>/dev/null\n")
                .append("echo \"guest: $(uname -r), up $(cut -d' ' -f1 /proc/uptime) s\"\n")
                .append("uname -r > /mnt/out/release\n");
        for (Check c : checks) {
            Path d = out.resolve(c.name());
            Files.createDirectories(d);
            Files.writeString(d.resolve("run.sh"), c.script());
            s.append("echo \"guest: check ").append(c.name()).append(" at $(cut -d' ' -f1 /proc/uptime) s\"\n")
                    .append("cd /mnt/out/").append(c.name()).append(" && OUT=/mnt/out/").append(c.name())
                    .append(" timeout -k 5 ").append(c.seconds()).append(" sh ./run.sh > log 2>&1 < /dev/null; echo $? > rc\n")
                    .append("echo \"guest: check ").append(c.name()).append(" rc $(cat rc) at $(cut -d' ' -f1 /proc/uptime) s\"\n")
                    .append("cd /\n");
        }
        s.append("echo \"guest: done at $(cut -d' ' -f1 /proc/uptime) s\"\nsync\n");
        Files.writeString(out.resolve("stage2.sh"), s.toString());

        Path kernel = Files.exists(dir.resolve("vmlinux")) ? dir.resolve("vmlinux")
                : dir.resolve("kernel/boot/vmlinuz-" + release);
        List<String> cmd = new ArrayList<>(List.of("qemu-system-x86_64", "-nodefaults", "-no-user-config",
                "-nographic", "-monitor", "none", "-serial", "stdio", "-machine", "q35", "-cpu", "max",
                "-accel", "tcg,thread=single", "-smp", "2", "-m", "4G", "-no-reboot",
                "-kernel", kernel.toString(), "-initrd", dir.resolve("initramfs.cpio.gz").toString(),
                // quiet, tsc=reliable and mitigations=off made process starts 2-3x faster under TCG
                "-append", "console=ttyS0 panic=-1 quiet tsc=reliable mitigations=off ptstage2=/mnt/out/stage2.sh"
                        + " ptmods=" + dir.resolve("kernel/lib/modules"),
                "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
                "-virtfs", "local,path=" + out + ",mount_tag=out,security_model=none,multidevs=remap"));
        long t0 = System.nanoTime();
        Process q = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(out.resolve("serial.log").toFile()).redirectInput(ProcessBuilder.Redirect.PIPE).start();
        // a JVM that ends first (a cancelled build) takes its guests with it: two run at once, minutes each
        Thread reaper = new Thread(q::destroyForcibly);
        Runtime.getRuntime().addShutdownHook(reaper);
        boolean ended;
        try {
            ended = q.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS);
            if (!ended) {
                q.destroyForcibly();
                q.waitFor(30, TimeUnit.SECONDS);
            }
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(reaper);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        return new Boot(this, out, Math.round(seconds * 10) / 10.0, !ended);
    }

    /**
     * A shell command line that starts {@code mainClass} in the guest with this JVM (its java, class path and the
     * project's --add-opens), all visible there at the same paths.
     */
    public static String java(String mainClass, String... args) {
        StringBuilder s = new StringBuilder(quote(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        // C1 only, one compiler thread, the serial collector: under TCG a JVM's own threads compete with the work
        // for the one host thread that runs every vCPU
        for (String a : List.of("-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-XX:+UseSerialGC",
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens",
                "java.base/sun.nio.ch=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), mainClass)) {
            s.append(' ').append(quote(a));
        }
        for (String a : args) s.append(' ').append(quote(a));
        return s.toString();
    }

    /** Single-quoted for sh. */
    public static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
