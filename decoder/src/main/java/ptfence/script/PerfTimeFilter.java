package ptfence.script;

import ptfence.flow.FlowDecoder;
import ptfence.flow.SampleClock;
import ptfence.timing.PerfClock;

/**
 * perf's --time filter inside its decoder loop (intel_pt_time_filter), one per CPU queue, on TSC times: it runs on
 * every state the decoder returns (an instruction or branch, a trace begin, a PSB or CBR event; never on an error).
 * A state before a range's start makes no sample and, once per start, fast-forwards the decoder to the last PSB before
 * the start ({@link PerfFastForward}: what lies between is never decoded, its failed walks included); past the last
 * range's end the queue stops (no more samples, no more errors). The one rule of the sample views
 * ({@link SampleSink}) and the call views ({@code calls.BranchSink}).
 */
public final class PerfTimeFilter {
    private long[] starts = new long[0];
    private long[] ends = new long[0];
    private int idx;
    private boolean atStart;
    /** The bound looked at next (0: none). */
    private long selTsc;
    private long ffTsc;
    /** A fast forward asked for without the queue's PSBs: the decoder's TSC then (-1: none). */
    private long ffAfter = -1;
    private PerfFastForward psbs;
    /** The PSB (queue position) the fast forward restarts at, while the decode has not reached it; -1: none. */
    private long ffTarget = -1;
    private boolean stopped;

    /** The ranges in TSC (starts and ends; 0: an open end); {@code psbs}: the queue's PSBs (null: not known). */
    public PerfTimeFilter(long[] starts, long[] ends, PerfFastForward psbs) {
        this.starts = starts;
        this.ends = ends;
        this.psbs = psbs;
        if (starts.length > 0) {
            idx = 0;
            atStart = starts[0] != 0;
            selTsc = atStart ? starts[0] : ends[0];
        }
    }

    /** No filter. */
    public PerfTimeFilter() {
    }

    /** Whether there are ranges to filter by. */
    public boolean active() {
        return starts.length > 0;
    }

    /** The TSC of the queue's first timed state (-1: not yet met), and whether the state asked about is that one. */
    private long setUpTsc = -1;
    private boolean setUpPending;

    /** Whether TSC {@code ts} lies in one of the ranges (perf script's own check, on TSC times). */
    private boolean inRange(long ts) {
        for (int i = 0; i < starts.length; i++) {
            if (TimeRanges.holds(starts[i], ends[i], ts)) {
                return true;
            }
        }
        return false;
    }

    /** Whether TSC {@code ts} (-1: none) lies outside every range. */
    public boolean outside(long ts) {
        return ts >= 0 && active() && !inRange(ts);
    }

    /**
     * Whether a state at TSC {@code ts} not yet judged would be the one perf's queue set-up samples without this
     * filter: the queue's first timed state, unless before the first start.
     */
    public boolean setUpSampleAt(long ts) {
        return setUpTsc < 0 && ts >= 0 && !(starts.length > 0 && starts[0] != 0 && ts < starts[0]);
    }

    /** A new state of perf's decoder begins: the set-up state, if that was the last, is over. */
    public void newState() {
        setUpPending = false;
    }

    /**
     * Whether the state now is the one perf's queue set-up sampled without this filter outside every range: perf
     * script's own --time check drops its samples, what they change stays.
     */
    public boolean setUpState() {
        return setUpPending;
    }

    /** Past the last range's end: perf stops decoding the queue. */
    public boolean stopped() {
        return stopped;
    }

    /** The queue's PSBs (null: not known). */
    public PerfFastForward psbs() {
        return psbs;
    }

    /** perf's intel_pt_next_time: the next bound to look at; false when there is none. */
    private boolean nextTime() {
        if (atStart) {
            atStart = false;
            selTsc = ends[idx];
            return true;
        }
        if (idx + 1 < starts.length) {
            atStart = true;
            idx++;
            selTsc = starts[idx];
            return true;
        }
        return false;
    }

    /**
     * Whether perf makes no sample of a state at TSC {@code ts}; the decoder stands at queue position {@code pos}
     * (-1: not known) with TSC {@code decoderTsc}, which a fast forward starts from; {@code clock} (perf's, null: none)
     * and {@code queue} are what a fast forward within the buffer leaves perf's decoder with ({@link #restart}).
     */
    public boolean filtered(long ts, long pos, long decoderTsc, PerfClock clock, SampleClock queue) {
        return filtered(ts, pos, decoderTsc, clock, queue, true);
    }

