package ptfence.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a child JVM like this one: same java, same class path, the opens lmdbjava needs on Java 17,
 * and a quick start (serial GC, C1 only). Used where a job runs apart so that a crash in native code (LMDB on a
 * damaged file) ends that child, not the command.
 */
public final class JavaChild {
    private JavaChild() {}

    public static List<String> command(List<String> jvmOptions, String mainClass, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-CreateCoredumpOnCrash"));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(args);
        return cmd;
    }
}
