package ptfence.bpf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The kernel's translated instructions ({@code prog->insnsi}, as the fence reads them) in the form
 * BPF_OBJ_GET_INFO_BY_FD reports them to a privileged caller (kernel/bpf/syscall.c, bpf_insn_prepare_dump): tail
 * calls and CALL_ARGS shown as helper calls, PROBE_MEM loads as plain loads, and every 64-bit immediate that is a
 * map's address (or the address of a single-element array's value) turned back into the map's id and offset.
 */
public final class XlatedDump {
    /** A map the program uses: kernel address, id, type, max_entries, value_size. */
    public record Map(long address, int id, int type, int maxEntries, int valueSize) {}

    private static final int CLASS_LD = 0x00, CLASS_LDX = 0x01, CLASS_ST = 0x02, CLASS_STX = 0x03,
            JMP_CALL = 0x85, JMP_TAIL_CALL = 0xf5, JMP_CALL_ARGS = 0xe5, LD_IMM64 = 0x18, MODE_MASK = 0xe0,
            MODE_MEM = 0x60, MODE_PROBE_MEM = 0x20, MODE_PROBE_MEM32 = 0xa0, FUNC_TAIL_CALL = 12;
    private static final int PSEUDO_MAP_FD = 1, PSEUDO_MAP_VALUE = 2, MAP_TYPE_ARRAY = 2;
    /** offsetof(struct bpf_array, value) on x86-64 (struct bpf_map, elem_size, index_mask, aux). */
    static final int ARRAY_VALUE_OFFSET = 312;

    private XlatedDump() {}

    public static byte[] prepare(byte[] kernelInsns, List<Map> maps) {
        return prepare(kernelInsns, maps, ARRAY_VALUE_OFFSET);
    }

    /** @param arrayValueOffset offsetof(struct bpf_array, value) in the running kernel */
    public static byte[] prepare(byte[] kernelInsns, List<Map> maps, int arrayValueOffset) {
        byte[] out = kernelInsns.clone();
        ByteBuffer b = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
        int n = out.length / 8;
        for (int i = 0; i < n; i++) {
            int at = 8 * i;
            int code = b.get(at) & 0xff;
            if (code == JMP_TAIL_CALL) {
                b.put(at, (byte) JMP_CALL).putInt(at + 4, FUNC_TAIL_CALL);
                continue;
            }
            if (code == JMP_CALL || code == JMP_CALL_ARGS) {
                b.put(at, (byte) JMP_CALL);
                continue;
            }
            int cls = code & 0x07, mode = code & MODE_MASK;
            if (cls == CLASS_LDX && mode == MODE_PROBE_MEM) {
                b.put(at, (byte) (CLASS_LDX | (code & 0x18) | MODE_MEM));
                continue;
            }
            if ((cls == CLASS_LDX || cls == CLASS_STX || cls == CLASS_ST) && mode == MODE_PROBE_MEM32) {
                b.put(at, (byte) (cls | (code & 0x18) | MODE_MEM));
                continue;
            }
            if (code != (CLASS_LD | LD_IMM64) || i + 1 >= n) continue;
            long imm = (Integer.toUnsignedLong(b.getInt(at + 12)) << 32) | Integer.toUnsignedLong(b.getInt(at + 4));
            for (Map m : maps) {
                int type;
                long off;
                if (m.address() == imm) {
                    type = PSEUDO_MAP_FD;
                    off = 0;
                } else if (m.type() == MAP_TYPE_ARRAY && m.maxEntries() == 1
                        && Long.compareUnsigned(imm - (m.address() + arrayValueOffset), roundUp8(m.valueSize())) < 0) {
                    type = PSEUDO_MAP_VALUE;
                    off = imm - (m.address() + arrayValueOffset);
                } else {
                    continue;
                }
                int regs = b.get(at + 1) & 0x0f;
                b.put(at + 1, (byte) (regs | (type << 4))).putInt(at + 4, m.id()).putInt(at + 12, (int) off);
                break;
            }
        }
        return out;
    }

    private static long roundUp8(int v) {
        return (Integer.toUnsignedLong(v) + 7) & ~7L;
    }
}
