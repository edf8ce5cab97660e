package ptfence.store;

import java.nio.ByteBuffer;

/**
 * What the archive knows about an image besides its bytes.
 *
 * @param length          number of bytes
 * @param firstPutMillis  wall-clock time (ms since epoch) of the first put
 * @param touchGeneration archive generation of the latest put or reference; gc spares anything touched
 *                        at or after the generation it started in, and live leases spare what was
 *                        touched since they were opened
 */
public record ImageInfo(long length, long firstPutMillis, long touchGeneration) {
    static final int ENCODED_LENGTH = 24;

    byte[] encode() {
        return ByteBuffer.allocate(ENCODED_LENGTH).putLong(length).putLong(firstPutMillis)
                .putLong(touchGeneration).array();
    }

    static ImageInfo decode(byte[] v) {
        ByteBuffer b = ByteBuffer.wrap(v);
        return new ImageInfo(b.getLong(), b.getLong(), b.getLong());
    }
}
