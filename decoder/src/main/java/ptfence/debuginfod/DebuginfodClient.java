package ptfence.debuginfod;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A debuginfod client over {@code java.net.http}: asks every server of {@code DEBUGINFOD_URLS} at once for
 * {@code /buildid/HEX/TYPE} and takes the first answer that passes the caller's check, as elfutils' client library
 * does (its environment, timeouts, retries and size limit: {@link ClientSettings}). Unlike the library it checks
 * what it got before anything is kept: an object that fails the check is refused and the next server's answer waited
 * for. Thread-safe; files are fetched in parallel by callers.
 *
 * <p>Making one costs nothing: the HTTP client ({@link HttpFetch}, the only user of {@code java.net.http}) is made at
 * the first request to an http(s) server, so a decode that needs nothing from the servers (or asks only file://
 * URLs) never loads it.
 */
public final class DebuginfodClient implements AutoCloseable {
    /** Bytes a server must deliver per timeout period (the library's 100K). */
    static final int PROGRESS_BYTES = 100 * 1024;
    /** The most one answer is read into memory whatever DEBUGINFOD_MAXSIZE says (what a Java array can hold). */
    static final long ARRAY_LIMIT = Integer.MAX_VALUE - 64;

    /** The outcome of asking for one file. */
    public sealed interface Answer {
        /** The file, checked; {@code from} is the URL that gave it. */
        record Found(byte[] bytes, String from) implements Answer {
            /** The server that gave it, as DEBUGINFOD_URLS names it (the URL less {@code /buildid/...}). */
            public String server() {
                int at = from.indexOf("/buildid/");
                return at < 0 ? from : from.substring(0, at);
            }
        }

        /** No server gave a file that passed the check; one line per server says why. */
        record NotFound(List<String> servers) implements Answer {
            /** Whether every server said 404 (the library caches only that as a miss). */
            public boolean allSaidNotFound() {
                return servers.stream().allMatch(s -> s.endsWith(": not found (404)"));
            }
        }
    }

    /** Why a server's answer was not taken. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final boolean notFound;

        Refused(String why, boolean notFound) {
            super(why, null, false, false);
            this.notFound = notFound;
        }
    }

    private final ClientSettings settings;
    private final PrintStream verbose;
    private HttpFetch http;
    private final ExecutorService requests = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "debuginfod-request");
        t.setDaemon(true);
        return t;
    });
    private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "debuginfod-timeout");
        t.setDaemon(true);
        return t;
    });

    /** @param log where DEBUGINFOD_VERBOSE lines go (stderr) */
    public DebuginfodClient(ClientSettings settings, PrintStream log) {
        this.settings = settings;
        this.verbose = settings.verbose() ? log : null;
    }

    private synchronized HttpFetch http() {
        if (http == null) {
            http = new HttpFetch(settings, requests);
        }
        return http;
    }

    public ClientSettings settings() {
        return settings;
    }