    /**
     * {@link #filtered(long, long, long, PerfClock, SampleClock)} for an instruction that may be no state of perf's
     * decoder ({@code state} false: one not sampled that is no branch, or a conditional branch not known taken): perf
     * jumps at its first state past the bound, so the clock and queue it jumps with are those of the next state
     * ({@link #stateSeen}, or the next call with {@code state} true).
     */
    public boolean filtered(long ts, long pos, long decoderTsc, PerfClock clock, SampleClock queue, boolean state) {
        if (ffAtState && state) {
            stateSeen(clock, queue);
        }
        if (stopped) {
            return true;
        }
        if (setUpPending && ts == setUpTsc) {
            return false;
        }
        setUpPending = false;
        if (selTsc == 0 || ts < 0) {
            return false;
        }
        if (setUpTsc < 0) {
            // perf's queue set-up (intel_pt_setup_queue) decodes up to the first state with a time and samples it
            // without this filter, unless it lies before the first start: samples outside every range then, which
            // perf script's own --time check drops unprinted, but what they change stays (the ratio seen: quipper,
            // three ranges, CPU 0 starting between the second and the third, printed no cbr line at the third)
            setUpTsc = ts;
            if (!atStart || ts >= selTsc) {
                setUpPending = !inRange(ts); // inside a range it is an ordinary state: its samples print
                return false;
            }
        }
        while (true) {
            if (atStart) {
                if (ts >= selTsc) {
                    nextTime();
                    if (selTsc == 0) {
                        return false;
                    }
                    continue;
                }
                if (selTsc > ffTsc) {
                    ffTsc = selTsc;
                    ffAfter = decoderTsc;
                    ffTarget = psbs == null || pos < 0 ? -1 : psbs.target(pos, selTsc);
                    // the first start's jump is perf's queue set-up (intel_pt_setup_queue), before any buffer is
                    // read: the buffer it moves to brings its reference time
                    ffStale = ffTarget >= 0 && idx > 0 && clock != null && psbs.staysInBuffer(pos, selTsc);
                    // a later start's jump is taken at perf's state that asks for it: where this instruction is no
                    // state of perf's, at the next state
                    ffAtState = idx > 0;
                    stateSeen(clock, queue);
                    ffAtState = idx > 0 && !state;
                }
                return true;
            } else if (ts > selTsc) {
                if (!nextTime()) {
                    stopped = true;
                    return true;
                }
            } else {
                return false;
            }
        }
    }

    /**
     * The PSB+ at queue position {@code pos}, just read by {@code decoder}, opens. Where it is the fast forward's
     * target and the jump stayed within the buffer perf's decoder reads, perf's clock is the one it had at the jump,
     * moved there ({@link FlowDecoder#perfRepositioned}): intel_pt_reposition zeroed its time with no buffer's
     * reference time left, so the PSB+'s TSC is ignored and its TMA counts from the last TSC perf took before the jump
     * (MTC times early until the next TSC), and its CYC times count on from the cycle reference and cycles it had
     * then; {@code queue} goes back to its time at the jump (perf's queue never saw what lies between). Once per
     * target.
     */
    public void restart(long pos, FlowDecoder decoder, SampleClock queue) {
        if (ffStale && ffTarget >= 0 && pos >= ffTarget && decoder != null) {
            ffStale = false;
            ffAtState = false;
            decoder.perfRepositioned(ffClock);
            ffClock = null;
            queue.rewind(ffQueue, ffDelivered);
        }
    }

    /**
     * A state of perf's decoder at an instruction {@link #filtered} was told may be none (a conditional branch found
     * taken): where perf's fast forward waits for its state, it jumps with the clock and queue time of this one.
     */
    public void stateSeen(PerfClock clock, SampleClock queue) {
        if (!ffAtState) {
            return;
        }
        ffAtState = false;
        jumpStates++;
        if (ffStale) {
            ffClock = clock.copy();
            ffQueue = queue.time();
            ffDelivered = queue.delivered();
        }
    }

    /**
     * How many states a later start's fast forward was taken at ({@link #stateSeen}): perf's decoder keeps the counts
     * it walked up to there (instructions, the period's), and goes on from them at the PSB.
     */
    public long jumpStates() {
        return jumpStates;
    }

    private long jumpStates;

    private boolean ffStale;
    /** A later start's fast forward waits for perf's state that asks for it, to take its clock and time. */
    private boolean ffAtState;
    /** perf's clock and the queue's time at the state that asked for the fast forward. */
    private PerfClock ffClock;
    private long ffQueue;
    private long ffDelivered;

    /** Whether queue position {@code pos} lies where the fast forward has jumped over: perf never decodes it. */
    public boolean skipped(long pos) {
        return ffTarget >= 0 && pos >= 0 && pos < ffTarget;
    }

    /**
     * Whether perf's decoding restarts at the PSB+ ending now (at queue position {@code pos}, the decoder's TSC
     * {@code decoderTsc}): the fast forward's PSB, from which perf counts instructions afresh. Without the queue's
     * PSBs, an estimate: the last PSB+ before the start's TSC after the decoder's time when it was asked for.
     */
    public boolean restartsAt(long pos, long decoderTsc) {
        if (psbs != null) {
            if (ffTarget >= 0 && pos >= ffTarget) {
                ffTarget = -1;
                return true;
            }
            return false;
        }
        if (ffAfter >= 0) {
            if (decoderTsc < ffTsc && decoderTsc > ffAfter) {
                return true;
            } else if (decoderTsc >= ffTsc) {
                ffAfter = -1;
            }
        }
        return false;
    }
}
