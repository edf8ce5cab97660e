package ptfence.flow;

import java.util.ArrayDeque;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

/**
 * A PSB segment's output on its way from the worker decoding it to the thread that writes it in turn ({@link
 * ParallelFlow}'s text, the call views' items): chunks queued in order, at most {@code cap} units held (the worker
 * waits there), the decode's end and failure, and its cancellation. Its monitor is the segment's: {@link #await}
 * waits on it for other conditions, {@link #signal} wakes it.
 *
 * @param <C> a chunk of output
 */
public final class SegmentOutput<C> {
    private final long cap;
    private final ArrayDeque<C> ready = new ArrayDeque<>();
    private final ArrayDeque<Integer> sizes = new ArrayDeque<>();
    private long held;
    private boolean finished;
    private boolean cancelled;
    private Throwable failure;
    private int taken;

    /**
     * A decode that failed at or after the next segment's PSB went on, as the sequential one does, to the first later
     * PSB it passed cleanly: the segments {@code ahead} (in order) before index {@code reached} are dropped, their
     * outputs cancelled.
     */
    public static <S> void dropBefore(ArrayDeque<S> ahead, int reached, java.util.function.ToIntFunction<S> index,
            java.util.function.Function<S, SegmentOutput<?>> output) {
        while (!ahead.isEmpty() && index.applyAsInt(ahead.peek()) < reached) {
            output.apply(ahead.poll()).cancel();
        }
    }

    public SegmentOutput(long cap) {
        this.cap = cap;
    }

    /**
     * Worker: queues {@code chunk} of {@code size} units, first waiting while the segment holds its cap; false if the
     * segment was cancelled (or the wait interrupted): the worker stops.
     */
    public synchronized boolean put(C chunk, int size) {
        while (held >= cap && !cancelled) {
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        if (cancelled) {
            return false;
        }
        ready.add(chunk);
        sizes.add(size);
        held += size;
        notifyAll();
        return true;
    }

    /** Worker: the decode ended ({@code failed} null: cleanly, or stopped). */
    public synchronized void finish(Throwable failed) {
        failure = failed;
        finished = true;
        notifyAll();
    }

    /**
     * Coordinator: the next chunk as it comes (its size: {@link #takenSize}); null once the decode has finished and
     * every chunk was taken. Throws the decode's failure.
     */
    public synchronized C take() throws InterruptedException, ExecutionException {
        while (ready.isEmpty() && !finished) {
            wait();
        }
        C c = ready.poll();
        if (c == null) {
            if (failure != null) {
                throw new ExecutionException(failure);
            }
            return null;
        }
        taken = sizes.poll();
        held -= taken;
        notifyAll();
        return c;
    }

    /** The size of the chunk {@link #take} gave last. */
    public synchronized int takenSize() {
        return taken;
    }

    /** Coordinator: waits until the decode has finished or waits at its cap. */
    public synchronized void awaitRunAhead() throws InterruptedException {
        while (!finished && held < cap) {
            wait();
        }
    }

    /** Waits until {@code done} (read under this monitor) or the decode has finished. */
    public synchronized void await(BooleanSupplier done) throws InterruptedException {
        while (!done.getAsBoolean() && !finished) {
            wait();
        }
    }

    /** Wakes those waiting in {@link #await} (call within this monitor's lock or not). */
    public synchronized void signal() {
        notifyAll();
    }

    /** Whether the decode has ended. */
    public synchronized boolean finished() {
        return finished;
    }

    /** The segment's output is not wanted: its worker stops at its next chunk. */
    public synchronized void cancel() {
        cancelled = true;
        notifyAll();
    }
}
