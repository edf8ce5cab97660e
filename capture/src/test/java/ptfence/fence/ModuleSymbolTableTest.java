package ptfence.fence;

import org.junit.jupiter.api.Test;
import ptfence.bpf.BpfAssembler;
import ptfence.bpf.Btf;
import ptfence.guest.GuestKernel;
import ptfence.ring.BpfRingBuffer;
import ptfence.sys.Bpf;
import ptfence.sys.BpfFd;
import ptfence.sys.BpfRingMapping;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static ptfence.bpf.BpfAssembler.Reg.*;
import static ptfence.bpf.BpfAssembler.Size.*;

/**
 * A module's symbols copied in the kernel at its load (issue 29: a module removed before user space read
 * /proc/kallsyms kept none; 78 of 102 loads had symbols in the guest). The load program copies the table {@code
 * module.kallsyms} points at (at load the full one, init symbols too), else {@code module.core_kallsyms} (symtab,
 * strtab, typetab back to back); the consumer turns the copy into kallsyms lines.
 * This kernel has no modules: the program runs (BPF_PROG_TEST_RUN) on a struct module laid out at this kernel's BTF
 * offsets in a map value, whose symbol table holds this machine's own kallsyms symbols; the lines parsed from the
 * copy must be the kernel's own /proc/kallsyms lines for them. Debian's 6.1 and 6.12 BTF place the tables the same way.
 */
class ModuleSymbolTableTest {
    private static final String MODULE = "fakemod";

    /** A table as the kernel lays it out: n Elf64_Sym (the first the null symbol), strtab, typetab. */
    private static byte[] table(List<String[]> symbols) {
        ByteArrayOutputStream strtab = new ByteArrayOutputStream();
        strtab.write(0);
        int n = symbols.size() + 1;
        ByteBuffer syms = ByteBuffer.allocate(n * 24).order(ByteOrder.LITTLE_ENDIAN);
        byte[] types = new byte[n];
        syms.position(24); // the null symbol: all zero
        for (int i = 0; i < symbols.size(); i++) {
            String[] s = symbols.get(i); // address, type, name
            syms.putInt(strtab.size()).put((byte) 0x12).put((byte) 0).putShort((short) 1)
                    .putLong(Long.parseUnsignedLong(s[0], 16)).putLong(0x40);
            strtab.writeBytes(s[2].getBytes(StandardCharsets.ISO_8859_1));
            strtab.write(0);
            types[i + 1] = (byte) s[1].charAt(0);
        }
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        all.writeBytes(syms.array());
        all.writeBytes(strtab.toByteArray());
        all.writeBytes(types);
        return all.toByteArray();
    }

    @Test
    void aForgedTableGivesTheKallsymsLinesAndBadOnesAreRefused() {
        List<String[]> syms = List.of(new String[] {"ffffffffc0a00000", "t", "dummy_xmit"},
                new String[] {"ffffffffc0a00040", "T", "dummy_setup"}, new String[] {"ffffffffc0a02000", "d", "x"});
        byte[] t = table(syms);
        assertEquals("ffffffffc0a00000 t dummy_xmit\t[dummy]\nffffffffc0a00040 T dummy_setup\t[dummy]\n"
                + "ffffffffc0a02000 d x\t[dummy]\n", new String(ModuleSymbols.fromTable(t, 4, "dummy"),
                StandardCharsets.ISO_8859_1), "the null symbol left out, as /proc/kallsyms does");
        assertThrows(IllegalArgumentException.class, () -> ModuleSymbols.fromTable(t, 200, "dummy"), "too short");
        assertThrows(IllegalArgumentException.class, () -> ModuleSymbols.fromTable(t, 0, "dummy"));
        byte[] bad = t.clone();
        bad[24] = (byte) 0xff; // a name offset past the strtab
        assertThrows(IllegalArgumentException.class, () -> ModuleSymbols.fromTable(bad, 4, "dummy"));
    }

