package ptfence.debuginfod;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The race behind a load-only CI failure (HostileServersTest): requests register their bodies while the question's
 * answer closes them all. Whatever the timing, every body is closed in the end: by the close if it was registered
 * before, by its own request (refused) if after; none is left open to be read on. 500 rounds, 2 to 8 requests each,
 * random pauses on both sides.
 */
class LateBodiesTest {
    private static final class Body extends ByteArrayInputStream {
        final AtomicBoolean closed = new AtomicBoolean();

        Body() {
            super(new byte[1]);
        }

        @Override
        public void close() {
            closed.set(true);
        }
    }

    @Test
    void everyBodyIsClosedWhetherItOpensBeforeOrAfterTheAnswer() throws Exception {
        Random random = new Random(4545);
        int refusedInAll = 0;
        for (int round = 0; round < 500; round++) {
            DebuginfodClient.Bodies bodies = new DebuginfodClient.Bodies();
            int n = 2 + random.nextInt(7);
            List<Body> all = new ArrayList<>();
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> requests = new ArrayList<>();
            int[] refused = new int[1];
            for (int i = 0; i < n; i++) {
                Body b = new Body();
                all.add(b);
                long pause = random.nextInt(300_000);
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    for (long end = System.nanoTime() + pause; System.nanoTime() < end; ) {
                        Thread.onSpinWait();
                    }
                    if (!bodies.add(b)) {
                        b.close(); // what a request does with a body refused after the answer
                        synchronized (refused) {
                            refused[0]++;
                        }
                    }
                });
                t.start();
                requests.add(t);
            }
            start.countDown();
            long pause = random.nextInt(300_000);
            for (long end = System.nanoTime() + pause; System.nanoTime() < end; ) {
                Thread.onSpinWait();
            }
            bodies.closeAll();
            for (Thread t : requests) {
                t.join();
            }
            refusedInAll += refused[0];
            for (Body b : all) {
                assertTrue(b.closed.get(), "round " + round + ": a body left open");
            }
        }
        assertTrue(refusedInAll > 0, "some bodies opened after the answer (the race was run)");
    }
}
