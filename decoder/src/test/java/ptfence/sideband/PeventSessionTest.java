package ptfence.sideband;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import ptfence.ptdecode.FlowCommand;

/**
 * What the corpus does not exercise: MMAP2 records, --pevent:sysroot, the vdso chosen by the process's ABI,
 * kernel-mode MMAPs (ignored), a missing file. The trace and code are libipt's pevent-mmap-tip_cached case;
 * the sideband file is written here, and the flow must equal libipt's expectation for that case.
 */
class PeventSessionTest {
    private static final String CASE = "pevent-mmap-tip_cached";
    private static final int KERNEL_MODE = 1;

    @TempDir
    Path tmp;

    static Path caseDir() {
        String shared = System.getProperty("ptfence.data", "../fixtures/data");
        Path dir = Path.of(shared, "corpus", "libipt", CASE);
        org.junit.jupiter.api.Assertions.assertTrue(Files.isDirectory(dir), "no libipt case " + dir);
        return dir;
    }

    /** pevent records with sample_type TIME: each record ends with its u64 time. */
    static final class Records {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Records mmap2(int misc, int pid, long addr, long len, long pgoff, String file, long time) {
            byte[] name = file.getBytes(StandardCharsets.US_ASCII);
            int nameLen = (name.length + 1 + 7) & ~7;
            ByteBuffer b = record(10, misc, 8 + 64 + nameLen + 8);
            b.putInt(pid).putInt(pid).putLong(addr).putLong(len).putLong(pgoff);
            b.putInt(0).putInt(0).putLong(0).putLong(0).putInt(5).putInt(2);
            b.put(Arrays.copyOf(name, nameLen));
            return end(b, time);
        }

        Records itraceStart(int pid, long time) {
            ByteBuffer b = record(12, 0, 8 + 8 + 8);
            b.putInt(pid).putInt(pid);
            return end(b, time);
        }

        private static ByteBuffer record(int type, int misc, int size) {
            ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(type).putShort((short) misc).putShort((short) size);
            return b;
        }

        private Records end(ByteBuffer b, long time) {
            b.putLong(time);
            out.writeBytes(b.array());
            return this;
        }
    }

    private String flow(Path dir, String... args) {
        FlowCommand cmd = new FlowCommand().inDirectory(dir);
        new CommandLine(cmd).parseArgs(args);
        StringWriter sw = new StringWriter();
        try (PrintWriter pw = new PrintWriter(sw)) {
            cmd.decode(pw);
        }
        return sw.toString();
    }

    /** libipt's expected flow for the case, without its sideband lines (the files are ours). */
    private static List<String> expectedFlow(Path dir) throws IOException {
        List<String> want = new ArrayList<>();
        for (String l : Files.readAllLines(dir.resolve(CASE + "-ptxed.exp"))) {
            if (!l.contains("PERF_RECORD") && !l.isBlank()) {
                want.add(l.trim());
            }
        }
        return want;
    }

    private static List<String> lines(String s) {
        return s.lines().map(String::trim).filter(l -> !l.isEmpty()).toList();
    }

    @Test
    void mmap2WithSysrootAndVdso() throws IOException {
        Path dir = caseDir();
        byte[] code = Files.readAllBytes(dir.resolve(CASE + ".bin"));
        // The program: a 64-bit ELF header (gives the process its ABI) and the text at file offset 0x1000.
        byte[] prog = new byte[0x1000 + 6];
        System.arraycopy(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1}, 0, prog, 0, 7);
        System.arraycopy(code, 0, prog, 0x1000, 6);
        Path root = Files.createDirectories(tmp.resolve("root/bin"));
        Files.write(root.resolve("prog"), prog);
        Files.write(tmp.resolve("vdso64.so"), code); // the ret at 0xa000 is at offset 0x100
        Files.write(root.resolve("halt.bin"), new byte[] {(byte) 0xf4, (byte) 0xf4, (byte) 0xf4, (byte) 0xf4});
        Records sb = new Records()
                .mmap2(2, 1, 0x1000, 6, 0x1000, "/bin/prog", 0)
                .mmap2(KERNEL_MODE, 1, 0x1000, 4, 0, "/bin/halt.bin", 0) // ignored: the kernel comes from kcore
                .mmap2(2, 1, 0xa000, 1, 0x100, "[vdso]", 0)
                .itraceStart(1, 0);
        Files.write(tmp.resolve("cpu0.sb"), sb.out.toByteArray());
        Files.copy(dir.resolve(CASE + ".pt"), tmp.resolve("trace.pt"));

        for (String decoder : List.of("--insn-decoder", "--block-decoder")) {
            String got = flow(tmp, decoder, "--pt", "trace.pt", "--pevent:sample-type", "0x4",
                    "--pevent:sysroot", tmp.resolve("root").toString(), "--pevent:vdso-x64", "vdso64.so",
                    "--pevent:primary", "cpu0.sb");
            assertEquals(expectedFlow(dir), lines(got), decoder);
        }
    }

    @Test
    void withoutTheVdsoTheSidebandSaysSoAndTheDecodeStops() throws IOException {
        Path dir = caseDir();
        Files.write(tmp.resolve("code.bin"), Files.readAllBytes(dir.resolve(CASE + ".bin")));
        Records sb = new Records()
                .mmap2(2, 1, 0x1000, 6, 0, "code.bin", 0)
                .mmap2(2, 1, 0xa000, 1, 0x100, "[vdso]", 0)
                .mmap2(2, 1, 0xb000, 1, 0, "missing.bin", 0)
                .itraceStart(1, 0);
        Files.write(tmp.resolve("cpu0.sb"), sb.out.toByteArray());
        Files.copy(dir.resolve(CASE + ".pt"), tmp.resolve("trace.pt"));

        List<String> got = lines(flow(tmp, "--pt", "trace.pt", "--pevent:sample-type", "0x4", "--pevent:primary", "cpu0.sb"));
        // Record sizes: MMAP2 of "code.bin" 0x60 bytes, of "[vdso]" 0x58.
        assertEquals("[cpu0.sb:0000000000000060 sideband error: bad configuration]", got.get(0));
        assertEquals("[cpu0.sb:00000000000000b8 sideband error: bad file]", got.get(1));
        assertEquals(List.of("0000000000001000", "0000000000001001"), got.subList(2, 4));
        assertTrue(got.get(4).endsWith("error: no memory mapped at this address]"), got.get(4));
    }

    @Test
    void jsonlCarriesSidebandLinesAsObjects() throws IOException {
        Path dir = Path.of(caseDir().getParent().toString(), "pevent-tip_pgd-switch-tsc-tip_pge");
        String sb = "pevent-tip_pgd-switch-tsc-tip_pge-pevent-primary,sample-type=0x6,time-zero=0x0,time-shift=0x0,time-mult=0x1.sb";
        List<String> got = lines(flow(dir, "--format=jsonl", "--raw", "pevent-tip_pgd-switch-tsc-tip_pge.bin:0x1000",
                "--sb:compact", "--sb:offset", "--sb:switch", "--pt", "pevent-tip_pgd-switch-tsc-tip_pge.pt",
                "--pevent:sample-type", "0x6", "--pevent:primary", sb));
        assertTrue(got.stream().allMatch(l -> l.startsWith("{\"") && l.endsWith("}")), String.join("\n", got));
        assertTrue(got.contains("{\"type\":\"sideband\",\"text\":\"[context: pid-2]\"}"), String.join("\n", got));
        assertTrue(got.stream().anyMatch(l -> l.contains("\"ip\":\"0x2000\"") || l.contains("\"ip\":\"2000\"")),
                String.join("\n", got));
    }
}
