package ptfence.symbol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import ptfence.image.Elf;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.SampleId;
import ptfence.sideband.CodeMap;
import ptfence.sideband.Sideband;

/**
 * The symbolizer on a PIE built here (gcc: DWARF 5 by default, DWARF 4, zlib-compressed debug sections), mapped at
 * a random-looking base as the kernel maps it: every instruction's source line must be binutils' addr2line's (as
 * perf prints it), its symbol the one nm's table gives, and a name must resolve to nm's address moved to the base.
 */
class RecordingSymbolsTest {
    private static final long BASE = 0x5555_5555_0000L;
    private static final String MAIN_C = """
            #include <stdlib.h>
            static inline int sq(int x) { return x * x; }
            int helper(int n);
            static int __attribute__((noinline)) walk(int n) {
                int s = 0;
                for (int i = 0; i < n; i++) {
                    if (i % 3 == 0)
                        s += sq(i);
                    else
                        s -= i;
                }
                return s;
            }
            int main(int argc, char **argv) {
                int n = argc > 1 ? atoi(argv[1]) : 10;
                return walk(n) + helper(n);
            }
            """;
    private static final String HELPER_C = """
            int helper(int n) {
                int r = 1;
                while (n-- > 0)
                    r = r * 3 + n;
                return r;
            }
            """;
    private static final Pattern INSN = Pattern.compile("^\\s+([0-9a-f]+):\\t");
    private static final Pattern NM = Pattern.compile("^([0-9a-f]+) ([0-9a-f]+) [tTwW] (\\S+)$");

    @TempDir
    Path dir;

