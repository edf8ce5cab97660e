package ptfence.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a child JVM like this one: same java, same class path, the opens lmdbjava needs on Java 17
 * (and on the release's JDK 25 runtime the flags bin/ptfence-launch gives it), and a quick start (serial GC, C1
 * only). Used where a job runs apart so that a crash in native code (LMDB on a damaged file) ends that child, not
 * the command.
 */
public final class JavaChild {
    private JavaChild() {}

    public static List<String> command(List<String> jvmOptions, String mainClass, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-CreateCoredumpOnCrash"));
        if (Runtime.version().feature() >= 23) {
            // the release's JDK 25 runtime would warn on stderr that jffi and lmdbjava use native code and Unsafe
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"));
        }
        for (String p : List.of("jffi.boot.library.path", "jna.boot.library.path", "lmdbjava.native.lib")) {
            if (System.getProperty(p) != null && !(p.equals("lmdbjava.native.lib")
                    && System.getProperty(ptfence.store.NativeLmdb.CHOSEN) != null)) {
                // the release's unpacked native libraries (bin/ptfence-launch); a per-user cached copy is not passed
                // on: the child may run as another user, and finds its own
                cmd.add("-D" + p + "=" + System.getProperty(p));
            }
        }
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(args);
        return cmd;
    }
}
