package ptfence.region;

/** What the archive keeps about a region beyond its bytes; one shape per kind of source. */
public sealed interface RegionMetadata permits RegionMetadata.None, BpfMetadata, FileMetadata,
        KernelMetadata {
    /** Nothing beyond name, address and bytes (kernel text, trampolines, poked text). */
    record None() implements RegionMetadata {
        /** The one instance worth having. */
        public static final None INSTANCE = new None();
    }
}
