package ptfence.fence;

import java.io.IOException;

/**
 * Where captured images go (the archive, a test's list). The fence calls it from its consumer thread and from
 * callers' threads, but never twice at once.
 */
@FunctionalInterface
public interface TextSink {
    void accept(CapturedText text) throws IOException;

    /** An image with what the archive keeps about it beyond a program's metadata (a module's kallsyms lines). */
    default void accept(CapturedText text, ptfence.region.RegionMetadata metadata) throws IOException {
        accept(text);
    }

    /**
     * The full metadata of a program whose images were (or are about to be) delivered, fetched through bpf() when
     * the recorder asked ({@link TextFence#onProgramLoaded}).
     */
    default void metadata(ptfence.bpf.ProgramMetadata metadata) throws IOException {}

    /**
     * Said once the fence knows its mode, before its startup scan: whether FREE images will end the programs'
     * lives (the in-kernel fence) or nothing will (the user-space fence, whose programs end at KSYMBOL unregister).
     */
    default void freeHookActive(boolean active) {}

    /** Called when the fence has delivered everything it holds (end of a drain, close). */
    default void flush() throws IOException {}
}
