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
    /**
     * A function's code at [address, address + code.length) during [from, to) of the dump's clock, and its source
     * lines (the debug info written before its load; addresses as they are here, moved with the code).
     */
    public record Function(String name, long address, byte[] code, long codeIndex, long from, long to,
            List<JitRecord.LineEntry> lines) {
        public long end() {
            return address + code.length;
        }

        Function until(long t) {
            return new Function(name, address, code, codeIndex, from, t, lines);
        }

        /** The same code at {@code to} from time {@code t}: its lines move with it. */
        Function movedTo(long to, long t) {
            long d = to - address;
            List<JitRecord.LineEntry> moved = new ArrayList<>();
            for (JitRecord.LineEntry e : lines) {
                moved.add(new JitRecord.LineEntry(e.address() + d, e.line(), e.discriminator(), e.file()));
            }
            return new Function(name, to, code, codeIndex, t, Long.MAX_VALUE, List.copyOf(moved));
        }

        /**
         * The source line of {@code addr}: the last entry at or before it, up to the next entry. The last entry ends
         * the table, as in the line program {@code perf inject --jit} writes, so the lines are the ones perf shows.
         */
        public JitRecord.LineEntry lineAt(long addr) {
            JitRecord.LineEntry best = null;
            for (JitRecord.LineEntry e : lines) {
                if (Long.compareUnsigned(e.address(), addr) <= 0 && Long.compareUnsigned(addr, end()) < 0
                        && (best == null || Long.compareUnsigned(e.address(), best.address()) >= 0)) {
                    best = e;
                }
            }
            return best == null || lineEnd(best) == NO_NEXT ? null : best;
        }

        private static final long NO_NEXT = -1;

        /** Where the line starting at {@code e} ends: the next entry's address ({@code -1} if none). */
        public long lineEnd(JitRecord.LineEntry e) {
            long end = NO_NEXT;
            for (JitRecord.LineEntry o : lines) {
                if (Long.compareUnsigned(o.address(), e.address()) > 0 && (end == NO_NEXT
                        || Long.compareUnsigned(o.address(), end) < 0)) {
                    end = o.address();
                }
            }
            return end;
        }
    }

    private JitCode() {
    }

    /** Every function the dump loaded, at each address it lived at, with the window it held its bytes there. */
    public static List<Function> functions(JitDump dump) {
        List<Function> done = new ArrayList<>();
        List<Function> live = new ArrayList<>();
        JitRecord.DebugInfo pending = null;
        for (JitRecord r : dump.records()) {
            if (r instanceof JitRecord.DebugInfo d) {
                pending = d; // a JIT writes a function's lines just before its load
            } else if (r instanceof JitRecord.Load l) {
                end(live, done, l.codeAddress(), l.codeAddress() + l.code().length, l.timestamp(), false, 0, 0);
                List<JitRecord.LineEntry> lines = pending != null && pending.codeAddress() == l.codeAddress()
                        ? pending.entries() : List.of();
                pending = null;
                live.add(new Function(l.name(), l.codeAddress(), l.code(), l.codeIndex(), l.timestamp(),
                        Long.MAX_VALUE, lines));
            } else if (r instanceof JitRecord.Move m) {
                Function moved = end(live, done, 0, 0, m.timestamp(), true, m.codeIndex(), m.oldAddress());
                end(live, done, m.newAddress(), m.newAddress() + m.codeSize(), m.timestamp(), false, 0, 0);
                if (moved != null) {
                    live.add(moved.movedTo(m.newAddress(), m.timestamp()));
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
