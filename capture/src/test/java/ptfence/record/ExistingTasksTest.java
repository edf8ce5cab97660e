package ptfence.record;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleId;

/** /proc as perf synthesizes it: a COMM per thread, an MMAP2 per executable mapping, in perf's fields. */
class ExistingTasksTest {
    @TempDir
    Path proc;

    private static SampleId sid(int pid, int tid) {
        return new SampleId(0x2 | 0x4 | 0x80 | 0x10000, pid, tid, 0, 0, 0, 0, 0, 77);
    }

    @Test
    void threadsAndExecutableMappings() throws Exception {
        Files.createDirectories(proc.resolve("42/task/42"));
        Files.createDirectories(proc.resolve("42/task/43"));
        Files.writeString(proc.resolve("42/task/42/comm"), "app\n");
        Files.writeString(proc.resolve("42/task/43/comm"), "worker 1\n");
        Files.writeString(proc.resolve("42/maps"), String.join("\n",
                "55d0a0000000-55d0a0002000 r--p 00000000 fe:00 1234                       /usr/bin/app",
                "55d0a0002000-55d0a0010000 r-xp 00002000 fe:00 1234                       /usr/bin/app",
                "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 ",
                "7f0000100000-7f0000200000 r-xs 00010000 00:01 99                         /memfd:jit (deleted)",
                "7f0000300000-7f0000400000 r-xp 00000000 103:02 5                         /opt/a b/lib x.so",
                "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", ""));
        Files.createDirectories(proc.resolve("2/task/2")); // a kernel thread: a name, no mappings
        Files.writeString(proc.resolve("2/task/2/comm"), "kthreadd\n");
        Files.writeString(proc.resolve("2/maps"), "");
        Files.createDirectories(proc.resolve("self"));

        ExistingTasks t = new ExistingTasks(proc);
        assertEquals(List.of(2, 42), t.processes());
        List<PerfRecord> r = t.records(42, ExistingTasksTest::sid);
        assertEquals(new PerfRecord.Comm(0, 42, 42, "app", sid(42, 42)), r.get(0));
        assertEquals(new PerfRecord.Comm(0, 42, 43, "worker 1", sid(42, 43)), r.get(1));
        assertEquals(List.of(
                new PerfRecord.Mmap2(2, 42, 42, 0x55d0a0002000L, 0xe000, 0x2000, 0xfe, 0, 1234, 0, 5, 2, "/usr/bin/app", sid(42, 42)),
                new PerfRecord.Mmap2(2, 42, 42, 0x7f0000000000L, 0x1000, 0, 0, 0, 0, 0, 7, 2, "//anon", sid(42, 42)),
                new PerfRecord.Mmap2(2, 42, 42, 0x7f0000100000L, 0x100000, 0x10000, 0, 1, 99, 0, 5, 1,
                        "/memfd:jit (deleted)", sid(42, 42)),
                new PerfRecord.Mmap2(2, 42, 42, 0x7f0000300000L, 0x100000, 0, 0x103, 2, 5, 0, 5, 2, "/opt/a b/lib x.so",
                        sid(42, 42)),
                new PerfRecord.Mmap2(2, 42, 42, 0xffffffffff600000L, 0x1000, 0, 0, 0, 0, 0, 4, 2, "[vsyscall]",
                        sid(42, 42))), r.subList(2, r.size()));
        assertEquals(List.of(new PerfRecord.Comm(0, 2, 2, "kthreadd", sid(2, 2))), t.records(2, ExistingTasksTest::sid));
        assertEquals(List.of(), t.records(7, ExistingTasksTest::sid), "gone: nothing");
    }
}
