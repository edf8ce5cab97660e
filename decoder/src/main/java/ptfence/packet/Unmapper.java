package ptfence.packet;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;

/**
 * Unmaps a memory-mapped buffer immediately (Java otherwise unmaps at GC, which a non-allocating decode
 * loop may never trigger). Uses {@code sun.misc.Unsafe.invokeCleaner} from jdk.unsupported; if that is
 * not available it does nothing and the GC unmaps as usual. Callers must own the buffer: touching it
 * afterwards would crash the JVM.
 */
final class Unmapper {
    private static final Object UNSAFE;
    private static final Method INVOKE_CLEANER;

    static {
        Object u = null;
        Method m = null;
        try {
            Class<?> c = Class.forName("sun.misc.Unsafe");
            Field f = c.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            u = f.get(null);
            m = c.getMethod("invokeCleaner", ByteBuffer.class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            u = null;
            m = null;
        }
        UNSAFE = u;
        INVOKE_CLEANER = m;
    }

    private Unmapper() {}

    static void unmap(ByteBuffer mapped) {
        if (INVOKE_CLEANER == null) {
            return;
        }
        try {
            INVOKE_CLEANER.invoke(UNSAFE, mapped);
        } catch (ReflectiveOperationException | RuntimeException e) {
            // Left to the GC.
        }
    }
}
