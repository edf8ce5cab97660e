package ptfence.region;

import java.util.Objects;
import ptfence.store.ContentKey;

/**
 * What makes a boot's core kernel text explain itself elsewhere: the kernel's release and its symbols
 * ({@code /proc/kallsyms} as it read on that boot). Like a program's BTF, the kallsyms text is stored once by content:
 * a region record keeps its key, {@link RegionIndex#withContent} puts the bytes back.
 *
 * @param release     {@code uname -r} of the kernel
 * @param kallsyms    /proc/kallsyms (empty when only its key is known)
 * @param kallsymsKey content key of the kallsyms text in the archive, or null
 */
public record KernelMetadata(String release, byte[] kallsyms, ContentKey kallsymsKey) implements RegionMetadata {
    public KernelMetadata {
        Objects.requireNonNull(release, "release");
        kallsyms = kallsyms == null ? new byte[0] : kallsyms.clone();
        if (kallsyms.length > 0) {
            ContentKey k = ContentKey.of(kallsyms);
            if (kallsymsKey != null && !kallsymsKey.equals(k)) {
                throw new IllegalArgumentException("kallsyms bytes do not match their key " + kallsymsKey.hex());
            }
            kallsymsKey = k;
        }
    }

    @Override
    public byte[] kallsyms() {
        return kallsyms.clone();
    }

    /** Whether the kallsyms text is not in this record's bytes (resolve it with {@link RegionIndex#withContent}). */
    public boolean kallsymsElsewhere() {
        return kallsyms.length == 0 && kallsymsKey != null;
    }

    /** The same record with the kallsyms bytes put back (they must match the key). */
    public KernelMetadata withKallsyms(byte[] bytes) {
        return new KernelMetadata(release, bytes, kallsymsKey);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KernelMetadata m && release.equals(m.release) && java.util.Arrays.equals(kallsyms,
                m.kallsyms) && Objects.equals(kallsymsKey, m.kallsymsKey);
    }

    @Override
    public int hashCode() {
        return release.hashCode() * 31 + Objects.hashCode(kallsymsKey);
    }

    @Override
    public String toString() {
        return "KernelMetadata[release=" + release + ", kallsyms=" + (kallsymsElsewhere() ? kallsymsKey.shortHex()
                : kallsyms.length + "B") + "]";
    }
}
