package ptfence.record;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * perf record's habit with an existing output (check_backup): a non-empty {@code perf.data} becomes
 * {@code perf.data.old} when a new recording starts. The new file is written in place (a killed ptrec leaves it
 * readable at the target), so the move happens before it is created; if the start then fails, {@link #restore()}
 * puts both files back as they were: the existing {@code .old} waits under a hidden name until {@link #keep()}.
 */
final class PreviousOutput {
    private final Path target, old, aside;
    private final boolean existed, moved, oldAside;

    private PreviousOutput(Path target, Path old, Path aside, boolean existed, boolean moved, boolean oldAside) {
        this.target = target;
        this.existed = existed;
        this.old = old;
        this.aside = aside;
        this.moved = moved;
        this.oldAside = oldAside;
    }

    /** Moves a non-empty regular {@code target} to {@code target.old}; anything else (none, empty, /dev/null) stays. */
    static PreviousOutput moveAside(Path target) throws IOException {
        Path old = target.resolveSibling(target.getFileName() + ".old");
        Path aside = target.resolveSibling("." + target.getFileName() + ".old.ptrec-" + ProcessHandle.current().pid());
        boolean existed = Files.exists(target, LinkOption.NOFOLLOW_LINKS);
        if (!Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) || Files.size(target) == 0) {
            return new PreviousOutput(target, old, aside, existed, false, false);
        }
        boolean oldAside = Files.exists(old, LinkOption.NOFOLLOW_LINKS);
        if (oldAside) Files.move(old, aside, StandardCopyOption.ATOMIC_MOVE);
        try {
            Files.move(target, old, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (oldAside) Files.move(aside, old, StandardCopyOption.ATOMIC_MOVE);
            throw e;
        }
        return new PreviousOutput(target, old, aside, true, true, oldAside);
    }

    /** Whether an existing file was moved to {@code .old}. */
    boolean moved() {
        return moved;
    }

    /** The recording started: the previous {@code .old} goes, as perf replaces it. */
    void keep() throws IOException {
        if (oldAside) Files.deleteIfExists(aside);
    }

    /** The start failed: the new file goes and the old ones come back, as if ptrec had never run. */
    void restore() throws IOException {
        if (!existed) Files.deleteIfExists(target);
        if (!moved) return;
        Files.move(old, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        if (oldAside) Files.move(aside, old, StandardCopyOption.ATOMIC_MOVE);
    }
}
