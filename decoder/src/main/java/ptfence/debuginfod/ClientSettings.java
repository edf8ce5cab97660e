package ptfence.debuginfod;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The settings elfutils' client library (libdebuginfod, as perf, gdb and debuginfod-find use it) reads from the
 * environment, read the same way, so one {@code DEBUGINFOD_URLS} serves them all:
 *
 * <ul>
 *   <li>{@code DEBUGINFOD_URLS}: server URL prefixes separated by spaces (http, https, file); each gets
 *       {@code /buildid/} appended (one slash), duplicates are dropped. Unset or empty: no server is asked.</li>
 *   <li>{@code DEBUGINFOD_TIMEOUT} (default 90 s; 0 or less: none): a server that does not deliver at least 100 KiB,
 *       or the whole file when it is smaller, within that many seconds (counted from each 100 KiB) is skipped; also
 *       the connect timeout.</li>
 *   <li>{@code DEBUGINFOD_MAXTIME} (default 0: none): the longest one file may take, over all its servers.</li>
 *   <li>{@code DEBUGINFOD_MAXSIZE} (default 0: none): larger files are refused; sent to servers as
 *       {@code X-DEBUGINFOD-MAXSIZE} (which answer 406).</li>
 *   <li>{@code DEBUGINFOD_RETRY_LIMIT} (default 2): queries that failed other than by 404 are tried again.</li>
 *   <li>{@code DEBUGINFOD_HEADERS_FILE}: extra request headers, one per line.</li>
 *   <li>{@code DEBUGINFOD_VERBOSE}: a line per request and answer on stderr.</li>
 *   <li>{@code DEBUGINFOD_CACHE_PATH}, else {@code $HOME/.debuginfod_client_cache} when it exists, else
 *       {@code $XDG_CACHE_HOME/debuginfod_client}, else {@code $HOME/.cache/debuginfod_client}: the client cache
 *       ({@link ClientCache}).</li>
 * </ul>
 * Numbers are read as C's atoi/atol read them (leading digits; anything else is 0).
 *
 * @param urls        the server prefixes, each ending in {@code /buildid}
 * @param timeoutSec  DEBUGINFOD_TIMEOUT
 * @param maxTimeSec  DEBUGINFOD_MAXTIME
 * @param maxSize     DEBUGINFOD_MAXSIZE
 * @param retryLimit  DEBUGINFOD_RETRY_LIMIT
 * @param headers     extra request headers ("Name: value")
 * @param verbose     DEBUGINFOD_VERBOSE is set
 * @param cache       the client cache directory
 */
public record ClientSettings(List<String> urls, long timeoutSec, long maxTimeSec, long maxSize, int retryLimit,
        List<String> headers, boolean verbose, Path cache) {
    public static final long DEFAULT_TIMEOUT = 90;
    public static final int DEFAULT_RETRY_LIMIT = 2;

    public ClientSettings {
        urls = List.copyOf(urls);
        headers = List.copyOf(headers);
    }

    /** From this process's environment. */
    public static ClientSettings fromEnvironment() {
        return of(System.getenv());
    }

    /** From an environment map (the process's, or a test's). */
    public static ClientSettings of(Map<String, String> env) {
        List<String> urls = new ArrayList<>();
        String list = env.get("DEBUGINFOD_URLS");
        if (list != null) {
            for (String u : list.trim().split(" +")) {
                if (u.isEmpty()) {
                    continue;
                }
                String prefix = (u.length() > 1 && u.endsWith("/") ? u : u + "/") + "buildid";
                if (!urls.contains(prefix)) {
                    urls.add(prefix);
                }
            }
        }
        long timeout = env.containsKey("DEBUGINFOD_TIMEOUT") ? atol(env.get("DEBUGINFOD_TIMEOUT")) : DEFAULT_TIMEOUT;
        int retries = env.containsKey("DEBUGINFOD_RETRY_LIMIT") ? (int) atol(env.get("DEBUGINFOD_RETRY_LIMIT"))
                : DEFAULT_RETRY_LIMIT;
        List<String> headers = new ArrayList<>();
        String headersFile = env.get("DEBUGINFOD_HEADERS_FILE");
        if (headersFile != null) {
            try {
                for (String line : Files.readAllLines(Path.of(headersFile))) {
                    if (!line.isBlank() && line.indexOf(':') > 0) {
                        headers.add(line.strip());
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the library skips an unreadable header file (and says so when verbose)
            }
        }
        return new ClientSettings(urls, timeout, atol(env.get("DEBUGINFOD_MAXTIME")),
                atol(env.get("DEBUGINFOD_MAXSIZE")), retries, headers, env.containsKey("DEBUGINFOD_VERBOSE"),
                cachePath(env));
    }

    /** Whether any server is configured. */
    public boolean enabled() {
        return !urls.isEmpty();
    }

    /** The servers as the user wrote them (without the {@code /buildid} suffix), for messages. */
    public String servers() {
        List<String> s = new ArrayList<>();
        for (String u : urls) {
            s.add(u.substring(0, u.length() - "/buildid".length()));
        }
        return String.join(" ", s);
    }

    static Path cachePath(Map<String, String> env) {
        String explicit = env.get("DEBUGINFOD_CACHE_PATH");
        if (explicit != null && !explicit.isEmpty()) {
            return Path.of(explicit);
        }
        String home = env.getOrDefault("HOME", "/");
        Path old = Path.of(home, ".debuginfod_client_cache");
        if (Files.exists(old)) {
            return old;
        }
        String xdg = env.get("XDG_CACHE_HOME");
        return (xdg != null && !xdg.isEmpty() ? Path.of(xdg) : Path.of(home, ".cache")).resolve("debuginfod_client");
    }

    /** C's atol: optional sign and leading digits; anything else gives 0. */
    static long atol(String s) {
        if (s == null) {
            return 0;
        }
        String t = s.strip();
        int i = 0;
        boolean negative = false;
        if (i < t.length() && (t.charAt(i) == '-' || t.charAt(i) == '+')) {
            negative = t.charAt(i) == '-';
            i++;
        }
        long v = 0;
        for (; i < t.length() && Character.isDigit(t.charAt(i)) && v < Long.MAX_VALUE / 10; i++) {
            v = v * 10 + (t.charAt(i) - '0');
        }
        return negative ? -v : v;
    }
}
