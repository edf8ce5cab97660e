package ptfence.jit;

import java.util.ArrayList;
import java.util.List;

/**
 * A process's JIT functions over time, from its jitdump: each function's bytes at its address from its load until
 * the JIT wrote other code over any part of it (a later load or a move onto those bytes) or moved it away. This is
 * the user-space counterpart of the archive's windows for kernel text: the JIT frees code and reuses its address,
 * so the bytes at an address are known only together with a time. Times are the dump's own (see
 * {@link JitDump#archTimestamps()}).
 */
public final class JitCode {
    /** A function's code at [address, address + code.length) during [from, to) of the dump's clock. */
    public record Function(String name, long address, byte[] code, long codeIndex, long from, long to) {
        public long end() {
            return address + code.length;
        }

        Function until(long t) {
            return new Function(name, address, code, codeIndex, from, t);
        }
    }

    private JitCode() {
    }

    /** Every function the dump loaded, at each address it lived at, with the window it held its bytes there. */
    public static List<Function> functions(JitDump dump) {
        List<Function> done = new ArrayList<>();
        List<Function> live = new ArrayList<>();
        for (JitRecord r : dump.records()) {
            if (r instanceof JitRecord.Load l) {
                end(live, done, l.codeAddress(), l.codeAddress() + l.code().length, l.timestamp(), false, 0, 0);
                live.add(new Function(l.name(), l.codeAddress(), l.code(), l.codeIndex(), l.timestamp(),
                        Long.MAX_VALUE));
            } else if (r instanceof JitRecord.Move m) {
                Function moved = end(live, done, 0, 0, m.timestamp(), true, m.codeIndex(), m.oldAddress());
                end(live, done, m.newAddress(), m.newAddress() + m.codeSize(), m.timestamp(), false, 0, 0);
                if (moved != null) {
                    live.add(new Function(moved.name(), m.newAddress(), moved.code(), moved.codeIndex(),
                            m.timestamp(), Long.MAX_VALUE));
                }
            }
        }
        done.addAll(live);
        return List.copyOf(done);
    }

    /**
     * Ends at {@code t} the live functions overlapping [lo, hi) — or, {@code byIndex}, the one of code index
     * {@code index} at {@code at}; returns the last one ended.
     */
    private static Function end(List<Function> live, List<Function> done, long lo, long hi, long t, boolean byIndex,
            long index, long at) {
        Function last = null;
        for (int i = live.size() - 1; i >= 0; i--) {
            Function f = live.get(i);
            boolean hit = byIndex ? f.codeIndex() == index && f.address() == at
                    : Long.compareUnsigned(f.address(), hi) < 0 && Long.compareUnsigned(lo, f.end()) < 0;
            if (hit) {
                live.remove(i);
                if (t > f.from()) {
                    done.add(f.until(t));
                }
                last = last == null ? f : last;
            }
        }
        return last;
    }
}
