package ptfence.store;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Where lmdbjava loads LMDB from. Left alone, lmdbjava 0.9.0 copies the library out of its jar into
 * {@code java.io.tmpdir} as {@code lmdbjava-native-library-*.so} at every start and deletes it only at a normal exit:
 * each JVM that is killed leaves one behind (71 after one test run). It reads the system property
 * {@code lmdbjava.native.lib} (an external library) before extracting anything; the release launcher sets it to the
 * copy bin/release unpacked. Everywhere else (plain JDK: tests, their child JVMs, a developer's java -cp) the jar's
 * library is copied once per content into a per-user cache ({@code $XDG_CACHE_HOME/ptfence/native}, else
 * {@code ~/.cache/ptfence/native}, else a 0700 directory of this user's under {@code java.io.tmpdir}), by rename so
 * that JVMs starting together never load a half-written file, and that path is given to lmdbjava.
 */
public final class NativeLmdb {
    static final String PROPERTY = "lmdbjava.native.lib";
    /** Set when the path is this class's choice (a per-user cache), not the launcher's: child JVMs choose their own. */
    public static final String CHOSEN = "ptfence.lmdb.cached";

    private NativeLmdb() {}

    /** Sets {@link #PROPERTY} unless it is set; must run before any lmdbjava class is initialized. */
    static synchronized void locate() {
        if (System.getProperty(PROPERTY) != null || System.getProperty("lmdbjava.embedded.lib") != null) {
            return;
        }
        String resource = resource();
        if (resource == null) {
            return; // a platform without an embedded library: lmdbjava says what to do
        }
        byte[] lib;
        try (InputStream in = NativeLmdb.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                return;
            }
            lib = in.readAllBytes();
        } catch (IOException e) {
            return;
        }
        String name = "liblmdb-" + sha256(lib).substring(0, 16) + ".so";
        for (Path dir : candidates()) {
            Path p = place(dir, name, lib);
            if (p != null) {
                System.setProperty(PROPERTY, p.toString());
                System.setProperty(CHOSEN, "true");
                return;
            }
        }
        // nowhere of our own to write: lmdbjava's own extraction, as before
    }

    /** The jar's resource for this platform, as lmdbjava names it (org/lmdbjava/ARCH-OS.so). */
    private static String resource() {
        String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch.equals("aarch64") ? "aarch64" : null;
        if (a == null || !os.contains("linux")) {
            return null;
        }
        return "org/lmdbjava/" + a + "-linux-gnu.so";
    }

    private static java.util.List<Path> candidates() {
        java.util.List<Path> out = new java.util.ArrayList<>();
        String xdg = System.getenv("XDG_CACHE_HOME");
        String home = System.getProperty("user.home");
        if (xdg != null && xdg.startsWith("/")) {
            out.add(Path.of(xdg, "ptfence", "native"));
        } else if (home != null && home.startsWith("/") && !home.equals("/")) {
            out.add(Path.of(home, ".cache", "ptfence", "native"));
        }
        out.add(Path.of(System.getProperty("java.io.tmpdir", "/tmp"), "ptfence-native-"
                + System.getProperty("user.name", "user")));
        return out;
    }

    /** The library at {@code dir/name}, written if absent; null when {@code dir} is not a private one of ours. */
    private static Path place(Path dir, String name, byte[] lib) {
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
            // in a shared directory (the tmpdir fallback) only a directory this user owns, not a link, is trusted
            if (Files.isSymbolicLink(dir) || !Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName()
                    .equals(System.getProperty("user.name"))
                    || Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS).stream()
                            .anyMatch(p -> p.name().startsWith("GROUP_WRITE") || p.name().startsWith("OTHERS_WRITE"))) {
                return null;
            }
            Path target = dir.resolve(name);
            if (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && Files.size(target) == lib.length) {
                return target;
            }
            Path temp = Files.createTempFile(dir, name, ".part");
            try {
                Files.write(temp, lib);
                try {
                    Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            } finally {
                Files.deleteIfExists(temp);
            }
            return target;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return null;
        }
    }

    private static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
