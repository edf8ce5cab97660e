package ptfence.store;

import java.nio.file.Path;
import java.util.Map;

/**
 * Where the archive lives when nobody says: {@code --archive DIR}, else {@code $PTFENCE_ARCHIVE}, else
 * {@code /var/lib/ptfence/archive} for root and {@code ~/.local/share/ptfence/archive} for everyone else.
 */
public final class ArchiveLocation {
    /** Environment variable naming the archive directory. */
    public static final String ENV = "PTFENCE_ARCHIVE";
    /** Default for root: one archive for the machine's captures. */
    public static final Path ROOT_DEFAULT = Path.of("/var/lib/ptfence/archive");

    private ArchiveLocation() {}

    /** Resolves the archive directory from an optional explicit directory and the process environment. */
    public static Path resolve(Path explicit) {
        return resolve(explicit, System.getenv(), System.getProperty("user.home"), isRoot());
    }

    /** Same rule with the inputs given, for tests. */
    static Path resolve(Path explicit, Map<String, String> env, String home, boolean root) {
        if (explicit != null) {
            return explicit;
        }
        String fromEnv = env.get(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            return Path.of(fromEnv);
        }
        if (root) {
            return ROOT_DEFAULT;
        }
        return Path.of(home, ".local", "share", "ptfence", "archive");
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }
}
