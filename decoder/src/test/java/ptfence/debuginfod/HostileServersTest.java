package ptfence.debuginfod;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.image.Elf;
import ptfence.perfdata.Feature;
import ptfence.publish.ImageObject;
import ptfence.region.Region;
import ptfence.store.ContentKey;

/**
 * Debuginfod answers are input. Servers on 127.0.0.1 answer as the hostile ones of issue 31 did: an object whose
 * build-id note claims a name of 0x7ffffffd bytes, a 1.3 KB object whose {@code .text} is flagged compressed with a
 * claimed size of about 2 GB, an endless body without Content-Length, a Content-Length of 100 GB. Each is refused
 * with a line saying what it sent, costs no more than the bound, and a good server asked beside it still gives the
 * image; the fetch outcome names only the server that answered.
 */
class HostileServersTest {
    @TempDir
    Path tmp;
    private final List<AutoCloseable> servers = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable s : servers) {
            s.close();
        }
    }

    /** A real published object (the archive's writer) for a random image of {@code size} bytes. */
    record Published(ContentKey key, byte[] image, Region region, byte[] object) {}

    static Published published(int size, long seed) {
        byte[] image = new byte[size];
        new Random(seed).nextBytes(image);
        Region r = PublishedImageTest.region(image, 0xffffffffc0001000L, 10, "bpf_prog_0123456789abcdef_prog", 7);
        return new Published(ContentKey.of(image), image, r, ImageObject.write(ContentKey.of(image), image,
                List.of(r)));
    }

    /** An HTTP server on 127.0.0.1 answering /buildid/KEY/executable with the object of that key, else 404. */
    String serving(Map<String, byte[]> objects) throws IOException {
        return serving(objects, 0);
    }

    /** {@link #serving(Map)} answering after {@code delayMs} (so that a hostile server's answer is read first). */
    String serving(Map<String, byte[]> objects, long delayMs) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.setExecutor(Executors.newCachedThreadPool());
        s.createContext("/buildid/", ex -> {
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            String[] p = ex.getRequestURI().getPath().split("/");
            byte[] body = p.length == 4 ? objects.get(p[2]) : null;
            if (body == null) {
                ex.sendResponseHeaders(404, -1);
            } else {
                ex.sendResponseHeaders(200, body.length);
                try (OutputStream o = ex.getResponseBody()) {
                    o.write(body);
                }
            }
            ex.close();
        });
        s.start();
        servers.add(() -> s.stop(0));
        return "http://127.0.0.1:" + s.getAddress().getPort();
    }

    /** A raw server that sends {@code head} and then zeros for as long as the client reads; counts what it sent. */
    final class Endless implements AutoCloseable {
        final ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final AtomicLong sent = new AtomicLong();
        final List<Socket> open = new CopyOnWriteArrayList<>();
        /** Per connection accepted, in order: whether the client closed it (the writer's write failed). */
        final List<AtomicBoolean> gone = new CopyOnWriteArrayList<>();

        Endless(String head) throws IOException {
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        Socket c = ss.accept();
                        open.add(c);
                        AtomicBoolean closedByClient = new AtomicBoolean();
                        gone.add(closedByClient);
                        Thread w = new Thread(() -> {
                            byte[] zeros = new byte[64 << 10];
                            try (c) {
                                OutputStream o = c.getOutputStream();
                                o.write(head.getBytes());
                                while (true) {
                                    o.write(zeros);
                                    sent.addAndGet(zeros.length);
                                }
                            } catch (IOException e) {
                                closedByClient.set(true); // the client closed: what the bound must do
                            }
                        });
                        w.setDaemon(true);
                        w.start();
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            t.setDaemon(true);
            t.start();
            servers.add(this);
        }

        String url() {
            return "http://127.0.0.1:" + ss.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            ss.close();
            for (Socket c : open) {
                c.close();
            }
        }
    }

    DebuginfodClient client(String urls, String... env) {
        Map<String, String> e = new HashMap<>(Map.of("DEBUGINFOD_URLS", urls, "DEBUGINFOD_CACHE_PATH",
                tmp.resolve("cache").toString(), "DEBUGINFOD_RETRY_LIMIT", "0"));
        for (int i = 0; i < env.length; i += 2) {
            e.put(env[i], env[i + 1]);
        }
        return new DebuginfodClient(ClientSettings.of(e), new PrintStream(OutputStream.nullOutputStream()));
    }

    /** Completes an empty archive with the image through {@code urls}, as ptdecode does for a recording. */
    RemoteImages.Outcome complete(Published p, String urls, String... env) {
        Feature.TextRegions named = NamedCode.feature("rec-1", "boot-a", 0, 100_000, List.of(p.region()));
        try (DebuginfodClient c = client(urls, env)) {
            return RemoteImages.complete(named, tmp.resolve("archive-" + System.nanoTime()), tmp.resolve("perf.data"),
                    c);
        }
    }

    /** The good server alone, then the hostile one asked first beside it: the same image, from the good server. */
    void goodServerStillWins(Published p, String hostile, String hostileWhy) throws IOException {
        String good = serving(Map.of(p.key().hex(), p.object()));
        RemoteImages.Outcome alone = complete(p, good);
        assertEquals(1, alone.fetched(), alone.missing().toString());
        RemoteImages.Outcome both = complete(p, hostile + " " + good);
        assertEquals(1, both.fetched(), both.missing().toString());
        // the good server answering a second later: the hostile answer is read first, and the good one still waited for
        String slowGood = serving(Map.of(p.key().hex(), p.object()), 1000);
        RemoteImages.Outcome later = complete(p, hostile + " " + slowGood);
        assertEquals(List.of(slowGood), later.servers(), later.missing().toString());
        assertArrayEquals(p.image(), both.images().get(p.key()));
        assertEquals(alone.regions(), both.regions(), "the same regions as with the good server alone");
        assertEquals(List.of(good), both.servers(), "'fetched ... from' names the server that answered");
        RemoteImages.Outcome bad = complete(p, hostile);
        assertEquals(0, bad.fetched());
        assertEquals(1, bad.missing().size(), bad.missing().toString());
        String line = bad.missing().get(0);
        assertTrue(line.contains(hostile + ": " + hostileWhy), line);
        assertFalse(line.matches(".*(Exception|Error)\\b.*"), "no Java class names: " + line);
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        for (int i = 0; i + needle.length <= hay.length; i++) {
            if (java.util.Arrays.equals(hay, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        throw new AssertionError("not found");
    }

    /** Bytes the calling thread allocates while running {@code r}. */
    static long allocated(Runnable r) {
        com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().getId();
        long before = t.getThreadAllocatedBytes(id);
        r.run();
        return t.getThreadAllocatedBytes(id) - before;
    }

    @Test
    void aBuildIdNoteWithAHugeNameSizeIsRefusedAndTheGoodServerWins() throws Exception {
        Published p = published(113, 1);
        byte[] bad = p.object().clone();
        ByteBuffer b = ByteBuffer.wrap(bad).order(ByteOrder.LITTLE_ENDIAN);
        int note = indexOf(bad, new byte[] {4, 0, 0, 0, 32, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0});
        b.putInt(note, 0x7ffffffd);
        Elf elf = Elf.of(Path.of("x"), bad);
        assertEquals(0, elf.buildId().length, "a note running past its section holds no build id");
        b.putInt(note, 0xfffffffd);
        assertEquals(0, Elf.of(Path.of("x"), bad).buildId().length);
        b.putInt(note, 0x7ffffffd);
        String hostile = serving(Map.of(p.key().hex(), bad));
        goodServerStillWins(p, hostile, "wrong file refused (its build id is missing)");
    }

    @Test
    void aCompressedTextClaimingTwoGigabytesAllocatesNothingOfThatAndTheGoodServerWins() throws Exception {
        Published p = published(64, 2);
        byte[] bad = p.object().clone();
        ByteBuffer b = ByteBuffer.wrap(bad).order(ByteOrder.LITTLE_ENDIAN);
        Elf elf = Elf.of(Path.of("x"), bad);
        int textIndex = 0;
        while (!elf.sections().get(textIndex).name().equals(".text")) {
            textIndex++;
        }
        Elf.SectionHeader text = elf.sections().get(textIndex);
        int sh = (int) (b.getLong(0x28) + (long) textIndex * 64);
        b.putLong(sh + 8, text.flags() | 0x800); // SHF_COMPRESSED
        b.putInt((int) text.offset(), 1).putInt((int) text.offset() + 4, 0) // ELFCOMPRESS_ZLIB
                .putLong((int) text.offset() + 8, 0x7ff0_0000L).putLong((int) text.offset() + 16, 16);
        assertTrue(bad.length < 2048, "a small object: " + bad.length);
        Elf e = Elf.of(Path.of("x"), bad);
        long cost = allocated(() -> assertNull(e.section(".text"), "a size deflate cannot reach from these bytes"));
        assertTrue(cost < 1 << 20, "allocated " + cost + " bytes for a " + bad.length + "-byte object");
        String hostile = serving(Map.of(p.key().hex(), bad));
        goodServerStillWins(p, hostile, "wrong file refused (no .text section)");
    }

    @Test
    void anEndlessBodyIsCutAtTheBoundAndNotReadOnOnceTheGoodServerAnswered() throws Exception {
        Published p = published(17, 3);
        try (Endless endless = new Endless("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")) {
            long t0 = System.nanoTime();
            RemoteImages.Outcome bad = complete(p, endless.url(), "DEBUGINFOD_MAXSIZE", "4000000");
            assertEquals(List.of("image " + p.key().hex() + " of " + p.region().name() + " (0x"
                    + Long.toHexString(p.region().address()) + ", 17 bytes) not found: " + endless.url()
                    + ": larger than DEBUGINFOD_MAXSIZE=4000000 (more than 4000000 bytes sent)"), bad.missing());
            // unset, the bound is the image's length and what an object may add to it; the body is not read on
            RemoteImages.Outcome unset = complete(p, endless.url());
            assertTrue(unset.missing().get(0).endsWith(endless.url() + ": larger than the "
                    + RemoteImages.limit(17) + " bytes such a file may have (DEBUGINFOD_MAXSIZE unset) "
                    + "(more than " + RemoteImages.limit(17) + " bytes sent)"), unset.missing().get(0));
            assertTrue(System.nanoTime() - t0 < 60_000_000_000L);
            String good = serving(Map.of(p.key().hex(), p.object()));
            // the earlier questions' connections are closed by the client (each cut at its bound) before they return
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (!endless.gone.stream().allMatch(AtomicBoolean::get) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(endless.gone.stream().allMatch(AtomicBoolean::get), "the bounded reads closed their bodies");
            int earlier = endless.gone.size();
            long before = endless.sent.get();
            RemoteImages.Outcome both = complete(p, endless.url() + " " + good);
            assertEquals(List.of(good), both.servers());
            assertArrayEquals(p.image(), both.images().get(p.key()));
            // the endless server's connection for this question, if the request got that far before the good answer
            // (on a loaded machine it may not have): closed by the client, however late it opened
            deadline = System.nanoTime() + 30_000_000_000L;
            while (!endless.gone.subList(earlier, endless.gone.size()).stream().allMatch(AtomicBoolean::get)
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(endless.gone.subList(earlier, endless.gone.size()).stream().allMatch(AtomicBoolean::get),
                    "the endless body is closed once the good answer is taken");
            assertTrue(endless.sent.get() - before < RemoteImages.limit(17) + (8 << 20),
                    "read no further than the bound: " + (endless.sent.get() - before));
        }
    }

    @Test
    void aContentLengthOfOneHundredGigabytesIsRefusedBeforeItsBodyIsRead() throws Exception {
        Published p = published(40, 4);
        try (Endless liar = new Endless("HTTP/1.1 200 OK\r\nContent-Length: 107374182400\r\n\r\n")) {
            long t0 = System.nanoTime();
            RemoteImages.Outcome bad = complete(p, liar.url());
            assertTrue(bad.missing().get(0).endsWith(liar.url() + ": larger than the "
                    + RemoteImages.limit(40) + " bytes such a file may have (DEBUGINFOD_MAXSIZE unset) "
                    + "(Content-Length 107374182400)"), bad.missing().get(0));
            assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "refused on its headers");
            String good = serving(Map.of(p.key().hex(), p.object()));
            RemoteImages.Outcome both = complete(p, liar.url() + " " + good);
            assertEquals(List.of(good), both.servers());
            assertArrayEquals(p.image(), both.images().get(p.key()));
        }
    }

    @Test
    void aShortBodyIsReportedAsWhatItIs() throws Exception {
        Published p = published(30, 5);
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        servers.add(ss);
        Thread t = new Thread(() -> {
            try {
                while (true) {
                    try (Socket c = ss.accept()) {
                        c.getOutputStream().write("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nabc".getBytes());
                    }
                }
            } catch (IOException e) {
                // closed
            }
        });
        t.setDaemon(true);
        t.start();
        String url = "http://127.0.0.1:" + ss.getLocalPort();
        RemoteImages.Outcome bad = complete(p, url);
        assertTrue(bad.missing().get(0).endsWith(url + ": connection closed after 3 of 5000 bytes"),
                bad.missing().get(0));
    }
}
