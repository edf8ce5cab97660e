package ptfence.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OutputFileTest {
    @TempDir
    Path dir;

    @Test
    void anUncommittedOutputLeavesTheOldFileAndNoTemporary() throws Exception {
        Path out = dir.resolve("k");
        Files.writeString(out, "earlier result");
        try (OutputFile f = OutputFile.create(out, List.of())) {
            f.stream().write("half".getBytes(StandardCharsets.UTF_8));
            f.stream().flush();
        }
        assertEquals("earlier result", Files.readString(out));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(out), s.toList());
        }
    }

    @Test
    void aCommittedOutputReplacesTheFileWithItsPermissions() throws Exception {
        Path out = dir.resolve("k");
        Files.writeString(out, "earlier result");
        Files.setPosixFilePermissions(out, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r-----"));
        try (OutputFile f = OutputFile.create(out, List.of())) {
            f.stream().write(new byte[] {1, 2, 3});
            f.commit();
            assertTrue(f.committed());
        }
        assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(out));
        assertEquals("rw-r-----", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(out)));
    }

    @Test
    void anInputIsRefusedByInodeWhateverThePath() throws Exception {
        Path in = dir.resolve("rec.data");
        Files.writeString(in, "recording");
        Path link = dir.resolve("alias");
        Files.createLink(link, in);
        BadInputException e = assertThrows(BadInputException.class,
                () -> OutputFile.create(link, List.of(dir.resolve("./rec.data"))));
        assertTrue(e.getMessage().contains("is also an input"), e.getMessage());
        assertEquals("recording", Files.readString(in));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(2, s.count());
        }
    }

    @Test
    void aDirectoryOrAMissingParentIsBadInput() {
        assertThrows(BadInputException.class, () -> OutputFile.create(dir, List.of()));
        assertThrows(BadInputException.class, () -> OutputFile.create(dir.resolve("no/such/x"), List.of()));
        assertFalse(Files.exists(dir.resolve("no")));
    }

    // issue 20: errors named the temporary file ('.F.ptfence-PID.tmp'), not the output the user gave
    @Test
    void errorsNameTheOutputNeverTheTemporaryFile() throws Exception {
        BadInputException e = assertThrows(BadInputException.class, () -> OutputFile.create(Path.of("/proc/x"),
                List.of()));
        assertEquals("/proc/x: cannot create it in /proc (no such file or directory)", e.getMessage());
        assertEquals("output file name is empty",
                assertThrows(BadInputException.class, () -> OutputFile.create(Path.of(""), List.of())).getMessage());
        assertEquals(dir.resolve("no/such/x") + ": no such directory " + dir.resolve("no"),
                assertThrows(BadInputException.class, () -> OutputFile.create(dir.resolve("no/such/x"), List.of()))
                        .getMessage(), "names the first directory that is missing");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(Path.of("/dev/full")), "/dev/full");
        java.nio.file.FileSystemException full = assertThrows(java.nio.file.FileSystemException.class, () -> {
            try (OutputFile f = OutputFile.create(Path.of("/dev/full"), List.of())) {
                f.stream().write(new byte[1 << 17]);
                f.commit();
            }
        });
        assertEquals("/dev/full", full.getFile());
        assertTrue(full.getReason().contains("No space left on device"), full.getReason());
        assertTrue(Tool.isUserError(full), "a full device is the user's to fix, not an internal error");
    }

    // issue 20: 'ptdecode -o loopy loopy.perf' read the ELF 'loopy' beside the recording, then replaced it with text
    @Test
    void aFileReadWhileTheOutputWasWrittenIsNotReplaced() throws Exception {
        Path elf = dir.resolve("loopy");
        Files.writeString(elf, "an ELF file");
        Inputs.forget();
        try (OutputFile f = OutputFile.create(elf, List.of())) {
            f.stream().write("the listing".getBytes(StandardCharsets.UTF_8));
            Inputs.readAllBytes(dir.resolve("./loopy")); // the decode finds it and reads it
            BadInputException e = assertThrows(BadInputException.class, f::commit);
            assertTrue(e.getMessage().startsWith(elf + ": is also an input (" + elf + " was read)"), e.getMessage());
        } finally {
            Inputs.forget();
        }
        assertEquals("an ELF file", Files.readString(elf));
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(elf), s.toList(), "no temporary file left");
        }
    }

    // issue 20: SIGINT or SIGTERM during 'ptdecode -o F' left a hidden '.F.ptfence-PID.tmp' (29 MB there)
    @Test
    void aSignalRemovesTheTemporaryFileAndLeavesTheOutputAsItWas() throws Exception {
        for (String signal : new String[] {"INT", "TERM"}) {
            Path out = dir.resolve("F");
            Files.writeString(out, "earlier result");
            Process p = new ProcessBuilder(withDefaultSignals(JavaChild.command(List.of(),
                    OutputFileChild.class.getName(), List.of(out.toString()))))
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try {
                assertEquals("writing", new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))
                        .readLine());
                try (Stream<Path> s = Files.list(dir)) {
                    assertEquals(2, s.count(), "the temporary file is there while it writes");
                }
                assertEquals(0, new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start().waitFor());
                assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "SIG" + signal + " ends it");
            } finally {
                p.destroyForcibly().waitFor();
            }
            assertEquals("earlier result", Files.readString(out));
            try (Stream<Path> s = Files.list(dir)) {
                assertEquals(List.of(out), s.toList(), "SIG" + signal + " left the temporary file");
            }
        }
    }

    /**
     * The command as a terminal's job runs it. A test run from a non-interactive shell's background job (a CI
     * runner) inherits SIGINT ignored, and HotSpot keeps an inherited SIG_IGN, so the signal would never arrive.
     */
    static List<String> withDefaultSignals(List<String> command) {
        List<String> c = new java.util.ArrayList<>(List.of("env", "--default-signal=INT,TERM"));
        c.addAll(command);
        return c;
    }
}
