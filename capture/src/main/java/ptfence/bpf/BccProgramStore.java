package ptfence.bpf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import ptfence.region.BpfMetadata;

/**
 * bcc's program store: for every program it loads, bcc writes the C source of the function to
 * {@code /var/tmp/bcc/bpf_prog_<tag>/<function>.c} (and {@code <function>.rewritten.c}, after its rewriter), the tag
 * printed as a number ({@code %llx}: no leading zeros). bcc loads programs without BTF, so the kernel keeps no line
 * info for them and these files are all the source there is: the fence archives them with the program, while they
 * are there (bcc never removes them, but /var/tmp is cleaned and other machines lack them).
 * <p>
 * The directory is world-writable, so what it holds is what some user put there under the program's tag; the
 * archive keeps it as found and names it as bcc's.
 */
public final class BccProgramStore {
    public static final Path DEFAULT_ROOT = Path.of("/var/tmp/bcc");
    /** A store that finds nothing (tests, or where the caller wants no look-ups). */
    public static final BccProgramStore NONE = new BccProgramStore(null);
    private static final int MAX_FILES = 16, MAX_FILE_BYTES = 1 << 20, CACHED_TAGS = 1024;

    private final Path root;
    /**
     * Tags found: a program has one region per function, and a churn reloads one tag often. Misses are not kept:
     * bcc writes the files just after the load returns, so a later look (at the program's end) may find them.
     */
    private final Map<String, List<BpfMetadata.SourceFile>> seen = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, List<BpfMetadata.SourceFile>> eldest) {
            return size() > CACHED_TAGS;
        }
    };

    public BccProgramStore(Path root) {
        this.root = root;
    }

    /** The store at bcc's default place. */
    public static BccProgramStore standard() {
        return new BccProgramStore(DEFAULT_ROOT);
    }

    /**
     * The files bcc kept for the program with this tag (16 hex digits), by name; empty if none. Files larger than
     * 1 MiB, links and more than 16 files are left out; a file that cannot be read is skipped.
     */
    public synchronized List<BpfMetadata.SourceFile> sources(String tagHex) {
        if (root == null || tagHex == null || tagHex.isEmpty()) return List.of();
        List<BpfMetadata.SourceFile> known = seen.get(tagHex);
        if (known != null) return known;
        List<BpfMetadata.SourceFile> found = read(tagHex);
        if (!found.isEmpty()) seen.put(tagHex, found);
        return found;
    }

    /** The program's metadata with bcc's files when the kernel gave it no line info (else unchanged). */
    public BpfMetadata complete(BpfMetadata m) {
        if (m.lineInfo().length != 0 || !m.sources().isEmpty()) return m;
        List<BpfMetadata.SourceFile> files = sources(m.tag());
        return files.isEmpty() ? m : m.withSources(files);
    }

    /** bcc's directory name for a tag: {@code bpf_prog_%llx} of the tag's 8 bytes read as a big-endian number. */
    public static String directoryName(String tagHex) {
        String digits = tagHex.toLowerCase(java.util.Locale.ROOT).replaceFirst("^0+(?=.)", "");
        return "bpf_prog_" + digits;
    }

    private List<BpfMetadata.SourceFile> read(String tagHex) {
        Path dir = root.resolve(directoryName(tagHex));
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) return List.of();
        List<BpfMetadata.SourceFile> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : files.sorted().toList()) {
                if (out.size() == MAX_FILES) break;
                if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) continue;
                try (InputStream in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
                    byte[] content = in.readNBytes(MAX_FILE_BYTES + 1);
                    if (content.length <= MAX_FILE_BYTES) {
                        out.add(new BpfMetadata.SourceFile(p.getFileName().toString(), content));
                    }
                } catch (IOException e) {
                    // unreadable (removed meanwhile, no permission): the others still count
                }
            }
        } catch (IOException e) {
            return List.copyOf(out);
        }
        return List.copyOf(out);
    }
}
