package ptfence.debuginfod;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The cache elfutils' client library keeps (and gdb, perf and debuginfod-find share), used the way the library uses
 * it: {@code CACHE/BUILDID/executable} holds a file fetched before; an empty one is a recent miss (not asked again for
 * {@code cache_miss_s} seconds, default 600); the control files {@code cache_clean_interval_s} (default one day) and
 * {@code max_unused_age_s} (default one week) say when files not read for that long are removed. Files appear by
 * rename from a temporary name, mode 0400, in a 0700 directory.
 */
public final class ClientCache {
    static final long CLEAN_INTERVAL_DEFAULT = 86400;
    static final long MAX_UNUSED_AGE_DEFAULT = 604800;
    static final long CACHE_MISS_DEFAULT = 600;
    private static final Pattern ENTRY = Pattern.compile(".*/[a-f0-9]+(/debuginfo|/executable|/source.*|)$");

    /** What the cache says about a file. */
    public sealed interface Lookup {
        /** The file, fetched before. */
        record Hit(Path file) implements Lookup {}

        /** A server said "not found" less than {@code cache_miss_s} ago. */
        record RecentMiss(long secondsLeft) implements Lookup {}

        /** Nothing known: ask. */
        record Unknown() implements Lookup {}
    }

    private final Path root;

    public ClientCache(Path root) {
        this.root = root;
    }

    public Path root() {
        return root;
    }

    /** Where a file of this build id and type ("executable", "debuginfo") is kept. */
    public Path path(String buildIdHex, String type) {
        return root.resolve(buildIdHex).resolve(type);
    }

    /** Looks a file up, as the library does before it asks any server. */
    public Lookup lookup(String buildIdHex, String type) {
        Path p = path(buildIdHex, type);
        try {
            BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
            if (a.size() > 0) {
                return Files.isReadable(p) ? new Lookup.Hit(p) : unreadable(p);
            }
            long age = (System.currentTimeMillis() - a.lastModifiedTime().toMillis()) / 1000;
            long missFor = control("cache_miss_s", CACHE_MISS_DEFAULT);
            if (age <= missFor) {
                return new Lookup.RecentMiss(missFor - age);
            }
            Files.deleteIfExists(p);
        } catch (NoSuchFileException e) {
            // not cached
        } catch (IOException e) {
            // unreadable cache: ask the servers
        }
        return new Lookup.Unknown();
    }

    private Lookup unreadable(Path p) {
        try {
            Files.deleteIfExists(p); // the library removes old 000-mode entries
        } catch (IOException e) {
            // leave it
        }
        return new Lookup.Unknown();
    }

    /** Stores a fetched file (whole, by rename) and returns where it is. */
    public Path store(String buildIdHex, String type, byte[] content, FileTime modified) throws IOException {
        Path target = path(buildIdHex, type);
        Files.createDirectories(root);
        try {
            Files.createDirectory(target.getParent(), PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // another client made it
        }
        Path temp = target.resolveSibling(type + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        try {
            Files.write(temp, content);
            if (modified != null) {
                Files.setLastModifiedTime(temp, modified);
            }
            Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("r--------"));
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temp);
        }
        return target;
    }

    /** Notes that every server answered "not found" (an empty file), as the library does. */
    public void storeMiss(String buildIdHex, String type) {
        Path target = path(buildIdHex, type);
        try {
            Files.createDirectories(target.getParent());
            Files.createFile(target);
        } catch (IOException e) {
            // a file is there, or the cache is not writable: nothing to note
        }
    }

    /**
     * Removes files not read for {@code max_unused_age_s}, and empty directories that old, once per
     * {@code cache_clean_interval_s} (the interval file's time says when the last cleaning was), as the library does
     * before each query.
     */
    public void cleanIfDue() {
        try {
            Files.createDirectories(root);
            Path interval = root.resolve("cache_clean_interval_s");
            long every = control("cache_clean_interval_s", CLEAN_INTERVAL_DEFAULT);
            long now = System.currentTimeMillis();
            if (now - Files.getLastModifiedTime(interval).toMillis() < every * 1000) {
                return;
            }
            Files.setLastModifiedTime(interval, FileTime.fromMillis(now));
            long maxUnused = control("max_unused_age_s", MAX_UNUSED_AGE_DEFAULT) * 1000;
            List<Path> all = new ArrayList<>();
            try (Stream<Path> s = Files.walk(root)) {
                s.filter(p -> ENTRY.matcher(p.toString()).matches()).forEach(all::add);
            }
            all.sort(Comparator.comparingInt(Path::getNameCount).reversed()); // files before their directories
            for (Path p : all) {
                BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
                if (a.isRegularFile() && now - a.lastAccessTime().toMillis() >= maxUnused
                        || a.isDirectory() && !p.equals(root) && now - a.lastModifiedTime().toMillis() >= maxUnused) {
                    try {
                        Files.deleteIfExists(p);
                    } catch (IOException e) {
                        // a directory still holding something, or a race with another client
                    }
                }
            }
        } catch (IOException e) {
            // cleaning is best effort, as in the library
        }
    }

    /** A control file's number, written with its default when absent (as the library does). */
    private long control(String name, long dflt) throws IOException {
        Path p = root.resolve(name);
        try {
            String s = Files.readString(p).strip();
            return s.isEmpty() ? dflt : ClientSettings.atol(s);
        } catch (NoSuchFileException e) {
            Files.createDirectories(root);
            try {
                Files.writeString(p, Long.toString(dflt), java.nio.file.StandardOpenOption.CREATE_NEW,
                        java.nio.file.StandardOpenOption.WRITE);
            } catch (FileAlreadyExistsException raced) {
                return control(name, dflt);
            }
            return dflt;
        }
    }
}
