package ptfence.fence;

import java.util.concurrent.locks.LockSupport;

/** How a fence stops its ring-reading thread, which parks between polls: wake it, then wait for it to drain. */
final class ParkedWorker {
    private ParkedWorker() {}

    /** Wakes {@code worker} (its stop flag already set) and waits up to 10 s for it to end; null is no worker. */
    static void stop(Thread worker) {
        if (worker == null) return;
        LockSupport.unpark(worker);
        try {
            worker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