    /**
     * Asks every server for {@code /buildid/HEX/TYPE}. {@code check} returns null when the bytes are the file asked
     * for, else why not; a file that fails it (or that it cannot read) is never returned, and the other servers'
     * answers are waited for. No answer is read past DEBUGINFOD_MAXSIZE or, when that is not set, past
     * {@code defaultLimit} bytes: a server's answer is input, and its Content-Length and its body may lie.
     */
    public Answer fetch(String buildIdHex, String type, long defaultLimit, Function<byte[], String> check) {
        long limit = Math.min(ARRAY_LIMIT, settings.maxSize() > 0 ? settings.maxSize() : defaultLimit);
        long deadline = settings.maxTimeSec() > 0 ? System.nanoTime() + settings.maxTimeSec() * 1_000_000_000L
                : Long.MAX_VALUE;
        List<String> why = new ArrayList<>();
        for (int attempt = 0; attempt <= Math.max(0, settings.retryLimit()); attempt++) {
            why.clear();
            boolean onlyNotFound = true;
            CompletionService<byte[]> done = new ExecutorCompletionService<>(requests);
            List<Future<byte[]>> pending = new ArrayList<>();
            List<String> urlOf = new ArrayList<>();
            Bodies open = new Bodies();
            for (String prefix : settings.urls()) {
                String url = prefix + "/" + buildIdHex + "/" + type;
                urlOf.add(url);
                log("url " + (urlOf.size() - 1) + " " + url);
                pending.add(done.submit(() -> get(url, deadline, limit, open)));
            }
            try {
                for (int i = 0; i < pending.size(); i++) {
                    long left = deadline - System.nanoTime();
                    Future<byte[]> f = left <= 0 ? null : done.poll(left, TimeUnit.NANOSECONDS);
                    if (f == null) {
                        why.add(unanswered(pending, urlOf) + ": gave up after DEBUGINFOD_MAXTIME="
                                + settings.maxTimeSec() + " s");
                        return new Answer.NotFound(List.copyOf(why));
                    }
                    String url = urlOf.get(pending.indexOf(f));
                    String server = url.substring(0, url.indexOf("/buildid/"));
                    try {
                        byte[] bytes = f.get();
                        String wrong;
                        try {
                            wrong = check.apply(bytes);
                        } catch (RuntimeException unreadable) {
                            // a parser that did not expect what this server sent: its answer only is refused
                            wrong = "an object that cannot be read (" + bytes.length + " bytes)";
                        }
                        if (wrong == null) {
                            log("server response from " + url + ": " + bytes.length + " bytes, taken");
                            return new Answer.Found(bytes, url);
                        }
                        log("server response from " + url + ": refused, " + wrong);
                        why.add(server + ": wrong file refused (" + wrong + ")");
                        onlyNotFound = false;
                    } catch (ExecutionException e) {
                        Throwable c = e.getCause();
                        boolean notFound = c instanceof Refused r && r.notFound;
                        onlyNotFound &= notFound;
                        String reason = c instanceof Refused ? c.getMessage() : describe(c);
                        log("server response from " + url + ": " + reason);
                        why.add(server + ": " + reason);
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                why.add("interrupted");
                return new Answer.NotFound(List.copyOf(why));
            } finally {
                pending.forEach(f -> f.cancel(true));
                open.closeAll(); // a body still streaming is read no further, nor one that opens after this
            }
            if (onlyNotFound || System.nanoTime() >= deadline) {
                break;
            }
            if (attempt < settings.retryLimit()) {
                log("retry failed query, " + (settings.retryLimit() - attempt) + " attempt(s) remaining");
            }
        }
        return new Answer.NotFound(List.copyOf(why));
    }

    /** The servers of {@code pending} that have not answered. */
    private static String unanswered(List<Future<byte[]>> pending, List<String> urlOf) {
        List<String> s = new ArrayList<>();
        for (int i = 0; i < pending.size(); i++) {
            if (!pending.get(i).isDone()) {
                String url = urlOf.get(i);
                s.add(url.substring(0, url.indexOf("/buildid/")));
            }
        }
        return String.join(" ", s);
    }

    /** One server's file: its bytes, or a {@link Refused} saying why not. */
    /**
     * The bodies one question's requests are reading: once the question is answered they are all closed, and a
     * request whose body opens after that (its send returned late, its interrupt came during connect) closes its own.
     */
    static final class Bodies {
        private final java.util.Set<InputStream> open = new java.util.HashSet<>();
        private boolean closed;

        synchronized boolean add(InputStream in) {
            return !closed && open.add(in);
        }

        synchronized void remove(InputStream in) {
            open.remove(in);
        }

        synchronized void closeAll() {
            closed = true;
            open.forEach(DebuginfodClient::closeQuietly);
            open.clear();
        }
    }

    private byte[] get(String url, long deadline, long limit, Bodies open)
            throws Refused, IOException, InterruptedException {
        if (url.regionMatches(true, 0, "file://", 0, 7)) {
            try {
                Path p = Path.of(URI.create(url));
                long size = Files.size(p);
                if (size > limit) {
                    throw new Refused(tooLarge(limit) + " (" + size + " bytes)", false);
                }
                try (InputStream in = Files.newInputStream(p)) {
                    return read(in, -1, limit);
                }
            } catch (NoSuchFileException e) {
                throw new Refused("not found (404)", true);
            } catch (IllegalArgumentException e) {
                throw new Refused("not a file URL", false);
            }
        }
        HttpFetch.Response r = http().send(url);
        InputStream body = r.body();
        if (!open.add(body)) {
            closeQuietly(body);
            throw new Refused("not read: another server answered first", false);
        }
        try (InputStream in = body) {
            if (r.status() == 404) {
                throw new Refused("not found (404)", true);
            }
            if (r.status() == 406) {
                throw new Refused("larger than DEBUGINFOD_MAXSIZE=" + settings.maxSize() + " (406)", false);
            }
            if (r.status() != 200) {
                throw new Refused("HTTP " + r.status(), false);
            }
            long length = r.length();
            if (length > limit) {
                throw new Refused(tooLarge(limit) + " (Content-Length " + length + ")", false);
            }
            return readWithProgress(in, length, deadline, limit);
        } finally {
            open.remove(body);
        }
    }

    private String tooLarge(long limit) {
        return "larger than " + (settings.maxSize() > 0 ? "DEBUGINFOD_MAXSIZE=" + settings.maxSize()
                : "the " + limit + " bytes such a file may have (DEBUGINFOD_MAXSIZE unset)");
    }

    /**
     * The body, cut by the watchdog when a timeout period passes without {@link #PROGRESS_BYTES} (or the rest of the
     * body) arriving, or when DEBUGINFOD_MAXTIME is over; a body shorter than its Content-Length is refused.
     */
    private byte[] readWithProgress(InputStream in, long length, long deadline, long limit)
            throws IOException, Refused {
        Body out = new Body(length, limit);
        java.util.concurrent.atomic.AtomicReference<String> cut = new java.util.concurrent.atomic.AtomicReference<>();
        long[] mark = {0};
        List<ScheduledFuture<?>> timers = new ArrayList<>();
        if (settings.timeoutSec() > 0) {
            long period = settings.timeoutSec();
            timers.add(watchdog.scheduleAtFixedRate(() -> {
                synchronized (out) {
                    if (out.size() - mark[0] < PROGRESS_BYTES && cut.compareAndSet(null, "less than 100K within "
                            + "DEBUGINFOD_TIMEOUT=" + period + " s")) {
                        closeQuietly(in);
                    }
                    mark[0] = out.size();
                }
            }, period, period, TimeUnit.SECONDS));
        }
        if (deadline != Long.MAX_VALUE) {
            timers.add(watchdog.schedule(() -> {
                if (cut.compareAndSet(null, "not done within DEBUGINFOD_MAXTIME=" + settings.maxTimeSec() + " s")) {
                    closeQuietly(in);
                }
            }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
        }
        byte[] buf = new byte[64 << 10];
        try {
            for (int n; (n = in.read(buf)) > 0; ) {
                synchronized (out) {
                    if (!out.add(buf, n)) {
                        throw new Refused(tooLarge(limit) + " (more than " + limit + " bytes sent"
                                + (length >= 0 ? " for a Content-Length of " + length : "") + ")", false);
                    }
                }
            }
        } catch (IOException e) {
            if (cut.get() == null) {
                // the peer closed or reset the connection mid-body: say so, with how far it got
                throw new Refused("connection closed after " + out.size() + (length >= 0 ? " of " + length : "")
                        + " bytes", false);
            }
        } finally {
            timers.forEach(t -> t.cancel(false));
        }
        if (cut.get() != null) {
            throw new Refused(cut.get(), false);
        }
        if (length >= 0 && out.size() != length) {
            throw new Refused("connection closed after " + out.size() + " of " + length + " bytes", false);
        }
        return out.bytes();
    }

    /** A whole file read from {@code in}, at most {@code limit} bytes. */
    private byte[] read(InputStream in, long length, long limit) throws IOException, Refused {
        Body out = new Body(length, limit);
        byte[] buf = new byte[64 << 10];
        for (int n; (n = in.read(buf)) > 0; ) {
            if (!out.add(buf, n)) {
                throw new Refused(tooLarge(limit), false);
            }
        }
        return out.bytes();
    }

    /**
     * A body being received, never holding more than its limit: sized once by a Content-Length within the limit,
     * else grown by halves up to the limit (not doubled past it, as ByteArrayOutputStream would).
     */
    private static final class Body {
        private final long limit;
        private byte[] a;
        private int size;

        Body(long length, long limit) {
            this.limit = limit;
            this.a = new byte[(int) Math.min(limit, length >= 0 ? length : 64 << 10)];
        }

        /** Appends; false (nothing kept) when that would pass the limit. */
        boolean add(byte[] b, int n) {
            if (size + (long) n > limit) {
                return false;
            }
            if (size + n > a.length) {
                a = java.util.Arrays.copyOf(a, (int) Math.min(limit, Math.max(size + (long) n,
                        a.length + (a.length >> 1) + 1L)));
            }
            System.arraycopy(b, 0, a, size, n);
            size += n;
            return true;
        }

        int size() {
            return size;
        }

        byte[] bytes() {
            return size == a.length ? a : java.util.Arrays.copyOf(a, size);
        }
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException e) {
            // closing is how the watchdog ends a stalled read
        }
    }

    /** Why a request failed, in words (no exception class names: the line is for the user). */
    static String describe(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ConnectException) {
                return "connection refused";
            }
            if (c instanceof java.net.UnknownHostException) {
                return "unknown host " + c.getMessage();
            }
            if (c instanceof java.nio.channels.UnresolvedAddressException) {
                return "unknown host";
            }
            if (c instanceof javax.net.ssl.SSLException) {
                return "TLS failed" + (c.getMessage() == null ? "" : " (" + c.getMessage() + ")");
            }
            if (c instanceof java.io.EOFException) {
                return "connection closed before a complete answer";
            }
            if (c instanceof java.net.ProtocolException) {
                return "not an HTTP answer" + (c.getMessage() == null ? "" : " (" + c.getMessage() + ")");
            }
        }
        String m = t == null ? null : t.getMessage();
        if (t instanceof IOException) {
            return "connection failed" + (m == null || m.isBlank() ? "" : " (" + m + ")");
        }
        return "request failed" + (m == null || m.isBlank() ? "" : " (" + m + ")");
    }

    private void log(String line) {
        if (verbose != null) {
            verbose.println("debuginfod: " + line);
        }
    }

    @Override
    public void close() {
        requests.shutdownNow();
        watchdog.shutdownNow();
    }
}
