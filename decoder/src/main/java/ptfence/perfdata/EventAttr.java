package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A {@code struct perf_event_attr} as stored in a perf.data file: the raw little-endian bytes (attr.size of them,
 * so newer fields survive a round trip untouched) with typed accessors for the fields a decoder needs.
 * Offsets follow include/uapi/linux/perf_event.h.
 */
public record EventAttr(ByteBuffer raw) {

    public static final int SIZE_VER0 = 64;
    /** What perf 6.1 writes (VER7, up to sig_data). */
    public static final int SIZE_PERF61 = 128;
    public static final int SIZE_MAX = 4096;

    // flag bits in the u64 at offset 40
    public static final long FLAG_DISABLED = 1L << 0;
    public static final long FLAG_INHERIT = 1L << 1;
    public static final long FLAG_EXCLUDE_USER = 1L << 4;
    public static final long FLAG_EXCLUDE_KERNEL = 1L << 5;
    public static final long FLAG_EXCLUDE_HV = 1L << 6;
    public static final long FLAG_MMAP = 1L << 8;
    public static final long FLAG_COMM = 1L << 9;
    public static final long FLAG_FREQ = 1L << 10;
    public static final long FLAG_ENABLE_ON_EXEC = 1L << 12;
    public static final long FLAG_TASK = 1L << 13;
    public static final long FLAG_WATERMARK = 1L << 14;
    public static final long FLAG_SAMPLE_ID_ALL = 1L << 18;
    public static final long FLAG_MMAP2 = 1L << 23;
    public static final long FLAG_COMM_EXEC = 1L << 24;
    public static final long FLAG_CONTEXT_SWITCH = 1L << 26;
    public static final long FLAG_KSYMBOL = 1L << 29;
    public static final long FLAG_BPF_EVENT = 1L << 30;
    public static final long FLAG_TEXT_POKE = 1L << 33;

    public EventAttr {
        ByteBuffer copy = ByteBuffer.allocate(raw.remaining());
        copy.put(raw.duplicate()).flip();
        raw = copy.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public ByteBuffer raw() {
        return raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    public int length() {
        return raw.remaining();
    }

    private long u64(int off) {
        return off + 8 <= raw.limit() ? raw.getLong(off) : 0;
    }

    private int u32(int off) {
        return off + 4 <= raw.limit() ? raw.getInt(off) : 0;
    }

    public int type() { return u32(0); }
    /** attr.size as recorded (0 means VER0). */
    public int size() { return u32(4); }
    public long config() { return u64(8); }
    public long samplePeriod() { return u64(16); }
    public long sampleType() { return u64(24); }
    public long readFormat() { return u64(32); }
    public long flags() { return u64(40); }
    public int wakeupEvents() { return u32(48); }
    public int bpType() { return u32(52); }
    public long config1() { return u64(56); }
    public long config2() { return u64(64); }
    public long branchSampleType() { return u64(72); }
    public int auxWatermark() { return u32(104); }
    public long config3() { return u64(128); }

    public boolean sampleIdAll() { return (flags() & FLAG_SAMPLE_ID_ALL) != 0; }
    public boolean has(long flag) { return (flags() & flag) != 0; }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds an attr; unset fields are 0. */
    public static final class Builder {
        private int size = SIZE_PERF61;
        private int type;
        private long config;
        private long samplePeriod;
        private long sampleType;
        private long readFormat;
        private long flags;
        private int wakeupEvents;
        private long config1;
        private long config2;
        private int auxWatermark;

        public Builder size(int v) { size = v; return this; }
        public Builder type(int v) { type = v; return this; }
        public Builder config(long v) { config = v; return this; }
        public Builder samplePeriod(long v) { samplePeriod = v; return this; }
        public Builder sampleType(long v) { sampleType = v; return this; }
        public Builder readFormat(long v) { readFormat = v; return this; }
        public Builder flags(long v) { flags = v; return this; }
        public Builder wakeupEvents(int v) { wakeupEvents = v; return this; }
        public Builder config1(long v) { config1 = v; return this; }
        public Builder config2(long v) { config2 = v; return this; }
        public Builder auxWatermark(int v) { auxWatermark = v; return this; }

        public EventAttr build() {
            if (size < SIZE_VER0 || size > SIZE_MAX || size % 8 != 0) {
                throw new IllegalArgumentException("attr size " + size);
            }
            ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(0, type).putInt(4, size).putLong(8, config).putLong(16, samplePeriod).putLong(24, sampleType)
                    .putLong(32, readFormat).putLong(40, flags).putInt(48, wakeupEvents).putLong(56, config1)
                    .putLong(64, config2);
            if (size >= 112) {
                b.putInt(104, auxWatermark);
            }
            return new EventAttr(b);
        }
    }
}
