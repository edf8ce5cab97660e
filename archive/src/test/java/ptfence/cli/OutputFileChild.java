package ptfence.cli;

import java.nio.file.Path;
import java.util.List;

/**
 * Test helper, run in a child JVM: opens an {@link OutputFile} on the path given, writes a little, prints "writing"
 * and waits to be signalled (as {@code ptdecode -o F} would be, in the middle of a long decode).
 */
public final class OutputFileChild {
    private OutputFileChild() {}

    public static void main(String[] args) throws Exception {
        OutputFile f = OutputFile.create(Path.of(args[0]), List.of());
        f.stream().write(new byte[1 << 20]);
        f.stream().flush();
        System.out.println("writing");
        System.out.flush();
        Thread.sleep(120_000);
    }
}
