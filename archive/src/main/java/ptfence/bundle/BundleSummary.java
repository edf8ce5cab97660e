package ptfence.bundle;

/**
 * What a bundle holds or what an import did.
 *
 * @param recordingId the recording
 * @param images      images in the bundle
 * @param regions     regions in the bundle
 * @param imageBytes  bytes of images
 * @param newImages   images the archive did not have before (import only)
 * @param newRegions  regions the archive did not have before (import only)
 */
public record BundleSummary(String recordingId, long images, long regions, long imageBytes, long newImages,
        long newRegions) {}
