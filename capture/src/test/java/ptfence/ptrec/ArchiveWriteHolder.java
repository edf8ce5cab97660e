package ptfence.ptrec;

import java.nio.file.Path;
import ptfence.store.Archive;

/**
 * Test helper, run in a child JVM: opens an archive and sleeps inside a write transaction, saying "held PID" once it
 * holds it (issue 20: ptrec then waited for ever, deaf to SIGINT and SIGTERM). Arguments: archive, milliseconds.
 */
public final class ArchiveWriteHolder {
    private ArchiveWriteHolder() {}

    public static void main(String[] args) throws Exception {
        try (Archive a = Archive.open(Path.of(args[0]))) {
            a.write(b -> {
                System.out.println("held " + ProcessHandle.current().pid());
                System.out.flush();
                try {
                    Thread.sleep(Long.parseLong(args[1]));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return null;
            });
        }
    }

    /** Starts a holder and returns once it holds the write transaction. */
    static Process start(Path archive, long millis) throws Exception {
        java.util.List<String> cmd = PtrecLiveTest.ptrecJava();
        cmd.remove("--no-kernel-text"); // ptrec's option, not this class's
        cmd.set(cmd.indexOf(PtrecCommand.class.getName()), ArchiveWriteHolder.class.getName());
        cmd.addAll(java.util.List.of(archive.toString(), Long.toString(millis)));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine();
        if (line == null || !line.equals("held " + p.pid())) {
            p.destroyForcibly();
            throw new IllegalStateException("the holder did not start: " + line);
        }
        return p;
    }
}
