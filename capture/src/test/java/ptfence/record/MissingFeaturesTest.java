package ptfence.record;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import ptfence.perfdata.EventAttr;
import ptfence.sys.SyscallException;

/**
 * The fallback on an older kernel, against a kernel model that refuses the record types it predates with EINVAL,
 * as perf_event_open's attr check does (this machine's kernel takes them all; PtrecLiveTest checks that nothing was
 * dropped there).
 */
class MissingFeaturesTest {
    private static final long KERNEL_TEXT = EventAttr.FLAG_KSYMBOL | EventAttr.FLAG_BPF_EVENT | EventAttr.FLAG_TEXT_POKE
            | EventAttr.FLAG_SAMPLE_ID_ALL;
    private static final long SIDEBAND = EventAttr.FLAG_MMAP | EventAttr.FLAG_MMAP2 | EventAttr.FLAG_COMM
            | EventAttr.FLAG_COMM_EXEC | EventAttr.FLAG_TASK | EventAttr.FLAG_CONTEXT_SWITCH | EventAttr.FLAG_SAMPLE_ID_ALL;

    /** A kernel that knows none of {@code unknown}: every attr asking for one is EINVAL; records what was tried. */
    private static final class Kernel {
        final long unknown;
        final List<Long> tried = new ArrayList<>();

        Kernel(long unknown) {
            this.unknown = unknown;
        }

        Long open(EventAttr a) {
            tried.add(a.flags());
            if ((a.flags() & unknown) != 0) throw new SyscallException("perf_event_open", SyscallException.EINVAL);
            return a.flags();
        }
    }

    private static EventAttr attr(long flags) {
        return EventAttr.builder().type(1).config(9).flags(flags).build();
    }

    @Test
    void aFiveOhKernelRecordsWithoutTextPokeOnly() {
        MissingFeatures m = new MissingFeatures();
        Kernel k = new Kernel(EventAttr.FLAG_TEXT_POKE); // 5.1..5.8: ksymbol and bpf_event, no text_poke
        assertEquals(KERNEL_TEXT & ~EventAttr.FLAG_TEXT_POKE, m.open(attr(KERNEL_TEXT), k::open));
        assertEquals(List.of(KERNEL_TEXT, KERNEL_TEXT & ~EventAttr.FLAG_TEXT_POKE), k.tried);
        assertEquals(List.of("text_poke"), m.names());
        // the next CPU's instance is opened without it at once, and the header's attr says what was opened
        k.tried.clear();
        m.open(attr(KERNEL_TEXT), k::open);
        assertEquals(1, k.tried.size());
        assertEquals(KERNEL_TEXT & ~EventAttr.FLAG_TEXT_POKE, m.strip(attr(KERNEL_TEXT)).flags());
        // the sideband asks for nothing this kernel lacks
        assertEquals(SIDEBAND, m.open(attr(SIDEBAND), k::open));
    }

    @Test
    void anOldKernelDropsNewestFirstAndKeepsMmap() {
        MissingFeatures m = new MissingFeatures();
        long unknown = EventAttr.FLAG_TEXT_POKE | EventAttr.FLAG_BPF_EVENT | EventAttr.FLAG_KSYMBOL
                | EventAttr.FLAG_MMAP2 | EventAttr.FLAG_COMM_EXEC | EventAttr.FLAG_CONTEXT_SWITCH; // 3.x
        Kernel k = new Kernel(unknown);
        assertEquals(EventAttr.FLAG_SAMPLE_ID_ALL, m.open(attr(KERNEL_TEXT), k::open));
        assertEquals(SIDEBAND & ~unknown, m.open(attr(SIDEBAND), k::open));
        assertTrue((SIDEBAND & ~unknown & EventAttr.FLAG_MMAP) != 0, "mmap stays: the kernel writes MMAP then");
        assertEquals(List.of("text_poke", "bpf_event", "ksymbol", "context_switch", "mmap2", "comm_exec"), m.names());
    }

    @Test
    void anEinvalForAnotherReasonIsTheError() {
        MissingFeatures m = new MissingFeatures();
        Kernel k = new Kernel(EventAttr.FLAG_TASK); // not optional: nothing to drop
        SyscallException e = assertThrows(SyscallException.class, () -> m.open(attr(SIDEBAND), k::open));
        assertEquals(SyscallException.EINVAL, e.errno());
        // it tried without each optional flag before giving up, as perf does
        assertEquals(4, k.tried.size());
        SyscallException eperm = assertThrows(SyscallException.class, () -> m.open(attr(SIDEBAND), a -> {
            throw new SyscallException("perf_event_open", SyscallException.EACCES);
        }));
        assertEquals(SyscallException.EACCES, eperm.errno());
    }
}
