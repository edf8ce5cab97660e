package ptfence.sideband;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import ptfence.bpf.Btf;
import ptfence.cli.BadInputException;
import ptfence.cli.Json;

/**
 * How ptdecode's views show a bpf-output sample: the payload as hex and, where a BTF struct describes it, as
 * decoded fields. bpf_perf_event_output() takes a pointer and a size, so no BTF says what a program wrote (a perf
 * event array's value type is the fd, and its map carries no btf_value_type_id); the struct is therefore
 * <ul>
 * <li>the one named by {@code --bpf-output-type NAME}, looked up in the BTF of the recording's BPF programs (the
 * archive's, else perf's BPF_BTF), then in the running kernel's (/sys/kernel/btf/vmlinux); or</li>
 * <li>without it, the one struct of the programs' BTF whose size, padded as the kernel pads RAW data (size + 4 to
 * a multiple of 8), is the payload's: only when exactly one struct name has that size, else nothing is decoded.</li>
 * </ul>
 */
public final class BpfOutputFormat {
    /** A struct and the BTF it is in. */
    private record Struct(Btf btf, Btf.Type type) {
    }

    private static final int MAX_ARRAY = 256;
    private static final int MAX_DEPTH = 8;

    private final Struct named;
    private final Map<Integer, Struct> bySize = new HashMap<>();

    private BpfOutputFormat(Struct named, Map<Integer, Struct> bySize) {
        this.named = named;
        this.bySize.putAll(bySize);
    }

    /** Hex only. */
    public static BpfOutputFormat hexOnly() {
        return new BpfOutputFormat(null, Map.of());
    }

