package ptfence.debuginfod;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client against servers on 127.0.0.1 that misbehave in the ways the issue names (down, silent, stalling
 * mid-body, too large, serving the wrong file) and a file:// tree, with the library's environment variables. The
 * same faults against the real debuginfod are fixtures' FleetTest.
 */
class DebuginfodClientTest {
    static final String ID = "ab".repeat(32);
    static final byte[] FILE = "the file".getBytes();
    static final long LIMIT = 1 << 20;
    static final Function<byte[], String> EXACT = b -> java.util.Arrays.equals(b, FILE) ? null : "not the file";

    @TempDir
    Path tmp;
    private final List<AutoCloseable> servers = new ArrayList<>();
    private final Map<String, String> lastHeaders = new ConcurrentHashMap<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable s : servers) {
            s.close();
        }
    }

    /** An HTTP server on 127.0.0.1 answering every /buildid/ request with this status and body. */
    String http(int status, byte[] body) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.setExecutor(Executors.newCachedThreadPool());
        s.createContext("/buildid/", ex -> {
            ex.getRequestHeaders().forEach((k, v) -> lastHeaders.put(k.toLowerCase(), v.get(0)));
            ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        s.start();
        servers.add(() -> s.stop(0));
        return "http://127.0.0.1:" + s.getAddress().getPort();
    }

    /** A server that accepts and then sends {@code prefix} (maybe nothing) and nothing more. */
    String stalling(String prefix) throws IOException {
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        List<Socket> open = new java.util.concurrent.CopyOnWriteArrayList<>();
        Thread t = new Thread(() -> {
            try {
                while (true) {
                    Socket c = ss.accept();
                    open.add(c);
                    c.getOutputStream().write(prefix.getBytes());
                    c.getOutputStream().flush();
                }
            } catch (IOException e) {
                // closed
            }
        });
        t.setDaemon(true);
        t.start();
        servers.add(() -> {
            ss.close();
            for (Socket c : open) {
                c.close();
            }
        });
        return "http://127.0.0.1:" + ss.getLocalPort();
    }

    DebuginfodClient client(String urls, String... env) {
        Map<String, String> e = new HashMap<>(Map.of("DEBUGINFOD_URLS", urls, "DEBUGINFOD_CACHE_PATH",
                tmp.resolve("cache").toString()));
        for (int i = 0; i < env.length; i += 2) {
            e.put(env[i], env[i + 1]);
        }
        return new DebuginfodClient(ClientSettings.of(e), new PrintStream(OutputStream.nullOutputStream()));
    }

    static List<String> why(DebuginfodClient.Answer a) {
        return ((DebuginfodClient.Answer.NotFound) a).servers();
    }

    @Test
    void theFirstGoodAnswerOfAllServersAskedAtOnceIsTaken() throws Exception {
        String slow = stalling("");
        String wrong = http(200, "another file".getBytes());
        String good = http(200, FILE);
        try (DebuginfodClient c = client(slow + " " + wrong + "/ " + good)) {
            long t0 = System.nanoTime();
            DebuginfodClient.Answer a = c.fetch(ID, "executable", LIMIT, EXACT);
            assertTrue(a instanceof DebuginfodClient.Answer.Found, a.toString());
            assertArrayEquals(FILE, ((DebuginfodClient.Answer.Found) a).bytes());
            assertEquals(good + "/buildid/" + ID + "/executable", ((DebuginfodClient.Answer.Found) a).from());
            assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "a silent server does not hold up the others");
        }
    }

    @Test
    void eachServersFailureIsNamedAndOnlyNotFoundIsNotRetried() throws Exception {
        String missing = http(404, new byte[0]);
        String wrong = http(200, "another file".getBytes());
        String refused;
        try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            refused = "http://127.0.0.1:" + closed.getLocalPort();
        }
        try (DebuginfodClient c = client(missing + " " + wrong + " " + refused, "DEBUGINFOD_RETRY_LIMIT", "1")) {
            // servers answer in any order: one line each
            assertEquals(java.util.Set.of(missing + ": not found (404)", wrong + ": wrong file refused (not the "
                    + "file)", refused + ": connection refused"), new java.util.HashSet<>(why(c.fetch(ID, "executable", LIMIT,
                    EXACT))));
        }
        try (DebuginfodClient c = client(missing)) {
            assertTrue(((DebuginfodClient.Answer.NotFound) c.fetch(ID, "executable", LIMIT, EXACT)).allSaidNotFound());
        }
    }

    @Test
    void timeoutsAndSizeLimitsAreTheLibrarys() throws Exception {
        String silent = stalling("");
        try (DebuginfodClient c = client(silent, "DEBUGINFOD_TIMEOUT", "1", "DEBUGINFOD_RETRY_LIMIT", "0")) {
            long t0 = System.nanoTime();
            assertEquals(List.of(silent + ": no answer within DEBUGINFOD_TIMEOUT=1 s"),
                    why(c.fetch(ID, "executable", LIMIT, EXACT)));
            assertTrue(System.nanoTime() - t0 < 20_000_000_000L);
        }
        String stalled = stalling("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nsome bytes");
        try (DebuginfodClient c = client(stalled, "DEBUGINFOD_TIMEOUT", "1", "DEBUGINFOD_RETRY_LIMIT", "0")) {
            assertEquals(List.of(stalled + ": less than 100K within DEBUGINFOD_TIMEOUT=1 s"),
                    why(c.fetch(ID, "executable", LIMIT, EXACT)));
        }
        try (DebuginfodClient c = client(stalled, "DEBUGINFOD_MAXTIME", "1", "DEBUGINFOD_RETRY_LIMIT", "0")) {
            List<String> why = why(c.fetch(ID, "executable", LIMIT, EXACT));
            assertTrue(why.get(0).contains("DEBUGINFOD_MAXTIME=1 s"), why.toString());
        }
        try (DebuginfodClient c = client(stalled, "DEBUGINFOD_MAXSIZE", "4096", "DEBUGINFOD_RETRY_LIMIT", "0")) {
            assertEquals(List.of(stalled + ": larger than DEBUGINFOD_MAXSIZE=4096 (Content-Length 1000000)"),
                    why(c.fetch(ID, "executable", LIMIT, EXACT)));
        }
        String tooLarge = http(406, new byte[0]);
        try (DebuginfodClient c = client(tooLarge, "DEBUGINFOD_MAXSIZE", "4096")) {
            assertEquals(List.of(tooLarge + ": larger than DEBUGINFOD_MAXSIZE=4096 (406)"),
                    why(c.fetch(ID, "executable", LIMIT, EXACT)));
            assertEquals("4096", lastHeaders.get("x-debuginfod-maxsize"), "the size limit is told to the server");
        }
    }

    @Test
    void extraHeadersAndFileUrlsAsTheLibraryReadsThem() throws Exception {
        Path headers = Files.writeString(tmp.resolve("headers"), "X-Ptfence-Test: yes\n\n  \nAuthorization: Bearer t\n");
        String good = http(200, FILE);
        try (DebuginfodClient c = client(good, "DEBUGINFOD_HEADERS_FILE", headers.toString())) {
            assertTrue(c.fetch(ID, "executable", LIMIT, EXACT) instanceof DebuginfodClient.Answer.Found);
            assertEquals("yes", lastHeaders.get("x-ptfence-test"));
            assertEquals("Bearer t", lastHeaders.get("authorization"));
            assertTrue(lastHeaders.get("user-agent").startsWith("ptfence/"));
        }
        Path tree = tmp.resolve("tree");
        Files.createDirectories(tree.resolve("buildid").resolve(ID));
        Files.write(tree.resolve("buildid").resolve(ID).resolve("executable"), FILE);
        try (DebuginfodClient c = client("file://" + tree)) {
            assertTrue(c.fetch(ID, "executable", LIMIT, EXACT) instanceof DebuginfodClient.Answer.Found);
            assertEquals(List.of("file://" + tree + ": not found (404)"), why(c.fetch("cd".repeat(32), "executable", LIMIT,
                    EXACT)));
        }
    }

    @Test
    void settingsAreReadAsTheLibraryReadsThem() {
        ClientSettings s = ClientSettings.of(Map.of("DEBUGINFOD_URLS", "  http://a:8002/ http://b  http://a:8002/ "
                + "file:///t", "DEBUGINFOD_TIMEOUT", "7x", "DEBUGINFOD_MAXSIZE", "junk", "HOME", "/h"));
        assertEquals(List.of("http://a:8002/buildid", "http://b/buildid", "file:///t/buildid"), s.urls());
        assertEquals(7, s.timeoutSec());
        assertEquals(0, s.maxSize());
        assertEquals(0, s.maxTimeSec());
        assertEquals(ClientSettings.DEFAULT_RETRY_LIMIT, s.retryLimit());
        assertEquals(Path.of("/h/.cache/debuginfod_client"), s.cache());
        assertEquals(Path.of("/x/debuginfod_client"), ClientSettings.of(Map.of("XDG_CACHE_HOME", "/x", "HOME", "/h"))
                .cache());
        assertEquals(Path.of("/c"), ClientSettings.of(Map.of("DEBUGINFOD_CACHE_PATH", "/c")).cache());
        assertEquals(ClientSettings.DEFAULT_TIMEOUT, ClientSettings.of(Map.of()).timeoutSec());
        assertTrue(!ClientSettings.of(Map.of("DEBUGINFOD_URLS", "  ")).enabled());
    }

    @Test
    void theClientCacheIsUsedAsTheLibraryUsesIt() throws Exception {
        ClientCache cache = new ClientCache(tmp.resolve("cache"));
        assertTrue(cache.lookup(ID, "executable") instanceof ClientCache.Lookup.Unknown);
        Path p = cache.store(ID, "executable", FILE, null);
        assertEquals(tmp.resolve("cache").resolve(ID).resolve("executable"), p);
        assertEquals("r--------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(p)));
        assertEquals(new ClientCache.Lookup.Hit(p), cache.lookup(ID, "executable"));
        String other = "cd".repeat(32);
        cache.storeMiss(other, "executable");
        assertTrue(cache.lookup(other, "executable") instanceof ClientCache.Lookup.RecentMiss);
        Files.setLastModifiedTime(cache.path(other, "executable"), FileTime.fromMillis(System.currentTimeMillis()
                - 3_600_000));
        assertTrue(cache.lookup(other, "executable") instanceof ClientCache.Lookup.Unknown, "a miss ages out");
        // cleaning: due when the interval file is older than the interval; removes files unread for max_unused_age_s
        cache.cleanIfDue();
        Files.writeString(tmp.resolve("cache/max_unused_age_s"), "60");
        Files.setAttribute(p, "lastAccessTime", FileTime.fromMillis(System.currentTimeMillis() - 120_000));
        Files.setLastModifiedTime(tmp.resolve("cache/cache_clean_interval_s"), FileTime.fromMillis(0));
        cache.cleanIfDue();
        assertTrue(!Files.exists(p), "unread for longer than max_unused_age_s");
        assertTrue(Files.exists(tmp.resolve("cache/cache_clean_interval_s")));
    }
}
