package ptfence.cli;

/**
 * The version every command prints ({@code @Command(version = ...)}), in one constant so that {@link Tool#main}
 * can answer {@code --version} without building the command's picocli model, which reads every option's
 * annotation through reflection: most of a JVM's first 100 ms (docs/install.md, start-up).
 */
public final class Version {
    public static final String NUMBER = "0.1.0";

    private Version() {}

    /**
     * What {@code name --version} prints. String.concat, not {@code +}: javac makes {@code +} an invokedynamic whose
     * first run sets up StringConcatFactory and spins a method handle class, about 300 classes and 10 ms of CPU of
     * the ~70 that a lone {@code --version} costs (docs/install.md, start-up).
     */
    static String line(String name) {
        return name.concat(" ").concat(NUMBER);
    }

    /**
     * {@code Version COMMAND}: what {@code COMMAND --version} prints. The release launcher runs this for a lone
     * {@code --version}/{@code -V} on a class path of this module's jar alone: the JVM then opens one jar instead of
     * eighteen and loads a few hundred classes fewer (Tool.EXIT_INTERNAL is a constant: no picocli class is needed) (docs/install.md, start-up).
     */
    public static void main(String[] args) {
        System.out.println(line(args[0]));
        if (System.out.checkError()) {
            System.exit(Tool.EXIT_INTERNAL);
        }
    }
}
