package ptfence.record;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import ptfence.perfdata.EventAttr;
import ptfence.sys.SyscallException;

/**
 * What perf does on an older kernel (evsel__detect_missing_features): an EINVAL from perf_event_open drops the newest
 * optional record type the attr asks for, and the open is retried; the feature stays off for every later event, so
 * all instances of an event (and the perf.data's attr) agree. Newest first: text_poke (5.9), bpf_event and ksymbol
 * (5.1), context_switch (4.3), mmap2 and comm_exec (3.16; mmap stays, so the kernel writes MMAP instead).
 */
final class MissingFeatures {
    private static final long[] OPTIONAL = {EventAttr.FLAG_TEXT_POKE, EventAttr.FLAG_BPF_EVENT, EventAttr.FLAG_KSYMBOL,
            EventAttr.FLAG_CONTEXT_SWITCH, EventAttr.FLAG_MMAP2, EventAttr.FLAG_COMM_EXEC};
    private static final String[] NAMES = {"text_poke", "bpf_event", "ksymbol", "context_switch", "mmap2", "comm_exec"};
    private static final int FLAGS_OFFSET = 40;

    private long missing;

    /** {@code a} without the features found missing so far. */
    EventAttr strip(EventAttr a) {
        if ((a.flags() & missing) == 0) return a;
        ByteBuffer raw = ByteBuffer.allocate(a.length()).order(ByteOrder.LITTLE_ENDIAN).put(a.raw()).flip();
        raw.putLong(FLAGS_OFFSET, a.flags() & ~missing);
        return new EventAttr(raw);
    }

    /** Opens through {@code opener}, dropping optional features one by one while the kernel says EINVAL. */
    <T> T open(EventAttr a, Function<EventAttr, T> opener) {
        while (true) {
            EventAttr attempt = strip(a);
            try {
                return opener.apply(attempt);
            } catch (SyscallException e) {
                if (e.errno() != SyscallException.EINVAL || !dropNext(attempt.flags())) throw e;
            }
        }
    }

    private boolean dropNext(long flags) {
        for (long f : OPTIONAL) {
            if ((flags & f) != 0) {
                missing |= f;
                return true;
            }
        }
        return false;
    }

    /** perf's names of the features this kernel refused, newest first. */
    List<String> names() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < OPTIONAL.length; i++) if ((missing & OPTIONAL[i]) != 0) out.add(NAMES[i]);
        return out;
    }
}
