package ptfence.debuginfod;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import ptfence.image.Elf;
import ptfence.publish.ImageObject;
import ptfence.region.Region;
import ptfence.region.RegionCodec;
import ptfence.region.RegionMetadata;
import ptfence.store.ContentKey;

/**
 * The one parser of a published image ({@link ImageObject} writes it), read with the project's ELF reader: the
 * image's bytes ({@code .text}) and the region records beside them. Every check is made before anything is taken: the
 * build id must be the key asked for, the bytes must hash to it, every record must name it; anything else is a
 * {@link Refused} saying what is wrong, and the object is not used.
 *
 * @param key     the content key
 * @param bytes   the image, verified against the key
 * @param regions the regions the publisher knew for it (at most {@link ImageObject#MAX_REGIONS})
 */
public record PublishedImage(ContentKey key, byte[] bytes, List<Region> regions) {
    /** Why an object is not the image asked for. */
    public static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why, null, false, false);
        }
    }

    /** Reads an object fetched for {@code key}. */
    public static PublishedImage parse(ContentKey key, byte[] object) throws Refused {
        Elf elf = Elf.of(Path.of(key.hex()), object);
        if (elf == null) {
            throw new Refused("not a 64-bit little-endian ELF file");
        }
        byte[] id = elf.buildId();
        if (!Arrays.equals(id, key.toBytes())) {
            throw new Refused("its build id is " + (id.length == 0 ? "missing" : java.util.HexFormat.of().formatHex(id)));
        }
        ByteBuffer text = elf.section(".text");
        if (text == null) {
            throw new Refused("no .text section");
        }
        byte[] bytes = new byte[text.remaining()];
        text.duplicate().get(bytes);
        if (!key.matches(bytes)) {
            throw new Refused("its .text (" + bytes.length + " bytes) does not hash to the key");
        }
        ByteBuffer section = elf.section(ImageObject.REGIONS_SECTION);
        if (section == null) {
            throw new Refused("no " + ImageObject.REGIONS_SECTION + " section");
        }
        return new PublishedImage(key, bytes, regions(key, section.duplicate().order(ByteOrder.LITTLE_ENDIAN)));
    }

    private static List<Region> regions(ContentKey key, ByteBuffer s) throws Refused {
        try {
            int version = s.getInt();
            if (version != ImageObject.REGIONS_VERSION) {
                throw new Refused(ImageObject.REGIONS_SECTION + " version " + version + " (this build reads "
                        + ImageObject.REGIONS_VERSION + ")");
            }
            int n = s.getInt();
            if (n < 0 || n > s.remaining() / 4) {
                throw new Refused(ImageObject.REGIONS_SECTION + " claims " + n + " regions");
            }
            List<Region> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int len = s.getInt();
                if (len < 0 || len > s.remaining()) {
                    throw new Refused(ImageObject.REGIONS_SECTION + ": region " + i + " runs past the section");
                }
                byte[] rec = new byte[len];
                s.get(rec);
                Region r = RegionCodec.decode(rec, ImageObject.REGIONS_SECTION + " region " + i);
                if (!r.key().equals(key)) {
                    throw new Refused(ImageObject.REGIONS_SECTION + ": region " + r.name() + " names another image");
                }
                out.add(r);
            }
            return out;
        } catch (java.nio.BufferUnderflowException e) {
            throw new Refused(ImageObject.REGIONS_SECTION + " ends inside its header or a region's length");
        } catch (ptfence.cli.BadInputException e) {
            throw new Refused(e.getMessage()); // names the section, the region and what is wrong in it
        }
    }

    /**
     * What the publisher knew about a region placed at ({@code id}, {@code address}, {@code name}): the record of
     * that very region if it is here, else that of one with the same name at the same address (the same program
     * loaded again), else nothing.
     */
    public RegionMetadata metadataFor(long id, long address, String name) {
        for (Region r : regions) {
            if (r.id() == id) {
                return r.metadata();
            }
        }
        for (Region r : regions) {
            if (r.address() == address && r.name().equals(name)) {
                return r.metadata();
            }
        }
        return RegionMetadata.None.INSTANCE;
    }
}
