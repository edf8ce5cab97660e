package ptfence.bundle;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * Which user-space files a recording maps, and where each is here: what {@code ptarchive export --binaries} packs.
 * The archive does not read perf.data, so this comes from the decoder module, a {@link ServiceLoader} provider
 * (META-INF/services/ptfence.bundle.MappedFiles) on ptarchive's class path.
 */
public interface MappedFiles {
    /**
     * The files {@code perfData} maps (MMAP/MMAP2, BUILD_ID), each with its build id and its local copy: the file at
     * its path when its build id matches (or none is known), else perf's build-id cache; {@code local} null where
     * neither has it.
     */
    List<BundleFile> of(Path perfData);

    static Optional<MappedFiles> find() {
        return ServiceLoader.load(MappedFiles.class).findFirst();
    }
}
