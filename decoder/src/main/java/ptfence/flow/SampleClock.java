package ptfence.flow;

import ptfence.insn.InsnClass;

/**
 * The time perf gives a sample of one CPU's flow (tools/perf/util/intel-pt-decoder: sample_timestamp, and the queue's
 * timestamp in intel-pt.c). perf's decoder reads the packets of the next branch before walking to it, and the time
 * of its samples moves only when it returns one between packets: so an instruction run while the decoder waits for
 * the packet its next branch needs gets the time from before the timing packets that came ahead of that packet; the
 * branch that takes the packet, and what follows, the time after them. (ptfence.flow reads events the way libipt
 * does, which gives those instructions the later time.) A CPU's times never go back.
 */
public final class SampleClock {
    private FlowDecoder decoder;
    private long sample = -1;
    private long queue = -1;
    /** The highest time a state (not an error) left the queue at: where perf's session last stopped it. */
    private long stopped = -1;

    /** The decoder now reporting (its time is the trace's, in TSC ticks). */
    public void decoder(FlowDecoder d) {
        this.decoder = d;
    }

    private long now() {
        return decoder == null ? -1 : decoder.time();
    }

    /** An instruction of class {@code cls} is run; returns its sample time (TSC, -1: none yet). */
    public long insn(int cls) {
        if (takesPacket(cls)) {
            sample = now();
        }
        if (sample > queue) {
            queue = sample;
        }
        return state();
    }

    /** An event perf returns between packets (trace begin or end, PSB, CBR, power, ptwrite...); returns its time. */
    public long event() {
        sample = now();
        if (sample > queue) {
            queue = sample;
        }
        return state();
    }

    /** As {@link #event()}, for an event whose time the decoder had at {@code tsc} (it has read on since). */
    public long eventAt(long tsc) {
        sample = tsc;
        if (sample > queue) {
            queue = sample;
        }
        return state();
    }

    /**
     * A decode error: its time is the decoder's now (where the flow resumed when nothing ran since: perf returns a
     * trace begin there, then fails), and perf's queue takes it even when earlier (intel_pt_run_decoder sets its
     * timestamp to the error's, where a state only moves it forward): after a fast forward that left perf's clock
     * early, the errors keep those early times.
     */
    public long error() {
        sample = now();
        if (sample >= 0) {
            queue = sample;
        }
        return queue;
    }

    /**
     * perf's decoder moved on without decoding what this clock saw since its queue time was {@code time} (a fast
     * forward): the queue keeps that time, not the later ones, and the sideband delivered stays as it was then.
     */
    public void rewind(long time, long delivered) {
        queue = time;
        stopped = delivered;
    }

    private long state() {
        if (queue > stopped) {
            stopped = queue;
        }
        return queue;
    }

    /**
     * The time of the sideband (MMAPs, switches) perf's session has delivered when this queue's decoder runs now
     * (TSC, -1: none yet). perf decodes a queue for an event at time T (intel_pt_process_queues) until a state leaves
     * the queue's time at T or later, then delivers the event; so the events whose time is at most the highest time
     * a state has left the queue at are delivered, and no later one. An error's lower or higher time counts only
     * through the next state (intel_pt_run_decoder checks the queue's time after states alone).
     */
    public long delivered() {
        return stopped;
    }

    /** The time of the last sample (TSC, -1: none yet). */
    public long time() {
        return queue;
    }

    /** The time of the state last returned (a PSB segment's seam compares it: {@code BranchSink.Seam}). */
    public long sample() {
        return sample;
    }

    /** Whether an instruction of this class takes a packet: a TNT bit or a TIP. */
    public static boolean takesPacket(int cls) {
        return switch (cls) {
            case InsnClass.COND_JUMP, InsnClass.RETURN, InsnClass.JUMP_INDIRECT, InsnClass.CALL_INDIRECT,
                    InsnClass.FAR_CALL, InsnClass.FAR_JUMP, InsnClass.FAR_RETURN -> true;
            default -> false;
        };
    }
}
