package ptfence.fence;

import java.util.concurrent.locks.LockSupport;

/** How a fence stops its ring-reading thread, which parks between polls: wake it, then wait for it to drain. */
final class ParkedWorker {
    private ParkedWorker() {}

    /**
     * Wakes {@code worker} (its stop flag already set) and waits for it to end, up to 2 minutes (its last poll can take
     * tens of seconds where the machine is slow: a guest under TCG took over 10 s, the old bound, and the ring was
     * unmapped under it: SIGSEGV in BpfRingBuffer.poll). Returns whether it ended (null: no worker, true); a caller
     * whose worker is still running must leave the ring mapped.
     */
    static boolean stop(Thread worker) {
        if (worker == null) return true;
        LockSupport.unpark(worker);
        try {
            worker.join(120_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !worker.isAlive();
    }
}
