package ptfence.cli;

import java.util.List;
import java.util.function.Supplier;

/**
 * A command whose subcommands are built only when a command line names them ({@link Tool#model}). picocli reads every
 * option of every declared subcommand by reflection when the parent's model is built, most of a small run's start-up
 * (docs/install.md): {@code ptarchive ls} built ten subcommands' models, {@code ptdecode x.perf} two it never used.
 */
public interface LazySubcommands {
    /** One subcommand: its class and how to make it; its name is the one its {@code @Command} gives. */
    record Subcommand(Class<?> type, Supplier<Object> make) {
        public String name() {
            return type.getAnnotation(picocli.CommandLine.Command.class).name();
        }
    }

    /** The subcommands, in the order help lists them. */
    List<Subcommand> subcommands();

    /**
     * Whether a command line that names none of them still needs them all: true where the bare command lists them or
     * a wrong word should be refused as picocli refuses it among subcommands; false where the command itself takes
     * the arguments (ptdecode's recording).
     */
    default boolean allWhenNoneNamed() {
        return true;
    }
}
