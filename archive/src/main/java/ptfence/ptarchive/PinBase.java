package ptfence.ptarchive;

import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.BadInputException;
import ptfence.recording.PinTarget;
import ptfence.recording.Recordings;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.ContentKey;
import ptfence.store.Snapshot;

/** Options and work shared by 'pin' and 'unpin'. */
abstract class PinBase extends ArchiveSubcommand {
    @Parameters(paramLabel = "TARGET", arity = "0..1", description = "Recording id, content key or region name.")
    String target;
    @Option(names = "--name", description = "TARGET is a region name (even if a recording has that id).")
    boolean asName;

    Integer run(boolean remove) {
        // listing only reads: it works on a read-only archive and never creates one
        try (Archive a = target == null ? openArchiveReadOnly() : openArchive()) {
            if (target == null) {
                if (remove) {
                    throw new BadInputException("unpin: which target? (see 'ptarchive pin' for the list)");
                }
                a.read(Recordings::pins).forEach(p -> out().println(p));
            } else {
                PinTarget t = a.read(s -> resolve(s, target, asName, a));
                boolean changed = a.write(b -> {
                    if (remove) {
                        return Recordings.unpin(b, t);
                    }
                    boolean was = Recordings.isPinned(b, t);
                    Recordings.pin(b, t);
                    return !was;
                });
                out().println((remove ? (changed ? "unpinned " : "was not pinned: ")
                        : (changed ? "pinned " : "already pinned: ")) + t);
            }
        }
        out().flush();
        return 0;
    }

    static PinTarget resolve(Snapshot s, String target, boolean asName, Archive a) {
        if (!asName && Recordings.get(s, target).isPresent()) {
            return new PinTarget(PinTarget.Type.RECORDING, target);
        }
        if (!asName && target.length() == 64 && ContentKey.isHex(target)) {
            return new PinTarget(PinTarget.Type.IMAGE, target.toLowerCase(java.util.Locale.ROOT));
        }
        if (!RegionIndex.byName(s, target).isEmpty() || asName) {
            return new PinTarget(PinTarget.Type.NAME, target);
        }
        if (Recordings.pins(s).stream().anyMatch(p -> p.value().equals(target))) {
            return Recordings.pins(s).stream().filter(p -> p.value().equals(target)).findFirst().orElseThrow();
        }
        throw new BadInputException("archive " + a.directory() + ": no recording, image or region named '" + target + "'");
    }
}
