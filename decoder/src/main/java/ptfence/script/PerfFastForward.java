package ptfence.script;

import java.util.ArrayList;
import java.util.List;
import ptfence.packet.PacketCursor;
import ptfence.packet.TraceSource;
import ptfence.perfdata.AuxBuffer;

/**
 * Where perf 6.1's decoder jumps to before a --time range's start (intel_pt_fast_forward): at the first state its time
 * filter finds before the start, it looks at the later AUX buffers of the CPU's queue for the last one whose first
 * PSB's TSC is before the start and moves there (else stays in the current buffer), then steps from PSB to PSB (from
 * that buffer's start, or from where the decoder stands) while the TSC in the PSB+ is before the start, stopping at a
 * PSB+ without one. Decoding restarts at the last PSB so reached; what lies between never happens in perf, errors
 * included. Positions are in the queue: the buffers one after the other, as the decoders read each run of them (a
 * decoder's offsets start at its run's first buffer: {@link #queuePos}); TSCs are the TSC packets' 7 bytes with the
 * top byte of the buffer's reference time, as perf widens them.
 */
public final class PerfFastForward {
    private final long[] bufStart;
    private final long[] bufEnd;
    /** The TSC in each buffer's first PSB+ (-1: none). */
    private final long[] bufFirstTsc;
    /** Per buffer, its PSBs' offsets and TSCs (-1: the PSB+ has none). */
    private final long[][] psbAt;
    private final long[][] psbTsc;
    /** Where each run of buffers starts in the queue. */
    private final long[] runStart;

    private PerfFastForward(List<List<AuxBuffer>> runs) {
        List<AuxBuffer> buffers = new ArrayList<>();
        runStart = new long[runs.size()];
        long at = 0;
        for (int r = 0; r < runs.size(); r++) {
            runStart[r] = at;
            for (AuxBuffer b : runs.get(r)) {
                buffers.add(b);
                at += b.size();
            }
        }
        int n = buffers.size();
        bufStart = new long[n];
        bufEnd = new long[n];
        bufFirstTsc = new long[n];
        psbAt = new long[n][];
        psbTsc = new long[n][];
        long start = 0;
        for (int i = 0; i < n; i++) {
            AuxBuffer b = buffers.get(i);
            bufStart[i] = start;
            bufEnd[i] = start + b.size();
            List<long[]> psbs = psbs(b, start);
            start += b.size();
            psbAt[i] = psbs.stream().mapToLong(p -> p[0]).toArray();
            psbTsc[i] = psbs.stream().mapToLong(p -> p[1]).toArray();
            bufFirstTsc[i] = psbs.isEmpty() ? -1 : psbs.get(0)[1];
        }
    }

    /** The index of one CPU's queue: its AUX buffers in order, in the runs its decoders read. */
    public static PerfFastForward of(List<List<AuxBuffer>> runs) {
        return new PerfFastForward(runs);
    }

    /** The queue position of offset {@code offset} of run {@code run}'s decoder. */
    public long queuePos(long run, long offset) {
        return run >= 0 && run < runStart.length ? runStart[(int) run] + offset : -1;
    }

    /**
     * Each PSB of {@code b} (which starts at queue position {@code start}): its position and the TSC in its PSB+ (-1
     * where a PSBEND comes first).
     */
    private static List<long[]> psbs(AuxBuffer b, long start) {
        List<long[]> out = new ArrayList<>();
        PacketCursor c = new PacketCursor(TraceSource.of(b.data()));
        while (c.syncForward()) {
            long at = c.syncOffset();
            long tsc = -1;
            try {
                for (int t = c.next(); t != PacketCursor.END; t = c.next()) {
                    if (t == PacketCursor.TSC) {
                        tsc = widen(c.tsc(), b.reference());
                        break;
                    }
                    if (t == PacketCursor.PSBEND || t == PacketCursor.PSB && c.offset() != at) {
                        break;
                    }
                }
            } catch (RuntimeException e) {
                // a damaged PSB+: perf's packet walk stops there too, without a TSC
            }
            out.add(new long[] {start + at, tsc});
            c.seek(at);
        }
        return out;
    }

    /** perf's intel_pt_8b_tsc: the TSC packet's 56 bits with the reference's top byte, the nearer wrap. */
    static long widen(long tsc, long ref) {
        long t = tsc | (ref & (0xffL << 56));
        if (Long.compareUnsigned(t, ref) < 0) {
            if (ref - t > (1L << 55)) {
                t += 1L << 56;
            }
        } else if (t - ref > (1L << 55)) {
            t -= 1L << 56;
        }
        return t;
    }

    /**
     * The PSB (queue position) perf's decoder, standing at queue position {@code pos}, restarts at when fast forwarding towards TSC
     * {@code tsc}; -1 where it does not move.
     */
    public long target(long pos, long tsc) {
        int cur = current(pos);
        int buf = laterBuffer(cur, tsc);
        long from = buf >= 0 ? bufStart[buf] : pos;
        int b = buf >= 0 ? buf : cur;
        long target = -1;
        if (b >= psbAt.length) {
            return -1;
        }
        for (int i = 0; i < psbAt[b].length; i++) {
            if (psbAt[b][i] < from) {
                continue;
            }
            long t = psbTsc[b][i];
            if (t < 0 || Long.compareUnsigned(t, tsc) >= 0) {
                break;
            }
            target = psbAt[b][i];
        }
        return target == -1 && buf >= 0 ? bufStart[buf] : target;
    }

    /**
     * Whether the fast forward from queue position {@code pos} towards {@code tsc} stays in the buffer the decoder
     * reads: perf then moves without reading a buffer, so no reference time comes with it.
     */
    public boolean staysInBuffer(long pos, long tsc) {
        return laterBuffer(current(pos), tsc) < 0;
    }

    private int current(long pos) {
        int cur = 0;
        while (cur + 1 < bufStart.length && pos >= bufEnd[cur]) {
            cur++;
        }
        return cur;
    }

    /** The last buffer after {@code cur} whose first PSB+'s TSC is before {@code tsc} (-1: none). */
    private int laterBuffer(int cur, long tsc) {
        int buf = -1;
        for (int i = cur + 1; i < bufStart.length; i++) {
            if (bufFirstTsc[i] < 0) {
                continue; // no PSB with a TSC: perf's look-ahead goes on
            }
            if (Long.compareUnsigned(bufFirstTsc[i], tsc) >= 0) {
                break;
            }
            buf = i;
        }
        return buf;
    }
}
