package ptfence.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every file the running command has read: the recording or trace it was given, and the files it found on its own
 * (ELF files beside the recording, under {@code --sysroot}, in the build-id cache, {@code --vmlinux},
 * {@code --kallsyms}, kcore). {@link OutputFile} consults it, so that an {@code -o} never replaces an input, whether
 * named on the command line or found while decoding ({@code ptdecode -o loopy loopy.perf} reads the ELF
 * {@code loopy} beside the recording).
 *
 * <p>One set per process, as a command is one process; {@link Tool#run} starts it empty. Files are compared by
 * what they are when the output is written (the same inode, following links), never by a remembered inode that a
 * deleted file may hand on to a new one.
 */
public final class Inputs {
    private static final Set<Path> READ = ConcurrentHashMap.newKeySet();

    private Inputs() {}

    /** Records that the command reads {@code file}; returns it. */
    public static Path add(Path file) {
        if (file != null && !file.toString().isEmpty()) {
            READ.add(file.toAbsolutePath().normalize());
        }
        return file;
    }

    /** {@link Files#readAllBytes}, recording the file as an input. */
    public static byte[] readAllBytes(Path file) throws IOException {
        add(file);
        return Files.readAllBytes(file);
    }

    /**
     * The bytes of an input file named by {@code option}; a missing file, a directory or one that cannot be read is
     * one line naming the option and the file.
     */
    public static byte[] read(Path file, String option) {
        if (Files.isDirectory(file)) {
            throw new BadInputException(option + " " + file + ": is a directory, not a file");
        }
        try {
            return readAllBytes(file);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new BadInputException(option + " " + file + ": no such file");
        } catch (java.nio.file.AccessDeniedException e) {
            throw new BadInputException(option + " " + file + ": permission denied");
        } catch (IOException e) {
            throw new BadInputException(option + " " + file + ": cannot read (" + e.getMessage() + ")");
        }
    }

    /** The input that is the same file as {@code target} is now, if any. */
    public static Optional<Path> sameAs(Path target) {
        if (target == null || !Files.exists(target)) {
            return Optional.empty();
        }
        for (Path in : List.copyOf(READ)) {
            if (OutputFile.sameFile(target, in)) {
                return Optional.of(in);
            }
        }
        return Optional.empty();
    }

    /** A new command starts with none. */
    static void forget() {
        READ.clear();
    }
}
