package ptfence.ptarchive;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

@Command(name = "pin", mixinStandardHelpOptions = true, description = "Keep a recording, an image or every region with a name, whatever gc's policy. "
        + "Without an argument, list pins.",
        footer = {"", "The target is a recording id if one exists, else a content key (64 hex digits), else a region name.",
                "", "Examples:", "  ptarchive pin 2026-11-22T11:00-ptrec", "  ptarchive pin --name vmlinux",
                "  ptarchive pin", "  ptarchive unpin 2026-11-22T11:00-ptrec", ""})
final class PinCommand extends PinBase implements Callable<Integer> {
    @Override
    public Integer call() {
        return run(false);
    }
}