    /**
     * @param programs the BTF of the recording's programs (each may fail to parse: skipped)
     * @param typeName --bpf-output-type, or null to pick by size
     * @param kernel   the kernel's BTF when asked for (null when there is none)
     */
    public static BpfOutputFormat of(List<byte[]> programs, String typeName,
            java.util.function.Supplier<Btf> kernel) {
        List<Btf> btfs = new ArrayList<>();
        for (byte[] raw : programs) {
            try {
                btfs.add(Btf.parse(raw, "a program's BTF"));
            } catch (RuntimeException e) {
                // a damaged blob decodes nothing; the hex still shows
            }
        }
        if (typeName != null) {
            String name = typeName.startsWith("struct ") ? typeName.substring(7).trim() : typeName.trim();
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                throw new BadInputException("--bpf-output-type " + typeName + ": not a struct name (give NAME or "
                        + "'struct NAME', a struct in the BTF of the recording's BPF programs or the kernel's)");
            }
            for (Btf b : btfs) {
                if (b.hasStruct(name)) {
                    return new BpfOutputFormat(new Struct(b, b.type(b.structId(name))), Map.of());
                }
            }
            Btf k = kernel == null ? null : kernel.get();
            if (k != null && k.hasStruct(name)) {
                return new BpfOutputFormat(new Struct(k, k.type(k.structId(name))), Map.of());
            }
            throw new BadInputException("--bpf-output-type " + typeName + ": no struct " + name + " in the BTF of "
                    + "the recording's BPF programs" + (k != null ? " or the kernel's" : " (and no kernel BTF here)"));
        }
        Map<Integer, Struct> unique = new HashMap<>();
        Map<Integer, String> seen = new HashMap<>();
        for (Btf b : btfs) {
            for (Btf.Type t : b.structs()) {
                int padded = padded(t.sizeOrType());
                String was = seen.putIfAbsent(padded, t.name());
                if (was == null) {
                    unique.put(padded, new Struct(b, t));
                } else if (!was.equals(t.name())) {
                    unique.remove(padded);
                    seen.put(padded, "");
                }
            }
        }
        return new BpfOutputFormat(null, unique);
    }

    /** RAW data of {@code size} bytes as the kernel pads it: the u32 size and the data to a multiple of 8. */
    static int padded(int size) {
        return ((size + 4 + 7) & ~7) - 4;
    }

    private Struct structFor(byte[] data) {
        return named != null ? named : bySize.get(data.length);
    }

    /**
     * The sample's JSON members after the view's own: "event":"bpf-output" (what the record is), "name" (the
     * event's), "ip", "size", "data" (hex), and "type"/"fields" where decoded.
     */
    public void json(StringBuilder sb, BpfOutputs.Sample s) {
        sb.append(",\"event\":\"bpf-output\",\"name\":").append(Json.quote(s.event())).append(",\"ip\":\"0x").append(Long.toHexString(s.ip()))
                .append("\",\"size\":").append(s.data().length).append(",\"data\":\"");
        hex(sb, s.data());
        sb.append('"');
        Struct st = structFor(s.data());
        if (st != null) {
            sb.append(",\"type\":").append(Json.quote("struct " + st.type().name())).append(",\"fields\":");
            value(sb, st.btf(), st.type().id(), ByteBuffer.wrap(s.data()).order(ByteOrder.LITTLE_ENDIAN), 0, 0, 0);
        }
    }

    /** The decoded fields as one JSON object, or null where no struct describes the payload. */
    public String fields(BpfOutputs.Sample s) {
        Struct st = structFor(s.data());
        if (st == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        value(sb, st.btf(), st.type().id(), ByteBuffer.wrap(s.data()).order(ByteOrder.LITTLE_ENDIAN), 0, 0, 0);
        return sb.toString();
    }

    /** The sample for a text view: "[bpf-output, ip: IP, N bytes: hex]" and its fields where decoded. */
    public void text(StringBuilder sb, BpfOutputs.Sample s) {
        sb.append("[bpf-output, ip: ").append(Long.toHexString(s.ip())).append(", ")
                .append(s.data().length).append(" bytes: ");
        hex(sb, s.data());
        String f = fields(s);
        if (f != null) {
            Struct st = structFor(s.data());
            sb.append(", struct ").append(st.type().name()).append(' ').append(f);
        }
        sb.append(']');
    }

    /** The args of a Perfetto instant event for the sample. */
    public Json args(BpfOutputs.Sample s) {
        StringBuilder hex = new StringBuilder(s.data().length * 2);
        hex(hex, s.data());
        Json j = new Json().field("cpu", s.cpu()).field("pid", s.pid()).field("tid", s.tid()).address("ip", s.ip())
                .field("size", s.data().length).field("data", hex.toString());
        String f = fields(s);
        if (f != null) {
            j.field("type", "struct " + structFor(s.data()).type().name()).raw("fields", f);
        }
        return j;
    }

    public static void hex(StringBuilder sb, byte[] data) {
        for (byte b : data) {
            sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
        }
    }

    /**
     * The value of type {@code id} at byte {@code at} (plus {@code bitOff} bits, {@code bits} wide for a bitfield)
     * as JSON; a value past the payload's end is null.
     */
    private static void value(StringBuilder sb, Btf btf, int id, ByteBuffer b, long at, long bitOff, int bits) {
        value(sb, btf, id, b, at, bitOff, bits, 0);
    }

    private static void value(StringBuilder sb, Btf btf, int id, ByteBuffer b, long at, long bitOff, int bits,
            int depth) {
        Btf.Type t;
        try {
            t = btf.resolve(id);
        } catch (IllegalArgumentException e) {
            sb.append("null");
            return;
        }
        long size = btf.sizeOf(t.id());
        long byteAt = at + bitOff / 8;
        boolean aggregate = t.kind() == Btf.KIND_STRUCT || t.kind() == Btf.KIND_UNION || t.kind() == Btf.KIND_ARRAY;
        // a struct or array the payload cuts short shows the members that fit; a scalar must fit whole
        if (depth > MAX_DEPTH || bits == 0 && (aggregate ? byteAt >= b.limit() : size <= 0 || byteAt + size > b.limit())) {
            sb.append("null");
            return;
        }
        switch (t.kind()) {
            case Btf.KIND_INT, Btf.KIND_ENUM, Btf.KIND_ENUM64 -> {
                int enc = t.kind() == Btf.KIND_INT ? btf.intEncoding(t.id()) : 0;
                boolean signed = (enc & (1 << 24)) != 0;
                if (bits > 0) {
                    long bitPos = at * 8 + bitOff;
                    long word = 0;
                    for (int i = 0; i < 8 && (bitPos / 8 + i) < b.limit(); i++) {
                        word |= (b.get((int) (bitPos / 8 + i)) & 0xffL) << (8 * i);
                    }
                    long v = word >>> (bitPos % 8);
                    v &= bits >= 64 ? -1L : (1L << bits) - 1;
                    if (signed && bits < 64 && (v & (1L << (bits - 1))) != 0) {
                        v |= -1L << bits;
                    }
                    sb.append(signed ? Long.toString(v) : Long.toUnsignedString(v));
                    return;
                }
                long v = read(b, (int) byteAt, (int) size, signed);
                if ((enc & (1 << 26)) != 0) {
                    sb.append(v != 0);
                } else {
                    sb.append(signed ? Long.toString(v) : Long.toUnsignedString(v));
                }
            }
            case Btf.KIND_PTR -> sb.append("\"0x").append(Long.toHexString(read(b, (int) byteAt, 8, false)))
                    .append('"');
            case Btf.KIND_FLOAT -> sb.append(size == 4 ? Json.number(b.getFloat((int) byteAt))
                    : size == 8 ? Json.number(b.getDouble((int) byteAt)) : "null");
            case Btf.KIND_ARRAY -> {
                int[] a = btf.array(t.id());
                Btf.Type elem = btf.resolve(a[0]);
                long esize = btf.sizeOf(a[0]);
                // char[] is text (clang names it "char"; BTF_INT_CHAR where set); unsigned char / __u8 are bytes
                if (elem.kind() == Btf.KIND_INT && esize == 1 && ((btf.intEncoding(elem.id()) & (1 << 25)) != 0
                        || elem.name().equals("char"))) {
                    int n = 0;
                    while (n < a[1] && byteAt + n < b.limit() && b.get((int) byteAt + n) != 0) {
                        n++;
                    }
                    byte[] s = new byte[n];
                    b.get((int) byteAt, s);
                    sb.append(Json.quote(new String(s, java.nio.charset.StandardCharsets.ISO_8859_1)));
                    return;
                }
                sb.append('[');
                for (int i = 0; i < Math.min(a[1], MAX_ARRAY); i++) {
                    sb.append(i == 0 ? "" : ",");
                    value(sb, btf, a[0], b, byteAt + i * esize, 0, 0, depth + 1);
                }
                sb.append(']');
            }
            case Btf.KIND_STRUCT, Btf.KIND_UNION -> {
                sb.append('{');
                boolean first = true;
                Map<String, Integer> anon = new LinkedHashMap<>();
                for (Btf.Member m : t.members()) {
                    String name = m.name().isEmpty() ? "_" + anon.merge("", 1, Integer::sum) : m.name();
                    sb.append(first ? "" : ",").append(Json.quote(name)).append(':');
                    first = false;
                    if (m.bitSize() > 0) {
                        value(sb, btf, m.typeId(), b, byteAt, m.bitOffset(), m.bitSize(), depth + 1);
                    } else if (m.bitOffset() % 8 != 0) {
                        sb.append("null");
                    } else {
                        value(sb, btf, m.typeId(), b, byteAt + m.bitOffset() / 8, 0, 0, depth + 1);
                    }
                }
                sb.append('}');
            }
            default -> {
                StringBuilder h = new StringBuilder();
                byte[] raw = new byte[(int) size];
                b.get((int) byteAt, raw);
                hex(h, raw);
                sb.append('"').append(h).append('"');
            }
        }
    }

    private static long read(ByteBuffer b, int at, int size, boolean signed) {
        return switch (size) {
            case 1 -> signed ? b.get(at) : b.get(at) & 0xffL;
            case 2 -> signed ? b.getShort(at) : b.getShort(at) & 0xffffL;
            case 4 -> signed ? b.getInt(at) : b.getInt(at) & 0xffffffffL;
            default -> b.getLong(at);
        };
    }
}
