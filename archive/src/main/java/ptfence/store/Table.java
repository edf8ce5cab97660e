package ptfence.store;

/**
 * The named LMDB databases of an archive and what their keys and values are. The layouts are
 * documented in docs/archive.md; each package that owns a table owns its codec.
 */
public enum Table {
    /** SHA-256 (32 bytes) → the image bytes, verbatim. */
    IMAGES("images"),
    /** SHA-256 → {@link ImageInfo}: length, first-put wall time, touch generation. */
    IMAGE_INFO("image_info"),
    /** region id (8 bytes, big-endian) → region record (ptfence.region codec). */
    REGIONS("regions"),
    /** region id → touch generation (8 bytes); gc never sweeps a region touched since it started. */
    REGION_TOUCH("region_touch"),
    /** boot id (length-prefixed UTF-8) + start address (8 BE) + region id (8 BE) → empty. */
    REGION_BY_ADDR("region_by_addr"),
    /** name (UTF-8, at most 400 bytes) + 0x00 + region id → empty. */
    REGION_BY_NAME("region_by_name"),
    /** BPF tag (8 bytes) + region id → empty. */
    REGION_BY_TAG("region_by_tag"),
    /** recording id (UTF-8) → recording record (ptfence.recording codec). */
    RECORDINGS("recordings"),
    /** recording id (UTF-8) + 0x00 + region id → empty. */
    RECORDING_REGIONS("recording_regions"),
    /** pin target ("recording:ID", "image:HEX", "name:NAME") → pin wall time (8 BE). */
    PINS("pins"),
    /** lease id (UTF-8) → lease record (ptfence.recording codec). */
    LEASES("leases"),
    /** small facts: "format" → version, "generation" → counter, "maxlen:" + boot → longest region. */
    META("meta");

    private final String dbName;

    Table(String dbName) {
        this.dbName = dbName;
    }

    /** The LMDB database name. */
    public String dbName() {
        return dbName;
    }
}
