package ptfence.bpf;

import ptfence.cli.BadInputException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A reader of raw BTF (the kernel's /sys/kernel/btf/vmlinux): types by id, struct members and their byte offsets,
 * and FUNC ids (kfunc ids). The fence computes every kernel struct offset it needs from here; ptdecode decodes
 * bpf-output payloads with a program's (ptfence.sideband.BpfOutputFormat), hence its place in the decoder module.
 */
public final class Btf {
    public static final Path VMLINUX = Path.of("/sys/kernel/btf/vmlinux");

    public static final int KIND_INT = 1, KIND_PTR = 2, KIND_ARRAY = 3, KIND_STRUCT = 4, KIND_UNION = 5,
            KIND_ENUM = 6, KIND_FWD = 7, KIND_TYPEDEF = 8, KIND_VOLATILE = 9, KIND_CONST = 10, KIND_RESTRICT = 11,
            KIND_FUNC = 12, KIND_FUNC_PROTO = 13, KIND_VAR = 14, KIND_DATASEC = 15, KIND_FLOAT = 16,
            KIND_DECL_TAG = 17, KIND_TYPE_TAG = 18, KIND_ENUM64 = 19;

    /** One member of a struct or union; offset in bits (bitfields keep theirs exact). */
    public record Member(String name, int typeId, long bitOffset, int bitSize) {}

    /** One type: kind, name, size (or referenced type id), and members for STRUCT/UNION. */
    public record Type(int id, int kind, String name, int sizeOrType, List<Member> members) {}

    private final List<Type> types = new ArrayList<>(); // index = id; id 0 is void
    private final Map<String, Integer> firstStructByName = new HashMap<>();
    private final Map<String, Integer> funcByName = new HashMap<>();
    /** Every 32-bit enum's constants by name (the first where two enums share one). */
    private final Map<String, Long> enumValues = new HashMap<>();
    /** Per INT: its encoding word (signedness, bits); per ARRAY: {element type, count}. */
    private final Map<Integer, int[]> layout = new HashMap<>();

    private Btf(ByteBuffer b, String where) {
        b.order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < 24 || (b.getShort(0) & 0xffff) != 0xEB9F)
            throw new BadInputException(where + ": not BTF (magic " + (b.remaining() < 2 ? "missing" :
                    String.format("0x%04x", b.getShort(0) & 0xffff)) + " at offset 0)");
        int hdrLen = b.getInt(4);
        int typeOff = b.getInt(8), typeLen = b.getInt(12), strOff = b.getInt(16), strLen = b.getInt(20);
        int types0 = hdrLen + typeOff, strs0 = hdrLen + strOff;
        if (types0 + (long) typeLen > b.limit() || strs0 + (long) strLen > b.limit())
            throw new BadInputException(where + ": BTF sections run past the end (" + b.limit() + " bytes)");
        types.add(new Type(0, 0, "", 0, List.of()));
        int p = types0, end = types0 + typeLen;
        while (p < end) {
            int id = types.size();
            if (p + 12 > end) throw new BadInputException(where + ": truncated BTF type " + id + " at offset " + p);
            String name = string(b, strs0, strLen, b.getInt(p));
            int info = b.getInt(p + 4);
            int kind = (info >>> 24) & 0x1f, vlen = info & 0xffff;
            boolean kindFlag = info < 0;
            int sizeOrType = b.getInt(p + 8);
            p += 12;
            List<Member> members = List.of();
            switch (kind) {
                case KIND_INT -> {
                    layout.put(id, new int[] {b.getInt(p)});
                    p += 4;
                }
                case KIND_VAR, KIND_DECL_TAG -> p += 4;
                case KIND_ARRAY -> {
                    layout.put(id, new int[] {b.getInt(p), b.getInt(p + 8)});
                    p += 12;
                }
                case KIND_STRUCT, KIND_UNION -> {
                    members = new ArrayList<>(vlen);
                    for (int i = 0; i < vlen; i++, p += 12) {
                        int off = b.getInt(p + 8);
                        long bitOff = kindFlag ? off & 0xffffff : off & 0xffffffffL;
                        int bitSize = kindFlag ? off >>> 24 : 0;
                        members.add(new Member(string(b, strs0, strLen, b.getInt(p)), b.getInt(p + 4), bitOff, bitSize));
                    }
                    members = List.copyOf(members);
                }
                case KIND_ENUM -> {
                    for (int i = 0; i < vlen; i++, p += 8) {
                        enumValues.putIfAbsent(string(b, strs0, strLen, b.getInt(p)), (long) b.getInt(p + 4));
                    }
                }
                case KIND_FUNC_PROTO -> { // parameters as members: name and type, in order (bit offset: the index)
                    members = new ArrayList<>(vlen);
                    for (int i = 0; i < vlen; i++, p += 8) {
                        members.add(new Member(string(b, strs0, strLen, b.getInt(p)), b.getInt(p + 4), i, 0));
                    }
                    members = List.copyOf(members);
                }
                case KIND_DATASEC, KIND_ENUM64 -> p += 12 * vlen;
                case KIND_PTR, KIND_FWD, KIND_TYPEDEF, KIND_VOLATILE, KIND_CONST, KIND_RESTRICT, KIND_FUNC,
                     KIND_FLOAT, KIND_TYPE_TAG -> { }
                default -> throw new BadInputException(where + ": unknown BTF kind " + kind + " for type " + id
                        + " at offset " + (p - 12));
            }
            Type t = new Type(id, kind, name, sizeOrType, members);
            types.add(t);
            if (kind == KIND_STRUCT && !name.isEmpty()) firstStructByName.putIfAbsent(name, id);
            if (kind == KIND_FUNC) funcByName.putIfAbsent(name, id);
        }
    }

    public static Btf parse(byte[] raw, String where) {
        return new Btf(ByteBuffer.wrap(raw), where);
    }

    public static Btf read(Path file) throws IOException {
        // sysfs hands the blob out in pieces; readAllBytes loops until EOF.
        return parse(Files.readAllBytes(file), file.toString());
    }

    public static Btf vmlinux() throws IOException {
        return read(VMLINUX);
    }

    public int typeCount() { return types.size() - 1; }

    /** The value of enum constant {@code name} (TRACE_EVENT_FL_TRACEPOINT_BIT), if the BTF has it. */
    public java.util.OptionalLong enumValue(String name) {
        Long v = enumValues.get(name);
        return v == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(v);
    }

    public Type type(int id) {
        if (id <= 0 || id >= types.size()) throw new IllegalArgumentException("no BTF type " + id);
        return types.get(id);
    }

    /** Id of the first STRUCT with this name. */
    public int structId(String name) {
        Integer id = firstStructByName.get(name);
        if (id == null) throw new BadInputException("BTF: no struct " + name);
        return id;
    }

    /** INT's encoding word: bit 24 signed, 25 char, 26 bool; low byte its bits (0 for other kinds). */
    public int intEncoding(int id) {
        int[] l = layout.get(id);
        return l == null || type(id).kind() != KIND_INT ? 0 : l[0];
    }

    /** ARRAY's element type id and element count ({0, 0} for other kinds). */
    public int[] array(int id) {
        int[] l = layout.get(id);
        return l == null || type(id).kind() != KIND_ARRAY ? new int[2] : l.clone();
    }

    /** Every named STRUCT, in id order. */
    public List<Type> structs() {
        List<Type> out = new ArrayList<>();
        for (Type t : types) {
            if (t.kind() == KIND_STRUCT && !t.name().isEmpty()) out.add(t);
        }
        return out;
    }

    /** Whether a STRUCT of this name exists. */
    public boolean hasStruct(String name) {
        return firstStructByName.containsKey(name);
    }

    /** Byte size of a type (through typedefs and qualifiers; a pointer is 8, an array its elements'). */
    public long sizeOf(int id) {
        Type t = resolve(id);
        return switch (t.kind()) {
            case KIND_INT, KIND_STRUCT, KIND_UNION, KIND_ENUM, KIND_ENUM64, KIND_FLOAT -> t.sizeOrType() & 0xffffffffL;
            case KIND_PTR -> 8;
            case KIND_ARRAY -> {
                int[] a = array(t.id());
                yield sizeOf(a[0]) * (a[1] & 0xffffffffL);
            }
            default -> 0;
        };
    }

    /** Id of the FUNC with this name: what a kfunc call puts in imm. Empty if the kernel has no such function. */
    public OptionalInt funcId(String name) {
        Integer id = funcByName.get(name);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /**
     * The index of parameter {@code name} of function {@code func} (its FUNC_PROTO, as the kernel's BTF names it),
     * or -1 where the function or the parameter is not there. Signatures change between kernels (6.1's weak default
     * of arch_prepare_bpf_trampoline names its parameters otherwise than x86's), so programs find arguments by name.
     */
    public int paramIndex(String func, String name) {
        OptionalInt id = funcId(func);
        if (id.isEmpty()) return -1;
        Type proto = type(type(id.getAsInt()).sizeOrType());
        if (proto.kind() != KIND_FUNC_PROTO) return -1;
        for (Member m : proto.members()) if (m.name().equals(name)) return (int) m.bitOffset();
        return -1;
    }

    /** The number of parameters of function {@code func}, or -1 where it is not there. */
    public int paramCount(String func) {
        OptionalInt id = funcId(func);
        if (id.isEmpty()) return -1;
        Type proto = type(type(id.getAsInt()).sizeOrType());
        return proto.kind() == KIND_FUNC_PROTO ? proto.members().size() : -1;
    }

    /** Byte size of a struct. */
    public int structSize(String struct) {
        return type(structId(struct)).sizeOrType();
    }

    /**
     * Byte offset of {@code path} ("ksym.name" walks into nested members) in the struct, looking through
     * anonymous struct/union members and through typedef/const/volatile/restrict/type_tag.
     */
    public int offsetOf(String struct, String path) {
        long bits = bitOffsetOf(struct, path);
        if (bits % 8 != 0) throw new BadInputException("BTF: " + struct + "." + path + " is a bitfield");
        return (int) (bits / 8);
    }

    /** Bit offset of {@code path} in the struct (for bitfields such as bpf_prog.gpl_compatible). */
    public long bitOffsetOf(String struct, String path) {
        int typeId = structId(struct);
        long bits = 0;
        for (String field : path.split("\\.")) {
            Found f = find(resolve(typeId), field);
            if (f == null) throw new BadInputException("BTF: struct " + struct + " has no member " + path);
            bits += f.bitOffset;
            typeId = f.member.typeId();
        }
        return bits;
    }

    /** The type id of member {@code path} (resolved through qualifiers). */
    public Type memberType(String struct, String path) {
        int typeId = structId(struct);
        for (String field : path.split("\\.")) {
            Found f = find(resolve(typeId), field);
            if (f == null) throw new BadInputException("BTF: struct " + struct + " has no member " + path);
            typeId = f.member.typeId();
        }
        return resolve(typeId);
    }

    private record Found(Member member, long bitOffset) {}

    private Found find(Type t, String field) {
        if (t.kind() != KIND_STRUCT && t.kind() != KIND_UNION) return null;
        for (Member m : t.members()) {
            if (m.name().equals(field)) return new Found(m, m.bitOffset());
        }
        for (Member m : t.members()) {
            if (!m.name().isEmpty()) continue;
            Found inner = find(resolve(m.typeId()), field);
            if (inner != null) return new Found(inner.member, m.bitOffset() + inner.bitOffset);
        }
        return null;
    }

    /** Follows typedef and qualifiers to the type that has a layout. */
    public Type resolve(int id) {
        Type t = type(id);
        while (t.kind() == KIND_TYPEDEF || t.kind() == KIND_CONST || t.kind() == KIND_VOLATILE
                || t.kind() == KIND_RESTRICT || t.kind() == KIND_TYPE_TAG) {
            t = type(t.sizeOrType());
        }
        return t;
    }

    private static String string(ByteBuffer b, int strs0, int strLen, int off) {
        if (off == 0) return "";
        if (off < 0 || off >= strLen) return "";
        int start = strs0 + off, p = start, end = strs0 + strLen;
        while (p < end && b.get(p) != 0) p++;
        byte[] s = new byte[p - start];
        b.get(start, s);
        return new String(s, StandardCharsets.US_ASCII);
    }
}