    private static void hasTheTables(Btf btf) {
        ModuleLayout l = ModuleLayout.from(btf);
        ModuleLayout.SymbolTable t = l.symbols().orElseThrow(() -> new AssertionError("no module.core_kallsyms"));
        assertEquals(4, btf.sizeOf(btf.memberType("module", "core_kallsyms.num_symtab").id()), "unsigned int");
        for (String p : new String[] {"symtab", "strtab", "typetab"}) {
            assertEquals(Btf.KIND_PTR, btf.memberType("module", "core_kallsyms." + p).kind(), p);
            assertEquals(btf.offsetOf("module", "core_kallsyms." + p), t.core() + btf.offsetOf("mod_kallsyms", p));
        }
        // module.kallsyms: a pointer to the table kallsyms reads (the full one until init is done)
        assertEquals(Btf.KIND_PTR, btf.memberType("module", "kallsyms").kind());
        assertEquals(btf.offsetOf("module", "kallsyms"), t.current());
        assertEquals(btf.offsetOf("module", "core_kallsyms.num_symtab"), t.core() + t.numSymtab());
        assertEquals(24, btf.structSize("elf64_sym"), "Elf64_Sym");
        assertEquals(8, btf.offsetOf("elf64_sym", "st_value"));
        assertEquals(0, btf.offsetOf("elf64_sym", "st_name"));
        assertTrue(t.symtab() != t.strtab() && t.numSymtab() != t.typetab());
        ModulePrograms p = new ModulePrograms(l, 3, 4);
        assertTrue(p.copy(ModulePrograms.KIND_LOAD, true).length > p.copy(ModulePrograms.KIND_FREE, false).length,
                "load copies the symbols, the free does not");
    }

    @Test
    void debian6_1And6_12HaveTheCoreKallsymsTheProgramCopies() {
        hasTheTables(KernelLayoutTest.btf(GuestKernel.of("linux-image-amd64")));
        hasTheTables(KernelLayoutTest.btf(GuestKernel.of("linux-image-6.12-amd64")));
    }

    /** Runs a program that writes its map value's kernel address into the value's first 8 bytes. */
    private static long valueAddress(BpfFd map, int valueSize) throws Exception {
        BpfAssembler a = new BpfAssembler();
        a.store(W, R10, -4, 0).loadMapFd(R1, map.fd()).mov(R2, R10).add(R2, -4).call(1)
                .jumpIf(BpfAssembler.Cond.EQ, R0, 0, "out").store(DW, R0, 0, R0).label("out").mov(R0, 0).exit();
        try (BpfFd prog = FencePrograms.loadRawTracepoint(a.assemble(), "t_value_addr")) {
            Bpf.get().progTestRun(prog, new byte[8]);
        }
        byte[] v = new byte[valueSize];
        Bpf.get().mapLookup(map, new byte[4], v);
        long address = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        assertTrue(address < 0, "a kernel address: " + Long.toHexString(address));
        return address;
    }

    /**
     * The parts the load program wrote (func_idx -> bytes), each checked whole, the symbol count, and whether the
     * symbols are the full table's (func_cnt 1).
     */
    private record Copy(Map<Integer, byte[]> parts, int symbols, boolean full) {}

