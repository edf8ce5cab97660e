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
 * @param files       files carried besides (perf.data, binaries): where export read them, where import wrote them
 *                    (import without a files directory: where they came from)
 * @param missing     files export was asked for but could not find here (recorded path), import: none
 */
public record BundleSummary(String recordingId, long images, long regions, long imageBytes, long newImages,
        long newRegions, java.util.List<BundleFile> files, java.util.List<String> missing) {
    public BundleSummary {
        files = java.util.List.copyOf(files);
        missing = java.util.List.copyOf(missing);
    }

    public BundleSummary(String recordingId, long images, long regions, long imageBytes, long newImages,
            long newRegions) {
        this(recordingId, images, regions, imageBytes, newImages, newRegions, java.util.List.of(), java.util.List.of());
    }
}
