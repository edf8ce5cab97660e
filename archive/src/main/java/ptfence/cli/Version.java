package ptfence.cli;

/**
 * The version every command prints ({@code @Command(version = ...)}), in one constant so that {@link Tool#main}
 * can answer {@code --version} without building the command's picocli model, which reads every option's
 * annotation through reflection: most of a JVM's first 100 ms (docs/install.md, start-up).
 */
public final class Version {
    public static final String NUMBER = "0.1.0";

    private Version() {}
}
