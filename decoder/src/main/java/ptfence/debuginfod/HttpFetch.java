package ptfence.debuginfod;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.Executor;

/**
 * The one place that uses {@code java.net.http}: a request to one debuginfod server, as elfutils' client sends it
 * (its User-Agent, X-DEBUGINFOD-MAXSIZE, DEBUGINFOD_HEADERS, DEBUGINFOD_TIMEOUT until the headers). Apart from
 * {@link DebuginfodClient} so that the module and its classes load only when a server is asked over HTTP.
 */
final class HttpFetch {
    /** A server's answer: status, Content-Length (-1: none), the body to read. */
    record Response(int status, long length, InputStream body) {}

    private final ClientSettings settings;
    private final HttpClient http;

    HttpFetch(ClientSettings settings, Executor executor) {
        this.settings = settings;
        HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NORMAL).executor(executor);
        if (settings.timeoutSec() > 0) {
            b.connectTimeout(Duration.ofSeconds(settings.timeoutSec()));
        }
        this.http = b.build();
    }

    Response send(String url) throws DebuginfodClient.Refused, IOException, InterruptedException {
        HttpRequest.Builder rb;
        try {
            rb = HttpRequest.newBuilder(URI.create(url)).GET();
        } catch (IllegalArgumentException e) {
            throw new DebuginfodClient.Refused("malformed URL", false);
        }
        rb.header("User-Agent", "ptfence/0.1," + System.getProperty("os.name") + "/" + System.getProperty("os.arch"));
        if (settings.maxSize() > 0) {
            rb.header("X-DEBUGINFOD-MAXSIZE", Long.toString(settings.maxSize()));
        }
        for (String h : settings.headers()) {
            int colon = h.indexOf(':');
            try {
                rb.header(h.substring(0, colon).strip(), h.substring(colon + 1).strip());
            } catch (IllegalArgumentException e) {
                // a header java.net.http manages itself (Host, Content-Length...) or a malformed one: skipped
            }
        }
        if (settings.timeoutSec() > 0) {
            rb.timeout(Duration.ofSeconds(settings.timeoutSec())); // until the response headers
        }
        HttpResponse<InputStream> r;
        try {
            r = http.send(rb.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpConnectTimeoutException e) {
            throw new DebuginfodClient.Refused("no connection within DEBUGINFOD_TIMEOUT=" + settings.timeoutSec()
                    + " s", false);
        } catch (HttpTimeoutException e) {
            throw new DebuginfodClient.Refused("no answer within DEBUGINFOD_TIMEOUT=" + settings.timeoutSec() + " s",
                    false);
        } catch (ConnectException e) {
            throw new DebuginfodClient.Refused("connection refused", false);
        }
        long length;
        try {
            length = r.headers().firstValueAsLong("Content-Length").orElse(-1);
        } catch (NumberFormatException e) {
            r.body().close();
            throw new DebuginfodClient.Refused("a Content-Length that is not a number", false);
        }
        return new Response(r.statusCode(), length, r.body());
    }
}
