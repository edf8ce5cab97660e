package ptfence.recording;

import java.nio.charset.StandardCharsets;
import ptfence.cli.BadInputException;

/**
 * Something pinned against gc.
 *
 * @param type  what the value names
 * @param value recording id, 64-hex content key, or region name
 */
public record PinTarget(Type type, String value) {
    /** What a pin protects. */
    public enum Type {
        /** A recording and everything it needs, whatever its age or perf.data. */
        RECORDING,
        /** One image. */
        IMAGE,
        /** Every region with this name, and their images. */
        NAME
    }

    /** The PINS table key: "recording:ID", "image:HEX" or "name:NAME". */
    public byte[] key() {
        return (type.name().toLowerCase(java.util.Locale.ROOT) + ":" + value).getBytes(StandardCharsets.UTF_8);
    }

    static PinTarget fromKey(byte[] key) {
        String s = new String(key, StandardCharsets.UTF_8);
        int colon = s.indexOf(':');
        try {
            return new PinTarget(Type.valueOf(s.substring(0, Math.max(colon, 0)).toUpperCase(java.util.Locale.ROOT)),
                    s.substring(colon + 1));
        } catch (IllegalArgumentException e) {
            throw new BadInputException("archive: malformed pin '" + s + "'");
        }
    }

    @Override
    public String toString() {
        return new String(key(), StandardCharsets.UTF_8);
    }
}
