package ptfence.script;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Semaphore;
import org.junit.jupiter.api.Test;

/**
 * The merge's marks and turns ({@link ThreadStacks} hands thread stacks between CPUs with them): several sources on
 * their own threads, under fewer decoding turns than sources, with random pauses, write lines, place marks (directly
 * and before a later line) and wait for turns. Whatever the timing, the lines come out in time order, and each turn's
 * answer counts exactly the marks of every source placed before its time: the reference is the sources' own plan,
 * sorted by time.
 */
class ScriptMergeTurnsTest {
    private static final int SOURCES = 3;

    /** One step of a source's plan: a line, a mark, a mark placed before the next line past it, or a turn. */
    private record Step(int kind, long time) {
    }

    @Test
    void turnsSeeEveryMarkBeforeThemWhateverTheTiming() throws Exception {
        Random seeds = new Random(45);
        for (int round = 0; round < 12; round++) {
            long seed = seeds.nextLong();
            for (int turns : new int[] {1, 2}) {
                run(seed, turns);
            }
        }
    }

    private static void run(long seed, int turnCount) throws Exception {
        Random r = new Random(seed);
        List<List<Step>> plans = new ArrayList<>();
        List<Long> markTimes = new ArrayList<>();
        int lines = 0;
        for (int i = 0; i < SOURCES; i++) {
            List<Step> plan = new ArrayList<>();
            long t = 2 * i; // even times, distinct over the sources; a mark placed before a line is odd
            int n = 1000 + r.nextInt(4000); // past a batch (2048 lines) on most sources
            for (int k = 0; k < n; k++) {
                t += 2 * SOURCES * (1 + r.nextInt(3)); // no ties to order (a CPU's placed mark precedes the next
                // run's switch, which a turn comes at or after)
                int kind = r.nextInt(100) < 90 ? 0 : 1 + r.nextInt(3);
                if (kind == 2) {
                    // a mark placed before the first line at or after t (at t - 1), then that line
                    plan.add(new Step(2, t));
                    markTimes.add(t - 1);
                    plan.add(new Step(0, t));
                    lines++;
                    continue;
                }
                plan.add(new Step(kind, t));
                if (kind == 0) {
                    lines++;
                } else if (kind == 1) {
                    markTimes.add(t);
                }
            }
            plans.add(plan);
        }
        Collections.sort(markTimes);
        Semaphore turns = new Semaphore(turnCount);
        ScriptMerge merge = new ScriptMerge(SOURCES, turns);
        List<Long> seen = new ArrayList<>(); // the marks in the order the printer ran them (its thread only)
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < SOURCES; i++) {
            ScriptMerge.Producer p = merge.producer(i, false);
            List<Step> plan = plans.get(i);
            Random pause = new Random(seed + i);
            Thread th = new Thread(() -> {
                turns.acquireUninterruptibly();
                try {
                    for (Step s : plan) {
                        if (pause.nextInt(200) == 0) {
                            Thread.sleep(pause.nextInt(3));
                        }
                        switch (s.kind()) {
                            case 0 -> {
                                p.line().str("line " + s.time()).nl();
                                p.commit(s.time(), false);
                            }
                            case 1 -> p.mark(s.time(), () -> seen.add(s.time()));
                            case 2 -> p.before(s.time(), () -> p.mark(s.time() - 1, () -> seen.add(s.time() - 1)));
                            default -> {
                                long[] answer = {-1};
                                ScriptMerge.Turn turn = new ScriptMerge.Turn() {
                                    @Override
                                    protected void answer() {
                                        answer[0] = seen.size();
                                    }
                                };
                                p.await(s.time(), turn);
                                long want = markTimes.stream().filter(m -> m < s.time()).count();
                                assertEquals(want, answer[0], "marks before the turn at " + s.time() + " (seed "
                                        + seed + ", " + turnCount + " turns)");
                            }
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                    merge.abandon();
                } finally {
                    p.end();
                    turns.release();
                }
            });
            th.setDaemon(true);
            threads.add(th);
            th.start();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        merge.drain(out, (b, time) -> { }, 0);
        for (Thread th : threads) {
            th.join(60_000);
            assertTrue(!th.isAlive(), "a source still waits (seed " + seed + ")");
        }
        if (!failures.isEmpty()) {
            throw new AssertionError(failures.get(0));
        }
        assertEquals(markTimes, seen, "marks run in time order (seed " + seed + ")");
        List<Long> printed = out.toString(StandardCharsets.UTF_8).lines().map(l -> Long.parseLong(l.substring(5)))
                .toList();
        assertEquals(lines, printed.size());
        List<Long> sorted = new ArrayList<>(printed);
        Collections.sort(sorted);
        assertEquals(sorted, printed, "lines in time order (seed " + seed + ")");
    }
}
