package ptfence.image;

import java.util.List;

/**
 * Anything that can contribute code to an image: a raw file range, an ELF's executable segments, and
 * later archive entries (kernel text captured at load time, valid until unload).
 */
public interface SectionSource {
    List<Section> sections();
}
