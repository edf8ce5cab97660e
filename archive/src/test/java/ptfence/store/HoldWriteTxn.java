package ptfence.store;

import java.io.File;
import java.nio.ByteBuffer;
import org.lmdbjava.Env;
import org.lmdbjava.Txn;

/**
 * Test helper, run in a child JVM: opens an archive's LMDB environment with lmdbjava directly, begins a write
 * transaction, says "held PID" on stdout and sleeps with it (issue 20: every writer then waited silently for ever).
 * Arguments: the archive directory, milliseconds to hold.
 */
public final class HoldWriteTxn {
    private HoldWriteTxn() {}

    public static void main(String[] args) throws Exception {
        NativeLmdb.locate(); // lmdbjava used directly: its library from the per-user cache, not /tmp
        try (Env<ByteBuffer> env = Env.create().setMaxDbs(32).setMapSize(1L << 30).open(new File(args[0]));
                Txn<ByteBuffer> txn = env.txnWrite()) {
            System.out.println("held " + ProcessHandle.current().pid());
            System.out.flush();
            Thread.sleep(Long.parseLong(args[1]));
        }
    }

    /** Starts the holder on {@code archive} and returns once it holds the transaction. */
    public static Process start(java.nio.file.Path archive, long millis) throws Exception {
        Process p = new ProcessBuilder(ChildJvm.command(HoldWriteTxn.class.getName(), archive.toString(),
                Long.toString(millis))).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine();
        if (line == null || !line.equals("held " + p.pid())) {
            p.destroyForcibly();
            throw new IllegalStateException("the holder did not start: " + line);
        }
        return p;
    }
}
