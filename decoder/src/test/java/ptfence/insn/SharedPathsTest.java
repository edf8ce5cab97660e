package ptfence.insn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import ptfence.image.ElfSegments;
import ptfence.image.Section;
import ptfence.image.Symbols;

/**
 * The decision-point memo shared by threads: every lookup on a memo that many threads fill, grow and start over at
 * once gives what a memo of the thread's own gives for the same key (end, count, last instruction, bits used, pops,
 * the calls left open, the edges), and a path number names one path per table. Real code (the statically linked
 * DynamoRIO test program in fixtures/data/real): paths from its function entries with random bits, so calls, returns to
 * earlier calls, and keys that are no simple path. Rounds with random thread counts, table bounds and pauses.
 */
class SharedPathsTest {
    private static final Path HELLO = Path.of(System.getProperty("ptfence.data", "../fixtures/data"),
            "real/dynamorio_drpt2trace/test_simple.tracedir_2022-07-06/hello");

    @Test
    void threadsSharingAMemoSeeWhatAMemoOfTheirOwnSees() throws Exception {
        org.junit.jupiter.api.Assertions.assertTrue(Files.isRegularFile(HELLO), "no " + HELLO);
        ElfSegments elf = new ElfSegments(HELLO, 0);
        Section text = null;
        for (Section s : elf.sections()) {
            if (text == null || s.size() > text.size()) {
                text = s;
            }
        }
        Section code = text;
        List<Integer> entries = new ArrayList<>();
        for (long a : new Symbols().addElf(elf).starts()) {
            if (a >= code.address() && a < code.end()) {
                entries.add((int) (a - code.address()));
            }
        }
        assertTrue(entries.size() > 500, "function entries " + entries.size());
        SplittableRandom rounds = new SplittableRandom(23);
        int paths = 0;
        int pops = 0;
        int pushes = 0;
        int failed = 0;
        for (int round = 0; round < 12; round++) {
            // a content of its own per round, so each round's caches start cold too
            CodeCache cc = CodeCache.of("SharedPathsTest/" + round, code.bytes(), ExecMode.BITS64);
            int bound = new int[] {64, 512, 1 << 18}[round % 3]; // small bounds: tables start over while others read
            TntPaths.Memo shared = new TntPaths.Memo(bound);
            int threads = 2 + rounds.nextInt(7);
            long seed = rounds.nextLong();
            ConcurrentHashMap<String, String> names = new ConcurrentHashMap<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicInteger[] seen = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < threads; w++) {
                SplittableRandom rnd = new SplittableRandom(seed + w);
                workers.add(new Thread(() -> {
                    try {
                        go.await();
                        check(cc, shared, entries, rnd, names, seen);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            workers.forEach(Thread::start);
            go.countDown();
            for (Thread t : workers) {
                t.join();
            }
            if (failure.get() != null) {
                throw new AssertionError("round " + round + " (" + threads + " threads, bound " + bound + ")", failure.get());
            }
            paths += seen[0].get();
            pops += seen[1].get();
            pushes += seen[2].get();
            failed += seen[3].get();
        }
        // the keys cover what the memo must get right
        assertTrue(paths > 10_000 && pops > 1_000 && pushes > 1_000 && failed > 1_000,
                "paths " + paths + ", ending at a return " + pops + ", leaving calls open " + pushes + ", no simple path "
                        + failed);
    }

    /** One thread's lookups: each compared with a memo of the thread's own. */
    private static void check(CodeCache cc, TntPaths.Memo shared, List<Integer> entries, SplittableRandom rnd,
            ConcurrentHashMap<String, String> names, AtomicInteger[] seen) {
        X86Decoder dec = new X86Decoder();
        TntPaths mine = shared.handle();
        TntPaths own = TntPaths.bounded(1 << 20);
        // a few hundred entries per thread, so threads ask for the same keys at the same time
        int[] keys = new int[300];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = entries.get(rnd.nextInt(entries.size()));
        }
        for (int n = 0; n < 6_000; n++) {
            int off = keys[rnd.nextInt(keys.length)];
            int size = 1 + rnd.nextInt(8);
            long bits = rnd.nextInt(1 << size);
            boolean edges = rnd.nextBoolean();
            if (rnd.nextInt(64) == 0) {
                Thread.yield(); // random timing
            }
            boolean got = mine.lookup(cc, off, bits, size, false, edges, dec);
            boolean want = own.lookup(cc, off, bits, size, false, edges, dec);
            String key = off + "/" + size + "/" + bits + (edges ? "/edges" : "");
            assertEquals(want, got, key + ": a simple path");
            if (!want) {
                seen[3].incrementAndGet();
                continue;
            }
            assertEquals(own.used, mine.used, key + ": bits used");
            assertEquals(own.pops, mine.pops, key + ": pops");
            assertEquals(own.insns, mine.insns, key + ": instructions");
            assertEquals(own.last, mine.last, key + ": last instruction");
            if (!own.pops) {
                assertEquals(own.end, mine.end, key + ": end");
            }
            assertEquals(own.pushCount, mine.pushCount, key + ": calls left open");
            assertArrayEquals(Arrays.copyOf(own.pushes, own.pushCount), Arrays.copyOf(mine.pushes, mine.pushCount),
                    key + ": calls left open");
            assertTrue(mine.within(0, cc.code().length - 1, cc.code().length + 1) == own.within(0, cc.code().length - 1,
                    cc.code().length + 1), key + ": bounds");
            seen[0].incrementAndGet();
            seen[1].addAndGet(own.pops ? 1 : 0);
            seen[2].addAndGet(own.pushCount > 0 ? 1 : 0);
            if (edges) {
                assertArrayEquals(own.pathEdges(), mine.pathEdges(), key + ": edges");
                String before = names.putIfAbsent(mine.pathTable() + "#" + mine.pathId(), key);
                assertEquals(before == null ? key : before, key, "one number, one path");
            }
        }
    }
}