    private String run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + ": " + out);
        return out;
    }

    private Path build(String flags) throws Exception {
        for (String tool : new String[] {"gcc", "addr2line", "objdump", "nm"}) {
            Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin", tool)), tool + " not installed");
        }
        Files.writeString(dir.resolve("main.c"), MAIN_C);
        Files.writeString(dir.resolve("helper.c"), HELPER_C);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-O1", "-fPIE", "-pie", "-o", "prog"));
        cmd.addAll(List.of(flags.split(" ")));
        cmd.addAll(List.of("main.c", "helper.c"));
        run(cmd.toArray(String[]::new));
        return dir.resolve("prog");
    }

    /** The recording's view: the file's executable segments mapped at BASE by process 7. */
    private static RecordingSymbols symbolsFor(Path prog) {
        Elf elf = Elf.read(prog);
        Sideband sb = new Sideband();
        for (Elf.Load l : elf.loads()) {
            if ((l.flags() & 1) == 0) {
                continue;
            }
            long page = l.vaddr() & ~0xfffL;
            sb.add(new PerfRecord.Mmap2(2, 7, 7, BASE + page, l.filesz() + (l.vaddr() - page),
                    l.offset() & ~0xfffL, 0, 0, 0, 0, 5, 2, prog.toString(), SampleId.NONE));
        }
        CodeMap code = new CodeMap(sb, CodeMap.Clock.IDENTITY, true, null);
        return new RecordingSymbols(sb, code, null, Map.of(), null);
    }

    /** addr2line's answer as perf script -F +srcline prints it: base name, "?" as 0, unknown as null. */
    private static String perfStyle(String addr2line) {
        String s = addr2line.replaceAll(" \\(discriminator \\d+\\)$", "").trim();
        if (s.startsWith("??:")) {
            return null;
        }
        int colon = s.lastIndexOf(':');
        String file = s.substring(0, colon);
        String line = s.substring(colon + 1);
        return file.substring(file.lastIndexOf('/') + 1) + ":" + (line.equals("?") ? "0" : line);
    }

    @org.junit.jupiter.api.Test
    void aFileNotAtItsRecordedPathIsFoundInPerfsBuildIdCache() throws Exception {
        Path prog = build("-g");
        byte[] id = Elf.read(prog).buildId();
        Assumptions.assumeTrue(id.length > 0, "gcc here writes no build id");
        String hex = java.util.HexFormat.of().formatHex(id);
        Path home = dir.resolve("home");
        Path cached = home.resolve(".debug/.build-id/" + hex.substring(0, 2) + "/" + hex.substring(2) + "/elf");
        Files.createDirectories(cached.getParent());
        Files.copy(prog, cached);
        Elf elf = Elf.read(prog);
        Sideband sb = new Sideband();
        String recorded = "/nowhere/prog";
        for (Elf.Load l : elf.loads()) {
            if ((l.flags() & 1) != 0) {
                long page = l.vaddr() & ~0xfffL;
                sb.add(new PerfRecord.Mmap2(2, 7, 7, BASE + page, l.filesz() + (l.vaddr() - page),
                        l.offset() & ~0xfffL, 0, 0, 0, 0, 5, 2, recorded, SampleId.NONE));
            }
        }
        String before = System.getProperty("user.home");
        System.setProperty("user.home", home.toString());
        try {
            CodeMap code = new CodeMap(sb, CodeMap.Clock.IDENTITY, true, null);
            RecordingSymbols withId = new RecordingSymbols(sb, code, null, Map.of(recorded, id), null);
            RecordingSymbols without = new RecordingSymbols(sb, code, null, Map.of(), null);
            long main = -1;
            for (String l : run("nm", prog.toString()).split("\n")) {
                if (l.endsWith(" T main")) {
                    main = Long.parseUnsignedLong(l.substring(0, 16), 16);
                }
            }
            Symbol s = withId.symbol(BASE + main + 1, 1, 7);
            assertEquals("main+0x1", s == null ? null : s.describe(BASE + main + 1));
            assertEquals(recorded, s.dso(), "named as recorded");
            assertEquals(null, without.symbol(BASE + main + 1, 1, 7), "without the build id nothing says where");
        } finally {
            System.setProperty("user.home", before);
        }
    }

    private static SampleId at(long time) {
        return new SampleId(ptfence.perfdata.SampleType.TID | ptfence.perfdata.SampleType.TIME, 7, 7, time, 0, 0, 0, 0,
                0);
    }

    @org.junit.jupiter.api.Test
    void kernelCodeIsNamedByItsBpfProgramAtThatTimeElseByKallsyms() throws Exception {
        Path kallsyms = dir.resolve("kallsyms");
        Files.writeString(kallsyms, "ffffffff81000000 T _stext\nffffffff81000100 t helper_a\n"
                + "ffffffff81000200 T helper_b\nffffffff81000300 d some_data\n");
        Sideband sb = new Sideband();
        long prog = 0xffffffffc0001000L;
        String x = "bpf_prog_0123456789abcdef_x";
        String y = "bpf_prog_fedcba9876543210_y";
        sb.add(new PerfRecord.Ksymbol(0, prog, 0x80, PerfRecord.Ksymbol.TYPE_BPF, 0, x, at(100)));
        sb.add(new PerfRecord.Ksymbol(0, prog, 0x80, PerfRecord.Ksymbol.TYPE_BPF,
                PerfRecord.Ksymbol.FLAG_UNREGISTER, x, at(200)));
        sb.add(new PerfRecord.Ksymbol(0, prog, 0x40, PerfRecord.Ksymbol.TYPE_BPF, 0, y, at(300)));
        CodeMap code = new CodeMap(sb, CodeMap.Clock.IDENTITY, true, null);
        code.addKallsyms(kallsyms);
        code.addSidebandSymbols();
        RecordingSymbols symbols = new RecordingSymbols(sb, code, null, Map.of(), null);
        Symbol a = symbols.symbol(0xffffffff81000105L, 150, 7);
        assertEquals("helper_a+0x5", a.describe(0xffffffff81000105L));
        assertEquals(RecordingSymbols.KERNEL_DSO, a.dso());
        assertEquals("helper_b+0xff", symbols.symbol(0xffffffff810002ffL, 150, 7).describe(0xffffffff810002ffL),
                "data symbols do not end a function (kallsyms has no sizes)");
        Symbol p1 = symbols.symbol(prog + 0x10, 150, 7);
        assertEquals(x + "+0x10", p1.describe(prog + 0x10));
        assertEquals(x, p1.dso());
        assertEquals(y + "+0x10", symbols.symbol(prog + 0x10, 350, 7).describe(prog + 0x10),
                "another program at the same address later");
        assertEquals(List.of(0xffffffff81000200L), symbols.named("helper_b").stream().map(Symbol::start).toList());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-g", "-gdwarf-4", "-g -gz=zlib", "-g -O2"})
    void everyInstructionsLineAndSymbolAreBinutils(String flags) throws Exception {
        Path prog = build(flags);
        List<Long> insns = new ArrayList<>();
        boolean text = false;
        for (String l : run("objdump", "-d", "--no-show-raw-insn", prog.toString()).split("\n")) {
            if (l.startsWith("Disassembly of section")) {
                text = l.contains(" .text:");
            }
            Matcher m = INSN.matcher(l);
            if (text && m.find()) {
                insns.add(Long.parseUnsignedLong(m.group(1), 16));
            }
        }
        assertTrue(insns.size() > 50, "objdump found " + insns.size() + " instructions");
        List<String> cmd = new ArrayList<>(List.of("addr2line", "-e", prog.toString()));
        insns.forEach(a -> cmd.add("0x" + Long.toHexString(a)));
        String[] lines = run(cmd.toArray(String[]::new)).split("\n");
        assertEquals(insns.size(), lines.length);
        // nm: FUNC symbols with sizes; the one holding an address names it
        List<long[]> fnRanges = new ArrayList<>();
        List<String> fnNames = new ArrayList<>();
        for (String l : run("nm", "-S", "--defined-only", prog.toString()).split("\n")) {
            Matcher m = NM.matcher(l.trim());
            if (m.matches()) {
                long v = Long.parseUnsignedLong(m.group(1), 16);
                fnRanges.add(new long[] {v, v + Long.parseUnsignedLong(m.group(2), 16)});
                fnNames.add(m.group(3));
            }
        }
        RecordingSymbols symbols = symbolsFor(prog);
        int named = 0;
        int withLine = 0;
        for (int i = 0; i < insns.size(); i++) {
            long a = insns.get(i);
            String want = perfStyle(lines[i]);
            assertEquals(want, symbols.srcline(BASE + a, 1, 7), "srcline of 0x" + Long.toHexString(a));
            withLine += want != null && !want.endsWith(":0") ? 1 : 0;
            String wantSym = null;
            for (int k = 0; k < fnRanges.size(); k++) {
                if (a >= fnRanges.get(k)[0] && a < fnRanges.get(k)[1]) {
                    wantSym = fnNames.get(k) + (a == fnRanges.get(k)[0] ? "" : "+0x"
                            + Long.toHexString(a - fnRanges.get(k)[0]));
                }
            }
            Symbol s = symbols.symbol(BASE + a, 1, 7);
            if (wantSym != null) {
                named++;
                assertEquals(wantSym, s == null ? null : s.describe(BASE + a), "symbol of 0x" + Long.toHexString(a));
                assertEquals(prog.toString(), s.dso());
            }
        }
        assertTrue(withLine > 30, "only " + withLine + " instructions with a line");
        assertTrue(named > 30, "only " + named + " instructions in a sized function");
        int main = fnNames.indexOf("main");
        List<Symbol> mains = symbols.named("main");
        assertEquals(1, mains.size(), mains.toString());
        assertEquals(BASE + fnRanges.get(main)[0], mains.get(0).start());
        assertEquals(null, symbols.symbol(BASE + insns.get(0), 1, 8), "another process did not map it");
    }
}
