package ptfence.sideband;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import ptfence.cli.BadInputException;
import ptfence.cli.JsonReader;

/**
 * Payloads decoded with a program's BTF, built here byte by byte as the BTF format lays it out (the expected values
 * are what the bytes say by C's rules, not what the decoder printed before).
 */
class BpfOutputFormatTest {
    /** A raw BTF blob: types as (name, info, size/type, extra ints...), strings in order of first use. */
    private static final class Blob {
        private final ByteBuffer types = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
        private final StringBuilder strings = new StringBuilder("\0");

        int str(String s) {
            if (s.isEmpty()) return 0;
            int at = strings.length();
            strings.append(s).append('\0');
            return at;
        }

        Blob type(String name, int kind, int vlen, boolean kindFlag, int sizeOrType, int... extra) {
            types.putInt(str(name)).putInt((kindFlag ? 1 << 31 : 0) | kind << 24 | vlen).putInt(sizeOrType);
            for (int e : extra) types.putInt(e);
            return this;
        }

        byte[] bytes() {
            byte[] s = strings.toString().getBytes(StandardCharsets.US_ASCII);
            int typeLen = types.position();
            ByteBuffer b = ByteBuffer.allocate(24 + typeLen + s.length).order(ByteOrder.LITTLE_ENDIAN);
            b.putShort((short) 0xeb9f).put((byte) 1).put((byte) 0).putInt(24).putInt(0).putInt(typeLen)
                    .putInt(typeLen).putInt(s.length);
            b.put(types.array(), 0, typeLen).put(s);
            return b.array();
        }
    }

    /**
     * [1] int, [2] _Bool, [3] unsigned char, [4] unsigned char[4], [5] struct inner { int a; int b:3; int c:5; },
     * [6] int *, [7] struct outer { struct inner in; _Bool flag; unsigned char bytes[4]; int *p; int neg; } (32).
     */
    private static byte[] btf(String extraStruct, int extraSize) {
        Blob b = new Blob();
        b.type("int", 1, 0, false, 4, 1 << 24 | 32);
        b.type("_Bool", 1, 0, false, 1, 4 << 24 | 8);
        b.type("unsigned char", 1, 0, false, 1, 8);
        b.type("", 3, 0, false, 0, 3, 1, 4);
        int a = b.str("a"), bb = b.str("b"), c = b.str("c");
        b.type("inner", 4, 3, true, 8, a, 1, 0, bb, 1, 3 << 24 | 32, c, 1, 5 << 24 | 35);
        b.type("", 2, 0, false, 1);
        int in = b.str("in"), flag = b.str("flag"), bytes = b.str("bytes"), p = b.str("p"), neg = b.str("neg");
        b.type("outer", 4, 5, false, 32, in, 5, 0, flag, 2, 64, bytes, 4, 72, p, 6, 128, neg, 1, 192);
        if (extraStruct != null) b.type(extraStruct, 4, 0, false, extraSize);
        return b.bytes();
    }

    /** outer's bytes, padded as the kernel pads RAW data (36 bytes). */
    private static byte[] outer() {
        ByteBuffer v = ByteBuffer.allocate(36).order(ByteOrder.LITTLE_ENDIAN);
        v.putInt(0, -5);
        // b = -2 (3 bits 110) at bit 32, c = 9 (5 bits 01001) at bit 35: bits 32..39 = 01001 110
        v.put(4, (byte) (0b110 | 0b01001 << 3));
        v.put(8, (byte) 1);
        v.put(9, (byte) 1).put(10, (byte) 2).put(11, (byte) 3).put(12, (byte) 250);
        v.putLong(16, 0x1234);
        v.putInt(24, -7);
        return v.array();
    }

    private static BpfOutputs.Sample sample(byte[] data) {
        return new BpfOutputs.Sample(0, 1, 10, 11, 1000, 0xffffffff81000000L, "bpf-output", data);
    }

    @Test
    void theOneStructOfThePayloadsSizeDecodesIt() {
        BpfOutputFormat f = BpfOutputFormat.of(List.of(btf(null, 0)), null, () -> null);
        Map<String, Object> o = JsonReader.object(f.fields(sample(outer())));
        @SuppressWarnings("unchecked")
        Map<String, Object> in = (Map<String, Object>) o.get("in");
        assertEquals(-5L, in.get("a"));
        assertEquals(-2L, in.get("b"));
        assertEquals(9L, in.get("c"));
        assertEquals(true, o.get("flag"));
        assertEquals(List.of(1L, 2L, 3L, 250L), o.get("bytes"));
        assertEquals("0x1234", o.get("p"));
        assertEquals(-7L, o.get("neg"));

        StringBuilder sb = new StringBuilder("{\"x\":0");
        f.json(sb, sample(outer()));
        Map<String, Object> j = JsonReader.object(sb.append('}').toString());
        assertEquals("struct outer", j.get("type"));
        assertEquals(36L, j.get("size"));
        assertTrue(((String) j.get("data")).startsWith("fbffffff4e"), j.toString());
        // struct inner (8 bytes) pads to 12: a 12-byte payload is one
        assertEquals("{\"a\":1,\"b\":0,\"c\":0}", f.fields(sample(new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})));
    }

    @Test
    void twoStructNamesOfOneSizeDecodeNothingUnlessOneIsNamed() {
        byte[] blob = btf("other", 30); // pads to 36 too
        assertNull(BpfOutputFormat.of(List.of(blob), null, () -> null).fields(sample(outer())));
        String named = BpfOutputFormat.of(List.of(blob), "struct outer", () -> null).fields(sample(outer()));
        assertTrue(named.contains("\"neg\":-7"), named);
        BadInputException e = assertThrows(BadInputException.class,
                () -> BpfOutputFormat.of(List.of(blob), "nosuch", () -> null));
        assertTrue(e.getMessage().startsWith("--bpf-output-type nosuch: no struct nosuch"), e.getMessage());
    }

    @Test
    void aNamedStructLongerThanThePayloadStopsAtItsEnd() {
        BpfOutputFormat f = BpfOutputFormat.of(List.of(btf(null, 0)), "outer", () -> null);
        byte[] cut = java.util.Arrays.copyOf(outer(), 12);
        Map<String, Object> o = JsonReader.object(f.fields(sample(cut)));
        assertEquals(true, o.get("flag"));
        assertEquals(java.util.Arrays.asList(1L, 2L, 3L, null), o.get("bytes")); // cut after the third
        assertNull(o.get("p"));
        assertNull(o.get("neg"));
        assertTrue(o.containsKey("neg"));
        // a damaged blob is skipped: hex only
        assertNull(BpfOutputFormat.of(List.of(new byte[] {1, 2, 3}), null, () -> null).fields(sample(outer())));
    }
}
