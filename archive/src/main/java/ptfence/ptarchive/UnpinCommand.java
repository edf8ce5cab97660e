package ptfence.ptarchive;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

@Command(name = "unpin", mixinStandardHelpOptions = true, description = "Remove a pin (see 'ptarchive pin').",
        footer = {"", "Examples:", "  ptarchive unpin 2026-11-22T11:00-ptrec", "  ptarchive unpin --name vmlinux", ""})
final class UnpinCommand extends PinBase implements Callable<Integer> {
    @Override
    public Integer call() {
        return run(true);
    }
}
