package ptfence.sys;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import ptfence.perfdata.EventAttr;

/** The perf_event and mmap facades against the kernel's own answers. */
class PerfEventMmapTest {
    static EventAttr dummy(long flags) {
        return EventAttr.builder().type(1).config(9).sampleType(0x2 | 0x4 | 0x80 | 0x10000)
                .flags(EventAttr.FLAG_DISABLED | EventAttr.FLAG_SAMPLE_ID_ALL | flags).build();
    }

    @Test
    void ringMappingMatchesTheKernelsUserPage() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root for a CPU-wide event");
        try (PerfEvent e = PerfEvent.open(dummy(EventAttr.FLAG_KSYMBOL), "dummy", -1, 0)) {
            assertTrue(e.id() > 0);
            MappedMemory m = e.mapRing(8);
            assertEquals(9L * Mmap.PAGE_SIZE, m.length());
            assertEquals(Mmap.PAGE_SIZE, m.getLong(1040), "data_offset");
            assertEquals(8L * Mmap.PAGE_SIZE, m.getLong(1048), "data_size");
            assertEquals(0, m.getLongAcquire(1024), "data_head of a disabled event");
            m.putLongRelease(1032, 0);
            m.close();
            assertFalse(m.isOpen());
            assertThrows(IllegalStateException.class, () -> m.getLong(0));
            m.close(); // twice is harmless
        }
    }

    @Test
    void errorsNameTheCallAndErrno() {
        SyscallException e = assertThrows(SyscallException.class,
                () -> Mmap.map(-1, 0, 4096, Mmap.Protection.READ_ONLY, "nothing"));
        assertEquals("mmap(nothing): EBADF", e.getMessage());
        assertEquals(SyscallException.name(9), e.errnoName());
        EventAttr bogus = EventAttr.builder().type(0x7fff0000).config(0).build();
        e = assertThrows(SyscallException.class, () -> PerfEvent.open(bogus, "bogus", -1, 0));
        assertTrue(e.getMessage().startsWith("perf_event_open(bogus, cpu 0): "), e.getMessage());
        assertTrue(e.errno() == SyscallException.ENOENT || e.errno() == SyscallException.EACCES, e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Mmap.map(0, 1, 4096, Mmap.Protection.READ_ONLY, "x"));
    }

    @Test
    void paranoidHintIsPerfs() {
        assertEquals("perf_event_open(intel_pt, cpu 3): EACCES — run as root or set kernel.perf_event_paranoid",
                new SyscallException("perf_event_open(intel_pt, cpu 3)", SyscallException.EACCES).getMessage());
    }
}
