package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import ptfence.recording.Recordings;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.Verifier;

@Command(name = "verify", mixinStandardHelpOptions = true, description = "Re-hash every image and check every region, index entry and recording. "
        + "Exit 1 listing each problem if anything is damaged.",
        footer = {"", "Exit status: 0 all good, 1 damage found (listed), 2 the archive cannot be read at all.",
                "", "Examples:", "  ptarchive verify", "  ptarchive verify --archive /mnt/backup/ptfence-archive", ""})
final class VerifyCommand extends ArchiveSubcommand implements Callable<Integer> {
    /** Exit status when damage was found. */
    static final int EXIT_DAMAGED = 1;

    @Override
    public Integer call() {
        PrintWriter out = out();
        PrintWriter err = spec.commandLine().getErr();
        List<String> problems = new ArrayList<>();
        try (Archive a = openArchive()) {
            String summary = a.read(s -> {
                Verifier.Counts images = Verifier.images(s, problems::add);
                long regions = RegionIndex.check(s, problems::add);
                long recordings = Recordings.check(s, problems::add);
                return images.images() + " images (" + Units.bytes(images.bytes()) + ") re-hashed, " + regions
                        + " regions, " + recordings + " recordings checked";
            });
            for (String p : problems) {
                err.println("ptarchive verify: " + p);
            }
            if (problems.isEmpty()) {
                out.println("ok: " + summary);
            } else {
                out.println("DAMAGED: " + problems.size() + " problem(s); " + summary);
            }
        }
        out.flush();
        err.flush();
        return problems.isEmpty() ? 0 : EXIT_DAMAGED;
    }
}
