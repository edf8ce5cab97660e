package ptfence.record;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import ptfence.perfdata.EventAttr;
import ptfence.perfdata.RecordTypes;
import ptfence.ring.PerfRing;
import ptfence.sys.PerfEvent;
import ptfence.sys.TaskComm;

/**
 * Reads the recording's perf clock against CLOCK_MONOTONIC: a dummy event with comm=1 on the calling thread alone
 * (nothing else writes to its ring), and {@link #sample} renames the thread to its own name, which makes the kernel
 * stamp a PERF_RECORD_COMM with the event's clock inside the prctl call, bracketed by two {@link System#nanoTime}
 * readings (CLOCK_MONOTONIC on Linux HotSpot, the clock of bpf_ktime_get_ns). The event uses the recording's
 * clock: perf's own (as intel_pt must) or CLOCK_MONOTONIC (then the pairs measure nothing but their own bracket).
 * <p>
 * The event belongs to the thread that opened it: {@link #sample} must run on that thread.
 */
public final class PerfClockProbe implements AutoCloseable {
    private static final long SAMPLE_TYPE = 0x2 | 0x4; // TID|TIME: the stamp is the record's last 8 bytes
    /**
     * Attempts per sample, at most; the narrowest bracket wins, and one within {@value #NARROW_NS} ns ends the
     * sample (half the brackets are, on this VM; a preempted or interrupted attempt is microseconds wide).
     */
    private static final int TRIES = 8;
    private static final long NARROW_NS = 1_000;

    private final PerfEvent event;
    private final PerfRing ring;
    private final Thread owner = Thread.currentThread();
    private final String comm;
    private final int tid;
    private long stamp;
    private boolean stamped;

    private PerfClockProbe(PerfEvent event, PerfRing ring, String comm, int tid) {
        this.event = event;
        this.ring = ring;
        this.comm = comm;
        this.tid = tid;
    }

    /**
     * The thread's kernel tid: system-wide sideband events see its COMM records too, which the recorder leaves out
     * of the perf.data (they say nothing about the traced code).
     */
    public int tid() {
        return tid;
    }

    private static int currentTid() throws IOException {
        // /proc/thread-self -> <pid>/task/<tid>
        return Integer.parseInt(java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc/thread-self"))
                .getFileName().toString());
    }

    /** Opens the probe on the calling thread, with perf's clock or (if {@code clockId >= 0}) that clock. */
    public static PerfClockProbe open(int clockId) throws IOException {
        EventAttr a = EventAttr.builder().type(1).config(9).sampleType(SAMPLE_TYPE)
                .flags(EventAttr.FLAG_COMM | EventAttr.FLAG_SAMPLE_ID_ALL).build();
        if (clockId >= 0) a = withClock(a, clockId);
        PerfEvent e = PerfEvent.open(a, "clock probe (comm of thread " + Thread.currentThread().getName() + ")", 0, -1);
        try {
            return new PerfClockProbe(e, PerfRing.map(e, 1), TaskComm.get(), currentTid());
        } catch (IOException | RuntimeException ex) {
            e.close();
            throw ex;
        }
    }

    /** The attr with use_clockid set and {@code clockId} in its clockid field. */
    static EventAttr withClock(EventAttr a, int clockId) {
        ByteBuffer raw = ByteBuffer.allocate(a.length()).order(ByteOrder.LITTLE_ENDIAN).put(a.raw()).flip();
        raw.putLong(40, a.flags() | USE_CLOCKID);
        raw.putInt(92, clockId);
        return new EventAttr(raw);
    }

    static final long USE_CLOCKID = 1L << 25;

    /** One observation, the narrowest of a few attempts. */
    public ClockMap.Pair sample() throws IOException {
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("clock probe sampled from " + Thread.currentThread().getName()
                    + ", opened on " + owner.getName());
        }
        ClockMap.Pair best = null;
        for (int i = 0; i < TRIES; i++) {
            long before = System.nanoTime();
            TaskComm.set(comm);
            long after = System.nanoTime();
            stamped = false;
            ring.drain(this::onRecord);
            if (!stamped) throw new IOException("clock probe: no COMM record after prctl(PR_SET_NAME) (lost?)");
            ClockMap.Pair p = new ClockMap.Pair(before, after, stamp);
            if (best == null || p.halfWidth() < best.halfWidth()) best = p;
            if (best.halfWidth() <= NARROW_NS) break;
        }
        return best;
    }

    private void onRecord(ByteBuffer rec, PerfRing r) {
        if (rec.getInt(0) != RecordTypes.COMM) return;
        int size = Short.toUnsignedInt(rec.getShort(6));
        stamp = rec.getLong(size - 8);
        stamped = true;
    }

    @Override
    public void close() {
        ring.close();
        event.close();
    }
}
