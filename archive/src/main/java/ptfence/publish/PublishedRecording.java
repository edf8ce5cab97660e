package ptfence.publish;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;
import ptfence.cli.JsonReader;
import ptfence.recording.Recording;
import ptfence.store.ContentKey;

/**
 * A recording as a publish tree knows it: which images it names. {@code gc --published} keeps every image that a
 * recording published within the keep window names. One writer ({@link #toJson}) and one parser ({@link #parse}) of
 * the manifest file, a single JSON object:
 *
 * <pre>{@code
 * {"format":"ptfence.published/1","recording":"ID","host":"HOST","boot_id":"B","start":N,"end":N|null,
 *  "created_ms":N,"images":["64 hex digits",...]}
 * }</pre>
 *
 * @param recording the recording (its id, boot, perf times and creation time on the publishing host)
 * @param host      the publishing host's name (for people reading the tree)
 * @param images    the content keys of every image its regions use
 */
public record PublishedRecording(Recording recording, String host, SortedSet<ContentKey> images) {
    /** The manifest format this build writes and reads. */
    public static final String FORMAT = "ptfence.published/1";

    public PublishedRecording {
        images = java.util.Collections.unmodifiableSortedSet(new TreeSet<>(images));
    }

    /** The manifest's bytes (UTF-8 JSON, one line). */
    public byte[] toJson() {
        StringBuilder keys = new StringBuilder("[");
        for (ContentKey k : images) {
            keys.append(keys.length() > 1 ? "," : "").append('"').append(k.hex()).append('"');
        }
        Recording r = recording;
        Json j = new Json().field("format", FORMAT).field("recording", r.id()).field("host", host)
                .field("boot_id", r.bootId()).field("start", r.startTime());
        if (r.endTime() == Recording.RUNNING) {
            j.raw("end", "null");
        } else {
            j.field("end", r.endTime());
        }
        return (j.field("created_ms", r.createdMillis()).raw("images", keys + "]") + "\n")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** Parses a manifest; {@code where} names the file in the one-line error of a malformed one. */
    public static PublishedRecording parse(byte[] json, String where) {
        try {
            Map<String, Object> m = JsonReader.object(new String(json, StandardCharsets.UTF_8).strip());
            if (!FORMAT.equals(m.get("format"))) {
                throw new BadInputException(where + ": not a ptfence manifest of format " + FORMAT + " (format "
                        + m.get("format") + ")");
            }
            Object end = m.get("end");
            Recording r = new Recording(string(m, "recording"), "", string(m, "boot_id"), number(m, "start"),
                    end == null ? Recording.RUNNING : number(m, "end"), number(m, "created_ms"));
            SortedSet<ContentKey> keys = new TreeSet<>();
            if (!(m.get("images") instanceof List<?> list)) {
                throw new IllegalArgumentException("no images list");
            }
            for (Object o : list) {
                if (!(o instanceof String s)) {
                    throw new IllegalArgumentException("an image key is not a string");
                }
                keys.add(ContentKey.parse(s));
            }
            return new PublishedRecording(r, string(m, "host"), keys);
        } catch (BadInputException e) {
            throw e.getMessage().startsWith(where) ? e : new BadInputException(where + ": " + e.getMessage());
        } catch (RuntimeException e) {
            throw new BadInputException(where + ": malformed manifest (" + e.getMessage() + ")");
        }
    }

    private static String string(Map<String, Object> m, String key) {
        if (!(m.get(key) instanceof String s)) {
            throw new IllegalArgumentException("field '" + key + "' missing or not a string");
        }
        return s;
    }

    private static long number(Map<String, Object> m, String key) {
        if (!(m.get(key) instanceof Long n)) {
            throw new IllegalArgumentException("field '" + key + "' missing or not an integer");
        }
        return n;
    }
}
