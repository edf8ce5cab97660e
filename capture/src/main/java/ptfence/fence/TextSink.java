package ptfence.fence;

import java.io.IOException;

/** Where captured images go (the archive, a test's list). Called from the fence's consumer thread. */
@FunctionalInterface
public interface TextSink {
    void accept(CapturedText text) throws IOException;

    /** Called when the fence has delivered everything it holds (end of a drain, close). */
    default void flush() throws IOException {}
}
