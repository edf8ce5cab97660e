package ptfence.script;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which "Failed to get instruction" errors perf reports where a file's code is missing: perf keeps per file (dso) the
 * state of its data, and the Intel PT decoder's instruction walk reads it. The first time perf reads a missing file's
 * data the status becomes ERROR; a walk into a file whose status is ERROR fails quietly (perf resynchronizes without an
 * error sample) once the walk has seen that status one time (dso__data_status_seen). So a walk failure is reported
 * twice per file if the walks were the first to read it, once if something read it before: perf script fetching the
 * instruction of a printed sample that has none (a recorded cycles sample) or the vdso mapping probing the thread's
 * files for their ELF class.
 *
 * <p>The state is applied where the CPUs' lines are merged, in perf's time order (one thread), never in the CPUs'
 * decoder threads: which CPU reaches a file first must not change what is printed. Files get small ids here
 * (any thread) that travel with the lines.
 */
public final class DsoData {
    private final Map<String, Integer> ids = new HashMap<>();
    private final List<String> names = new ArrayList<>();
    /** By id: 1 status ERROR, 2 ERROR and seen by the walk. Read and written by the merging thread alone. */
    private byte[] state = new byte[16];

    /** The id of file {@code dso} (1 on), for a line's gate. */
    public synchronized int id(String dso) {
        Integer i = ids.get(dso);
        if (i == null) {
            names.add(dso);
            i = names.size();
            ids.put(dso, i);
        }
        return i;
    }

    private void room(int id) {
        if (id >= state.length) {
            state = java.util.Arrays.copyOf(state, Math.max(id + 1, state.length * 2));
        }
    }

    /** A decoder walk failed in file {@code id}'s missing code: whether perf reports the error. */
    public boolean failure(int id) {
        room(id);
        if (state[id] == 2) {
            return false; // status ERROR, already seen: intel_pt_walk_next_insn returns -ENOENT, no error sample
        }
        state[id]++; // UNKNOWN -> ERROR (the read fails), or ERROR -> seen (the read is tried once more, fails)
        return true;
    }

    /** perf read file {@code id}'s data outside a walk and found it missing: its status is ERROR from now on. */
    public void probe(int id) {
        room(id);
        if (state[id] == 0) {
            state[id] = 1;
        }
    }

    /** Applies a line's gate (0: none, > 0 a walk failure, < 0 a probe): whether the line is printed. */
    boolean pass(int gate) {
        if (gate > 0) {
            return failure(gate);
        }
        if (gate < 0) {
            probe(-gate);
        }
        return true;
    }
}
