package ptfence.store;

import java.util.function.Consumer;
import ptfence.cli.Progress;

/**
 * Re-hashes every image and checks that the two image tables agree. Problems go to the sink as one line
 * each; the counts come back.
 */
public final class Verifier {
    private Verifier() {}

    /** What was checked. */
    public record Counts(long images, long bytes) {}

    /** Checks every image in the snapshot. */
    public static Counts images(Snapshot s, Consumer<String> problems) {
        return images(s, problems, Progress.NONE);
    }

    /** Checks every image in the snapshot, counting them on {@code progress}. */
    public static Counts images(Snapshot s, Consumer<String> problems, Progress progress) {
        long[] n = {0, 0};
        progress.phase("re-hashing images", s.count(Table.IMAGES));
        s.forEachPrefix(Table.IMAGES, new byte[0], (k, v) -> {
            progress.add(1);
            n[0]++;
            n[1] += v.length;
            if (k.length != ContentKey.LENGTH) {
                problems.accept("image table holds a malformed key of " + k.length + " bytes");
                return true;
            }
            ContentKey key = ContentKey.fromBytes(k);
            if (!key.matches(v)) {
                problems.accept("image " + key.hex() + " is damaged: its bytes hash to " + ContentKey.of(v).hex());
            }
            byte[] info = s.raw(Table.IMAGE_INFO, k);
            if (info == null || info.length != ImageInfo.ENCODED_LENGTH) {
                problems.accept("image " + key.hex() + " has no (or a malformed) info record");
            } else if (ImageInfo.decode(info).length() != v.length) {
                problems.accept("image " + key.hex() + " info says " + ImageInfo.decode(info).length()
                        + " bytes, image has " + v.length);
            }
            return true;
        });
        s.forEachPrefix(Table.IMAGE_INFO, new byte[0], (k, v) -> {
            if (s.raw(Table.IMAGES, k) == null) {
                problems.accept("image " + (k.length == ContentKey.LENGTH ? ContentKey.fromBytes(k).hex() : "?")
                        + " has an info record but no bytes");
            }
            return true;
        });
        return new Counts(n[0], n[1]);
    }
}