    private static Copy runLoad(ModuleLayout layout, byte[] module, BpfFd moduleMap, long moduleAddress)
            throws Exception {
        Bpf bpf = Bpf.get();
        int ringSize = 4 << 20;
        try (BpfFd rb = bpf.mapCreate(Bpf.MAP_TYPE_RINGBUF, 0, 0, ringSize, 0, "t_mod_rb");
             BpfFd stats = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, 8, FencePrograms.STATS, 0, "t_mod_st");
             BpfRingMapping mapping = BpfRingMapping.map(rb, ringSize)) {
            bpf.mapUpdate(moduleMap, new byte[4], module);
            ModulePrograms p = new ModulePrograms(layout, rb.fd(), stats.fd());
            byte[] ctx = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, moduleAddress).array();
            try (BpfFd prog = FencePrograms.loadRawTracepoint(p.copy(ModulePrograms.KIND_LOAD, true), "t_mod_ld")) {
                bpf.progTestRun(prog, ctx);
            }
            Map<Integer, byte[]> parts = new HashMap<>();
            Map<Integer, Integer> got = new HashMap<>();
            int[] count = {-1, -1};
            List<Integer> order = new ArrayList<>();
            new BpfRingBuffer(mapping.consumerPage(), mapping.producerArea(), ringSize).poll((data, off, len) -> {
                FenceRecord.Parsed r = FenceRecord.parse(data, off, len);
                assertEquals(0, r.err(), "read faulted");
                assertEquals(MODULE, r.name());
                if (!order.contains(r.funcIdx())) order.add(r.funcIdx());
                byte[] whole = parts.computeIfAbsent(r.funcIdx(), i -> new byte[(int) (r.end() - r.start())]);
                System.arraycopy(r.image(), 0, whole, r.offset(), r.image().length);
                got.merge(r.funcIdx(), r.image().length, Integer::sum);
                if (r.funcIdx() == ModulePrograms.PART_SYMBOLS) {
                    count[0] = r.progId();
                    count[1] = r.funcCnt();
                }
            });
            parts.forEach((i, b) -> assertEquals(b.length, got.get(i), "every chunk of part " + i));
            if (parts.containsKey(ModulePrograms.PART_SYMBOLS)) {
                assertEquals(ModulePrograms.PART_SYMBOLS, order.get(0), "symbols come before the texts");
            }
            return new Copy(parts, count[0], count[1] == 1);
        }
    }

    /** The kallsyms lines the kernel prints for these symbols as a module's. */
    private static String linesOf(List<String> lines) {
        StringBuilder want = new StringBuilder();
        lines.forEach(l -> want.append(l).append("\t[").append(MODULE).append("]\n"));
        return want.toString();
    }

    private static String parsed(Copy c) {
        return new String(ModuleSymbols.fromTable(c.parts().get(ModulePrograms.PART_SYMBOLS), c.symbols(), MODULE),
                StandardCharsets.ISO_8859_1);
    }

    @Test
    void theLoadProgramCopiesTheSymbolTablesOfAStructModuleAtThisKernelsOffsets() throws Exception {
        assumeTrue(Files.isReadable(Btf.VMLINUX) && LiveKernel.canLoadBpf(), LiveKernel.reason());
        Btf btf = Btf.vmlinux();
        ModuleLayout layout = ModuleLayout.from(btf);
        ModuleLayout.SymbolTable st = layout.symbols().orElseThrow();
        // this machine's own symbols, as its kernel prints them: 3000 for the core table (~100 KiB, two chunks), 400
        // more for the init ones, which only the full table holds
        List<String> lines = new ArrayList<>();
        try (var all = Files.lines(Path.of("/proc/kallsyms"))) {
            all.filter(l -> l.indexOf('\t') < 0).limit(3400).forEach(lines::add);
        }
        assumeTrue(lines.size() == 3400 && !lines.get(0).startsWith("0000000000000000"), "kallsyms hides addresses");
        List<String> coreLines = lines.subList(0, 3000);
        byte[] table = table(coreLines.stream().map(l -> l.split(" ")).toList());
        // the full table as add_kallsyms leaves it in the init data: symtab, strtab, then (8-aligned) the struct
        // mod_kallsyms module.kallsyms points at, then the typetab; init symbols between core ones
        List<String> fullLines = new ArrayList<>(lines.subList(3000, 3200));
        fullLines.addAll(coreLines);
        fullLines.addAll(lines.subList(3200, 3400));
        byte[] full = table(fullLines.stream().map(l -> l.split(" ")).toList());
        int nFull = fullLines.size() + 1, fullTypes = full.length - nFull, structAt = (fullTypes + 7) & ~7;
        int structSize = btf.structSize("mod_kallsyms");
        byte[] text = new byte[70_000], init = new byte[5_000];
        java.util.Random random = new java.util.Random(29);
        random.nextBytes(text);
        random.nextBytes(init);
        int fullAt = text.length + table.length + init.length;
        int dataSize = fullAt + structAt + structSize + nFull;
        int size = btf.structSize("module");
        Bpf bpf = Bpf.get();
        try (BpfFd moduleMap = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, size, 1, 0, "t_fake_mod");
             BpfFd dataMap = bpf.mapCreate(Bpf.MAP_TYPE_ARRAY, 4, dataSize, 1, 0, "t_mod_data")) {
            long moduleAddress = valueAddress(moduleMap, size), data = valueAddress(dataMap, dataSize);
            long fullSymtab = data + fullAt, fullStruct = fullSymtab + structAt;
            ByteBuffer d = ByteBuffer.allocate(dataSize).order(ByteOrder.LITTLE_ENDIAN);
            d.put(text).put(table).put(init).put(full, 0, fullTypes);
            d.putLong(fullAt + structAt + st.symtab(), fullSymtab).putInt(fullAt + structAt + st.numSymtab(), nFull)
                    .putLong(fullAt + structAt + st.strtab(), fullSymtab + 24L * nFull)
                    .putLong(fullAt + structAt + st.typetab(), fullStruct + structSize);
            d.put(fullAt + structAt + structSize, full, fullTypes, nFull);
            bpf.mapUpdate(dataMap, new byte[4], d.array());
            int n = coreLines.size() + 1;
            long symtab = data + text.length, strtab = symtab + 24L * n, typetab = symtab + table.length - n;
            ByteBuffer m = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            m.put(layout.name(), MODULE.getBytes(StandardCharsets.US_ASCII));
            m.putLong(layout.coreBase(), data).putInt(layout.coreSize(), text.length);
            m.putLong(st.core() + st.symtab(), symtab).putInt(st.core() + st.numSymtab(), n)
                    .putLong(st.core() + st.strtab(), strtab).putLong(st.core() + st.typetab(), typetab);

            // after init (a scan): module.kallsyms is &core_kallsyms
            m.putLong(st.current(), moduleAddress + st.core());
            Copy c = runLoad(layout, m.array(), moduleMap, moduleAddress);
            assertArrayEquals(text, c.parts().get(0), "the core text");
            assertFalse(c.parts().containsKey(1), "no init text");
            assertArrayEquals(table, c.parts().get(ModulePrograms.PART_SYMBOLS), "the three tables in one copy");
            assertEquals(n, c.symbols());
            assertFalse(c.full(), "the core table");
            assertEquals(linesOf(coreLines), parsed(c), "the kernel's own kallsyms lines for the symbols");

            // at load: module.kallsyms is the full table, init text there too
            m.putLong(layout.initBase(), data + text.length + table.length).putInt(layout.initSize(), init.length);
            m.putLong(st.current(), fullStruct);
            c = runLoad(layout, m.array(), moduleMap, moduleAddress);
            assertArrayEquals(text, c.parts().get(0), "the core text");
            assertArrayEquals(init, c.parts().get(1), "the init text");
            byte[] wantFull = java.util.Arrays.copyOfRange(d.array(), fullAt, dataSize);
            assertArrayEquals(wantFull, c.parts().get(ModulePrograms.PART_SYMBOLS), "symtab to the typetab's end");
            assertEquals(nFull, c.symbols());
            assertTrue(c.full(), "the full table");
            assertEquals(linesOf(fullLines), parsed(c), "core and init symbols, the kernel's own lines for them");

            // a full table not laid out back to back, or past the chunk budget: the core one instead
            m.putLong(st.current(), moduleAddress + 8); // no struct mod_kallsyms there: garbage fields
            c = runLoad(layout, m.array(), moduleMap, moduleAddress);
            assertFalse(c.full());
            assertEquals(linesOf(coreLines), parsed(c), "a garbage table gives way to the core one");
            d.putLong(fullAt + structAt + st.typetab(), fullStruct + structSize + ModulePrograms.SYMBOL_CHUNKS
                    * ModulePrograms.CHUNK);
            bpf.mapUpdate(dataMap, new byte[4], d.array());
            m.putLong(st.current(), fullStruct);
            c = runLoad(layout, m.array(), moduleMap, moduleAddress);
            assertFalse(c.full());
            assertEquals(linesOf(coreLines), parsed(c), "a full table past 1 MiB gives way to the core one");
            m.putLong(st.current(), 0);
            assertFalse(runLoad(layout, m.array(), moduleMap, moduleAddress).full(), "no module.kallsyms: the core");

            // tables the kernel did not lay out back to back: nothing copied (kallsyms serves instead)
            m.putLong(st.core() + st.strtab(), strtab + 8);
            c = runLoad(layout, m.array(), moduleMap, moduleAddress);
            assertArrayEquals(text, c.parts().get(0));
            assertFalse(c.parts().containsKey(ModulePrograms.PART_SYMBOLS), "strtab not after symtab");
            m.putLong(st.core() + st.strtab(), strtab).putInt(st.core() + st.numSymtab(), 0);
            assertFalse(runLoad(layout, m.array(), moduleMap, moduleAddress).parts()
                    .containsKey(ModulePrograms.PART_SYMBOLS), "no symbols");
        }
    }
}
