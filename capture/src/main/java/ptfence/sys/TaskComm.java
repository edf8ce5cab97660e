package ptfence.sys;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The calling thread's name (the kernel's task comm) through prctl(2). Setting it — even to the same name — makes
 * the kernel emit a PERF_RECORD_COMM to the thread's events that ask for comm records, stamped with their clock:
 * the recorder uses that to read perf's clock.
 */
public final class TaskComm {
    private static final int PR_SET_NAME = 15, PR_GET_NAME = 16, TASK_COMM_LEN = 16;

    private TaskComm() {}

    /** The calling thread's name (at most 15 bytes). */
    public static String get() {
        byte[] buf = new byte[TASK_COMM_LEN];
        Native.check(Native.LIBC.prctl(PR_GET_NAME, buf, 0, 0, 0), "prctl(PR_GET_NAME)");
        int end = 0;
        while (end < buf.length && buf[end] != 0) end++;
        return new String(buf, 0, end, StandardCharsets.UTF_8);
    }

    /** Names the calling thread; longer names are cut to 15 bytes, as the kernel does. */
    public static void set(String name) {
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        byte[] buf = Arrays.copyOf(bytes, TASK_COMM_LEN);
        buf[TASK_COMM_LEN - 1] = 0;
        Native.check(Native.LIBC.prctl(PR_SET_NAME, buf, 0, 0, 0), "prctl(PR_SET_NAME, " + name + ")");
    }
}
