package ptfence.ptdecode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Semaphore;
import org.junit.jupiter.api.Test;
import ptfence.calls.MergeTimes;

/**
 * The call views leave most branches out of the merge by time ({@link MergeTimes}): the items they keep must come out
 * of {@link TimeMerge} in the order they had when every branch went in, ties between CPUs included. Random CPU
 * streams with many equal times, the reference being the merge of the whole streams.
 */
class MergeTimesTest {
    /** An item: its CPU, its index there, and whether the view keeps it. */
    private record Item(int cpu, int index, boolean kept) {
    }

    @Test
    void theKeptItemsComeOutInTheOrderOfTheWholeMerge() throws Exception {
        Random rnd = new Random(32);
        int leftOut = 0;
        int told = 0;
        for (int round = 0; round < 2000; round++) {
            int cpus = 2 + rnd.nextInt(3);
            long[][] times = new long[cpus][];
            boolean[][] kept = new boolean[cpus][];
            for (int c = 0; c < cpus; c++) {
                int n = rnd.nextInt(60);
                times[c] = new long[n];
                kept[c] = new boolean[n];
                long t = rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    t += rnd.nextInt(10) < 6 ? 0 : 1 + rnd.nextInt(2); // few distinct times: ties everywhere
                    if (rnd.nextInt(40) == 0) {
                        t -= 1 + rnd.nextInt(2); // a step back, which the merge must take as it comes too
                    }
                    times[c][i] = t;
                    kept[c][i] = rnd.nextInt(4) == 0;
                }
            }
            List<Item> whole = merge(times, kept, false);
            List<Item> reduced = merge(times, kept, true);
            List<Item> expected = whole.stream().filter(Item::kept).toList();
            assertEquals(expected, reduced, "round " + round);
            for (int c = 0; c < cpus; c++) {
                for (boolean k : kept[c]) {
                    leftOut += k ? 0 : 1;
                }
            }
            told += lastTold;
        }
        assertTrue(told < leftOut / 2, "told " + told + " of " + leftOut + " left-out times");
    }

    private int lastTold;

    /** The streams through a {@link TimeMerge}: whole, or only the kept items with what {@link MergeTimes} tells. */
    private List<Item> merge(long[][] times, boolean[][] kept, boolean reduce) throws InterruptedException {
        TimeMerge<Item> m = new TimeMerge<>(times.length, new Semaphore(times.length), new long[0]);
        lastTold = 0;
        for (int c = 0; c < times.length; c++) {
            TimeMerge<Item>.Producer p = m.producer(c);
            MergeTimes mt = new MergeTimes(t -> {
                p.add(t, null);
                lastTold++;
            });
            for (int i = 0; i < times[c].length; i++) {
                Item item = new Item(c, i, kept[c][i]);
                if (!reduce) {
                    p.add(times[c][i], item);
                } else if (item.kept()) {
                    mt.item(times[c][i]);
                    p.add(times[c][i], item);
                } else {
                    mt.left(times[c][i]);
                }
            }
            mt.flush();
            p.end();
        }
        List<Item> out = new ArrayList<>();
        m.drain(out::add);
        return out;
    }
}
