package ptfence.sys;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * {@code struct perf_event_attr}, built field by field and encoded in the newest layout (144 bytes, VER9; the
 * kernel accepts it when the bytes beyond its own struct are zero). Offsets and flag bits: docs/kernel-interfaces.md §1.
 */
public final class PerfEventAttr {
    public static final int SIZE = 144;

    public static final int TYPE_HARDWARE = 0, TYPE_SOFTWARE = 1;
    public static final long COUNT_SW_DUMMY = 9;

    public static final long SAMPLE_TID = 0x2, SAMPLE_TIME = 0x4, SAMPLE_ID = 0x40, SAMPLE_CPU = 0x80,
            SAMPLE_IDENTIFIER = 0x10000;

    /** Bits of the flags word at offset 40. */
    public static final long DISABLED = 1L << 0, INHERIT = 1L << 1, EXCLUDE_USER = 1L << 4,
            EXCLUDE_KERNEL = 1L << 5, EXCLUDE_HV = 1L << 6, MMAP = 1L << 8, COMM = 1L << 9,
            ENABLE_ON_EXEC = 1L << 12, TASK = 1L << 13, WATERMARK = 1L << 14, SAMPLE_ID_ALL = 1L << 18,
            EXCLUDE_GUEST = 1L << 20, MMAP2 = 1L << 23, COMM_EXEC = 1L << 24, CONTEXT_SWITCH = 1L << 26,
            KSYMBOL = 1L << 29, BPF_EVENT = 1L << 30, AUX_OUTPUT = 1L << 31, TEXT_POKE = 1L << 33;

    public int type;
    public long config;
    public long samplePeriod;
    public long sampleType;
    public long readFormat;
    public long flags;
    /** wakeup_events, or wakeup_watermark (bytes) when {@link #WATERMARK} is set. */
    public int wakeup;
    public long config1;
    public long config2;
    public int auxWatermark;

    /** A software dummy event: carries sideband records only. */
    public static PerfEventAttr dummy() {
        PerfEventAttr a = new PerfEventAttr();
        a.type = TYPE_SOFTWARE;
        a.config = COUNT_SW_DUMMY;
        return a;
    }

    public boolean has(long flag) {
        return (flags & flag) != 0;
    }

    /** The bytes the kernel reads; {@code size} is written as {@code attrSize} (perf.data writers use 136 or 128). */
    public byte[] encode(int attrSize) {
        ByteBuffer b = ByteBuffer.allocate(Math.max(SIZE, attrSize)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, type);
        b.putInt(4, attrSize);
        b.putLong(8, config);
        b.putLong(16, samplePeriod);
        b.putLong(24, sampleType);
        b.putLong(32, readFormat);
        b.putLong(40, flags);
        b.putInt(48, wakeup);
        b.putLong(56, config1);
        b.putLong(64, config2);
        b.putInt(104, auxWatermark);
        byte[] out = new byte[attrSize];
        b.get(0, out, 0, attrSize);
        return out;
    }

    public byte[] encode() {
        return encode(SIZE);
    }

    /** Size of the {@code sample_id} trailer that {@link #SAMPLE_ID_ALL} appends to every non-sample record. */
    public int sampleIdSize() {
        int n = 0;
        if ((sampleType & SAMPLE_TID) != 0) n += 8;
        if ((sampleType & SAMPLE_TIME) != 0) n += 8;
        if ((sampleType & SAMPLE_ID) != 0) n += 8;
        if ((sampleType & 0x200) != 0) n += 8;
        if ((sampleType & SAMPLE_CPU) != 0) n += 8;
        if ((sampleType & SAMPLE_IDENTIFIER) != 0) n += 8;
        return n;
    }
}
