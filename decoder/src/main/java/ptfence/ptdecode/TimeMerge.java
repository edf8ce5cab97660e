package ptfence.ptdecode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.function.Consumer;

/**
 * Merges the time-ordered streams of several CPUs into one, earliest first, with bounded memory: each CPU produces
 * on its own thread into a short queue of batches. Only so many CPUs decode at once (the {@code turns}); a producer
 * whose queue is full gives its turn back while it waits, so a CPU the merger is waiting for always gets to run,
 * however many CPUs there are and however few turns.
 *
 * @param <T> the items; each comes with its time (-1: unknown, taken as soon as it is at the head). A null item only
 *     says its source's time: it orders the others as an item would (ties as perf orders them,
 *     {@link ptfence.script.QueueOrder}), and is not handed on.
 */
final class TimeMerge<T> {
    private static final int BATCH = 1024;
    private static final int QUEUED_BATCHES = 8;

    private record Batch(long[] times, Object[] items, int count) {
        static final Batch END = new Batch(null, null, 0);
    }

    private final List<BlockingQueue<Batch>> queues = new ArrayList<>();
    private final Semaphore turns;
    private final long[] queueLimits;
    private volatile boolean abandoned;

    /** {@code queueLimits}: the times of the recording's records, which order items of equal time. */
    TimeMerge(int sources, Semaphore turns, long[] queueLimits) {
        this.turns = turns;
        this.queueLimits = queueLimits;
        for (int i = 0; i < sources; i++) {
            queues.add(new ArrayBlockingQueue<>(QUEUED_BATCHES));
        }
    }

    /** The producing end of source {@code i}; used by one thread, the one holding a turn. */
    Producer producer(int i) {
        return new Producer(queues.get(i));
    }

    /** One CPU's stream. {@link #end} must be called however the CPU's decode ends, else the merge waits forever. */
    final class Producer {
        private final BlockingQueue<Batch> queue;
        private long[] times = new long[BATCH];
        private Object[] items = new Object[BATCH];
        private int n;

        private Producer(BlockingQueue<Batch> queue) {
            this.queue = queue;
        }

        void add(long time, T item) {
            times[n] = time;
            items[n] = item;
            if (++n == BATCH) {
                flush();
            }
        }

        private void flush() {
            if (n > 0) {
                put(new Batch(times, items, n));
                times = new long[BATCH];
                items = new Object[BATCH];
                n = 0;
            }
        }

        void end() {
            flush();
            put(Batch.END);
        }

        private void put(Batch b) {
            if (queue.offer(b)) {
                return;
            }
            turns.release(); // waiting on the merger: let another CPU decode meanwhile
            try {
                queue.put(b);
                turns.acquire();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while merging CPUs");
            }
        }
    }

    /** Whether source {@code i}'s head goes before source {@code best}'s (an unknown time, -1, as soon as it comes). */
    private static boolean earlier(Batch[] head, int[] pos, int i, int best, ptfence.script.QueueOrder order) {
        long t = head[i].times()[pos[i]];
        long tb = head[best].times()[pos[best]];
        return t < tb || t == tb && order.before(i, best);
    }

    /** The decode failed before every source could end: {@link #drain} returns (the failure is reported). */
    void abandon() {
        abandoned = true;
    }

    /** Hands every item of every source to {@code out}, earliest first, until every source has ended. */
    @SuppressWarnings("unchecked")
    void drain(Consumer<T> out) throws InterruptedException {
        int k = queues.size();
        Batch[] head = new Batch[k];
        int[] pos = new int[k];
        boolean[] ended = new boolean[k];
        ptfence.script.QueueOrder order = new ptfence.script.QueueOrder(k, queueLimits);
        while (true) {
            int best = -1;
            for (int i = 0; i < k; i++) {
                if (ended[i]) {
                    continue;
                }
                if (head[i] == null || pos[i] == head[i].count()) {
                    Batch b;
                    while ((b = queues.get(i).poll(100, java.util.concurrent.TimeUnit.MILLISECONDS)) == null) {
                        if (abandoned) {
                            return;
                        }
                    }
                    if (b == Batch.END) {
                        ended[i] = true;
                        head[i] = null;
                        continue;
                    }
                    head[i] = b;
                    pos[i] = 0;
                }
                if (best < 0 || earlier(head, pos, i, best, order)) {
                    best = i;
                }
            }
            if (best < 0) {
                return;
            }
            if (order.reach(head[best].times()[pos[best]])) {
                for (int i = 0; i < k; i++) { // a record's time stopped the running CPU: ties are ordered again
                    if (!ended[i] && i != best && earlier(head, pos, i, best, order)) {
                        best = i;
                    }
                }
            }
            order.taken(best);
            Object item = head[best].items()[pos[best]];
            head[best].items()[pos[best]++] = null;
            if (item != null) {
                out.accept((T) item);
            }
        }
    }
}
