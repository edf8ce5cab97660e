package ptfence.store;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.lmdbjava.BufferProxy;
import org.lmdbjava.ByteArrayProxy;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.Txn;

/**
 * Child JVM of {@link ProxyStressTest}: byte[] puts and gets through lmdbjava while another thread forces
 * collections, the condition under which lmdbjava's ByteArrayProxy lets jnr free a key or value still in use.
 * {@code ProxyStress lmdbjava|pinned DIR SECONDS}; prints "OK puts gets" or dies.
 */
public final class ProxyStress {
    private ProxyStress() {}

    public static void main(String[] args) throws Exception {
        NativeLmdb.locate(); // lmdbjava used directly: its library from the per-user cache, not /tmp
        BufferProxy<byte[]> proxy = args[0].equals("pinned") ? PinnedByteArrayProxy.PROXY : ByteArrayProxy.PROXY_BA;
        Path dir = Files.createDirectories(Path.of(args[1]));
        long until = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong puts = new AtomicLong();
        AtomicLong gets = new AtomicLong();
        try (Env<byte[]> env = Env.create(proxy).setMapSize(256L << 20).setMaxDbs(2).setMaxReaders(16)
                .open(dir.toFile(), EnvFlags.MDB_NOTLS, EnvFlags.MDB_NOSYNC)) {
            Dbi<byte[]> db = env.openDbi("t".getBytes(StandardCharsets.UTF_8), DbiFlags.MDB_CREATE);
            Thread gc = new Thread(() -> {
                while (!stop.get()) {
                    System.gc();
                }
            });
            gc.start();
            Thread[] workers = new Thread[2];
            for (int w = 0; w < workers.length; w++) {
                int seed = w;
                workers[w] = new Thread(() -> {
                    Random rnd = new Random(seed);
                    long n = 0;
                    while (System.nanoTime() < until) {
                        byte[][] keys = new byte[50][];
                        byte[][] vals = new byte[50][];
                        try (Txn<byte[]> txn = env.txnWrite()) {
                            for (int i = 0; i < keys.length; i++) {
                                keys[i] = (seed + ":" + n++).getBytes(StandardCharsets.UTF_8);
                                vals[i] = new byte[100 + rnd.nextInt(5000)];
                                rnd.nextBytes(vals[i]);
                                db.put(txn, keys[i], vals[i]);
                                puts.incrementAndGet();
                            }
                            txn.commit();
                        }
                        try (Txn<byte[]> txn = env.txnRead()) {
                            for (int i = 0; i < keys.length; i++) {
                                if (!Arrays.equals(vals[i], db.get(txn, keys[i]))) {
                                    throw new AssertionError("value of " + new String(keys[i]) + " differs");
                                }
                                gets.incrementAndGet();
                            }
                        }
                        try (Txn<byte[]> txn = env.txnWrite()) {
                            for (byte[] k : keys) {
                                db.delete(txn, k);
                            }
                            txn.commit();
                        }
                    }
                });
                workers[w].start();
            }
            for (Thread t : workers) {
                t.join();
            }
            stop.set(true);
            gc.join();
        }
        System.out.println("OK " + puts + " " + gets);
    }
}
