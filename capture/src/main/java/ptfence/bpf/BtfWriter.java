package ptfence.bpf;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Builds a raw BTF blob (header, type section, string section; uapi linux/btf.h) to load with BPF_BTF_LOAD: what a
 * program needs to be loaded with func_info and line_info when no compiler made its BTF. Written from the format's
 * spec, independently of {@link Btf}, which reads it.
 */
public final class BtfWriter {
    private final ByteArrayOutputStream strings = new ByteArrayOutputStream();
    private final ByteArrayOutputStream types = new ByteArrayOutputStream();
    private int nextId = 1;

    public BtfWriter() {
        strings.write(0); // offset 0 is the empty name
    }

    /** Adds a string to the string section; returns its offset (what line_info's name and line offsets hold). */
    public int str(String s) {
        int off = strings.size();
        strings.writeBytes(s.getBytes(StandardCharsets.UTF_8));
        strings.write(0);
        return off;
    }

    /** Starts a type (struct btf_type); its kind-specific data follows with {@link #u32} or {@link #member}. */
    public int type(String name, int kind, int vlen, boolean kindFlag, int sizeOrType) {
        u32(name.isEmpty() ? 0 : str(name));
        u32((kindFlag ? 1 << 31 : 0) | (kind << 24) | vlen);
        u32(sizeOrType);
        return nextId++;
    }

    /** A struct or union member (struct btf_member). */
    public void member(String name, int type, int offset) {
        u32(name.isEmpty() ? 0 : str(name));
        u32(type);
        u32(offset);
    }

    /** Appends one little-endian u32 to the type section. */
    public BtfWriter u32(int v) {
        types.write(v);
        types.write(v >>> 8);
        types.write(v >>> 16);
        types.write(v >>> 24);
        return this;
    }

    /**
     * Declares {@code int NAME(int x)} for each name (an int type and one prototype shared by all); returns the
     * FUNC type ids in order, for func_info.
     */
    public int[] intFunctions(String... names) {
        int intType = type("int", Btf.KIND_INT, 0, false, 4);
        u32(0x01000020); // INT encoding: signed, 32 bits
        int proto = type("", Btf.KIND_FUNC_PROTO, 1, false, intType);
        u32(str("x")).u32(intType);
        int[] ids = new int[names.length];
        for (int i = 0; i < names.length; i++) {
            ids[i] = type(names[i], Btf.KIND_FUNC, 0, false, proto);
        }
        return ids;
    }

    /** Where each instruction's source is: line_info's file, line, column and text for instruction {@code i}. */
    public interface SourceOf {
        String file();

        int line(int insn);

        int column(int insn);

        String text(int insn);
    }

    /** func_info and line_info for a program: see {@link #functionsAndLines}. */
    public record Info(byte[] funcInfo, byte[] lineInfo) {
    }

    /**
     * Declares {@code int NAME(int x)} for the program's functions (one name per {@link BpfAssembler#functionStarts()}
     * entry) and gives every instruction its line record, except the second slot of a wide (16-byte) load, which is
     * no instruction of its own.
     */
    public Info functionsAndLines(BpfAssembler code, String[] names, SourceOf source) {
        int[] starts = code.functionStarts();
        if (names.length != starts.length) {
            throw new IllegalArgumentException(starts.length + " functions, " + names.length + " names");
        }
        int[] funcs = intFunctions(names);
        ByteBuffer funcInfo = ByteBuffer.allocate(8 * starts.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int f = 0; f < starts.length; f++) {
            funcInfo.putInt(starts[f]).putInt(funcs[f]);
        }
        int file = str(source.file());
        java.util.List<BpfAssembler.Insn> insns = code.instructions();
        ByteBuffer lineInfo = ByteBuffer.allocate(16 * insns.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < insns.size(); i++) {
            if (i > 0 && insns.get(i - 1).code() == LD_IMM64) {
                continue;
            }
            lineInfo.putInt(i).putInt(file).putInt(str(source.text(i)))
                    .putInt(source.line(i) << 10 | source.column(i));
        }
        return new Info(funcInfo.array(), java.util.Arrays.copyOf(lineInfo.array(), lineInfo.position()));
    }

    private static final int LD_IMM64 = 0x18;

    public byte[] bytes() {
        byte[] s = strings.toByteArray(), t = types.toByteArray();
        ByteBuffer b = ByteBuffer.allocate(24 + t.length + s.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) 0xEB9F).put((byte) 1).put((byte) 0).putInt(24)
                .putInt(0).putInt(t.length).putInt(t.length).putInt(s.length);
        b.put(t).put(s);
        return b.array();
    }
}
