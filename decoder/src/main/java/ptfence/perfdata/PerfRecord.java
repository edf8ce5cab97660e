package ptfence.perfdata;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * One record of a perf.data data section (or of a pipe-mode stream), as {@code perf report -D} knows it.
 * Kernel records (types below 64) carry their {@code sample_id_all} trailer decoded with the layout of
 * the attr they belong to; user records (64 and up) are written by the perf tool itself and have none.
 *
 * <p>Byte payloads are read-only {@link ByteBuffer}s (slices of the mapped file, not copies): their {@code equals}
 * compares content, so records compare by value. Accessors hand out duplicates (big-endian views, as
 * {@code duplicate()} makes them; set the order you read with).
 */
public sealed interface PerfRecord {

    /** perf_event_header.type. */
    int type();

    /** perf_event_header.misc. */
    int misc();

    /** The sample_id_all trailer of kernel records; {@link SampleId#NONE} when there is none. */
    default SampleId sampleId() {
        return SampleId.NONE;
    }

    /** The name {@code perf report -D} prints, without the PERF_RECORD_ prefix. */
    default String typeName() {
        return RecordTypes.name(type());
    }

    /** Byte fields are kept read-only; accessors hand out duplicates, so no caller can move a record's buffer. */
    private static ByteBuffer readOnly(ByteBuffer b) {
        return b.isReadOnly() ? b : b.asReadOnlyBuffer();
    }

    // ---- kernel records ------------------------------------------------------------------------------

    int MISC_COMM_EXEC = 0x2000;
    int MISC_SWITCH_OUT = 0x2000;
    int MISC_SWITCH_OUT_PREEMPT = 0x4000;
    int MISC_MMAP_BUILD_ID = 0x4000;

    record Mmap(int misc, int pid, int tid, long addr, long len, long pgoff, String filename, SampleId sampleId)
            implements PerfRecord {
        public int type() { return RecordTypes.MMAP; }
    }

    record Lost(int misc, long id, long lost, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.LOST; }
    }

    record Comm(int misc, int pid, int tid, String comm, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.COMM; }
        public boolean exec() { return (misc & MISC_COMM_EXEC) != 0; }
    }

    record Exit(int misc, int pid, int ppid, int tid, int ptid, long time, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.EXIT; }
    }

    record Fork(int misc, int pid, int ppid, int tid, int ptid, long time, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.FORK; }
    }

    record Throttle(int misc, long time, long id, long streamId, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.THROTTLE; }
    }

    record Unthrottle(int misc, long time, long id, long streamId, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.UNTHROTTLE; }
    }

    /** PERF_RECORD_READ: the counter values in the attr's read_format, kept raw. */
    record Read(int misc, int pid, int tid, ByteBuffer values, SampleId sampleId) implements PerfRecord {
        public Read {
            values = readOnly(values);
        }

        public int type() { return RecordTypes.READ; }

        @Override
        public ByteBuffer values() {
            return values.duplicate();
        }
    }

    /**
     * PERF_RECORD_SAMPLE with the fixed-size fields decoded (a field absent from {@code sampleType} is 0) and
     * everything from READ on (read values, callchain, raw, branch stack, regs, stack, weight, ...) kept raw.
     */
    record Sample(int misc, long sampleType, long identifier, long ip, int pid, int tid, long time, long addr, long id,
            long streamId, int cpu, int res, long period, ByteBuffer rest) implements PerfRecord {
        public Sample {
            rest = readOnly(rest);
            identifier = (sampleType & SampleType.IDENTIFIER) != 0 ? identifier : 0;
            ip = (sampleType & SampleType.IP) != 0 ? ip : 0;
            pid = (sampleType & SampleType.TID) != 0 ? pid : 0;
            tid = (sampleType & SampleType.TID) != 0 ? tid : 0;
            time = (sampleType & SampleType.TIME) != 0 ? time : 0;
            addr = (sampleType & SampleType.ADDR) != 0 ? addr : 0;
            id = (sampleType & SampleType.ID) != 0 ? id : 0;
            streamId = (sampleType & SampleType.STREAM_ID) != 0 ? streamId : 0;
            cpu = (sampleType & SampleType.CPU) != 0 ? cpu : 0;
            res = (sampleType & SampleType.CPU) != 0 ? res : 0;
            period = (sampleType & SampleType.PERIOD) != 0 ? period : 0;
        }

        public int type() { return RecordTypes.SAMPLE; }

        @Override
        public ByteBuffer rest() {
            return rest.duplicate();
        }
    }

    /**
     * PERF_RECORD_MMAP2. The 24 bytes at offset 40 are maj/min/ino/ino_generation, or with
     * {@link #MISC_MMAP_BUILD_ID} a build id; they are kept as the four fields either way and
     * {@link #buildId()} reinterprets them.
     */
    record Mmap2(int misc, int pid, int tid, long addr, long len, long pgoff, int maj, int min, long ino,
            long inoGeneration, int prot, int flags, String filename, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.MMAP2; }

        public boolean hasBuildId() { return (misc & MISC_MMAP_BUILD_ID) != 0; }

        /** The build id bytes (empty unless {@link #hasBuildId()}). */
        public byte[] buildId() {
            if (!hasBuildId()) {
                return new byte[0];
            }
            ByteBuffer b = ByteBuffer.allocate(24).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            b.putInt(maj).putInt(min).putLong(ino).putLong(inoGeneration);
            int n = Math.min(b.get(0) & 0xff, 20);
            byte[] out = new byte[n];
            b.position(4);
            b.get(out);
            return out;
        }
    }

    record Aux(int misc, long auxOffset, long auxSize, long flags, SampleId sampleId) implements PerfRecord {
        public static final long FLAG_TRUNCATED = 0x01;
        public static final long FLAG_OVERWRITE = 0x02;
        public static final long FLAG_PARTIAL = 0x04;
        public static final long FLAG_COLLISION = 0x08;

        public int type() { return RecordTypes.AUX; }
        public boolean truncated() { return (flags & FLAG_TRUNCATED) != 0; }
        public boolean overwrite() { return (flags & FLAG_OVERWRITE) != 0; }
        public boolean partial() { return (flags & FLAG_PARTIAL) != 0; }
        public boolean collision() { return (flags & FLAG_COLLISION) != 0; }
    }

    record ItraceStart(int misc, int pid, int tid, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.ITRACE_START; }
    }

    record LostSamples(int misc, long lost, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.LOST_SAMPLES; }
    }

    record Switch(int misc, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.SWITCH; }
        public boolean out() { return (misc & MISC_SWITCH_OUT) != 0; }
    }

    record SwitchCpuWide(int misc, int nextPrevPid, int nextPrevTid, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.SWITCH_CPU_WIDE; }
        public boolean out() { return (misc & MISC_SWITCH_OUT) != 0; }
        public boolean preempt() { return (misc & MISC_SWITCH_OUT_PREEMPT) != 0; }
    }

    record Namespace(long dev, long ino) {}

    record Namespaces(int misc, int pid, int tid, List<Namespace> namespaces, SampleId sampleId) implements PerfRecord {
        public Namespaces {
            namespaces = List.copyOf(namespaces);
        }
        public int type() { return RecordTypes.NAMESPACES; }
    }

    record Ksymbol(int misc, long addr, int len, int ksymType, int flags, String name, SampleId sampleId)
            implements PerfRecord {
        public static final int TYPE_UNKNOWN = 0;
        public static final int TYPE_BPF = 1;
        public static final int TYPE_OOL = 2;
        public static final int FLAG_UNREGISTER = 1;

        public int type() { return RecordTypes.KSYMBOL; }
        public boolean unregister() { return (flags & FLAG_UNREGISTER) != 0; }
    }

    record BpfEvent(int misc, int eventType, int flags, int id, ByteBuffer tag, SampleId sampleId) implements PerfRecord {
        public BpfEvent {
            tag = readOnly(tag);
        }

        public static final int PROG_LOAD = 1;
        public static final int PROG_UNLOAD = 2;

        public int type() { return RecordTypes.BPF_EVENT; }

        @Override
        public ByteBuffer tag() {
            return tag.duplicate();
        }
    }

    record Cgroup(int misc, long id, String path, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.CGROUP; }
    }

    record TextPoke(int misc, long addr, ByteBuffer oldBytes, ByteBuffer newBytes, SampleId sampleId) implements PerfRecord {
        public TextPoke {
            oldBytes = readOnly(oldBytes);
            newBytes = readOnly(newBytes);
        }

        public int type() { return RecordTypes.TEXT_POKE; }

        @Override
        public ByteBuffer oldBytes() {
            return oldBytes.duplicate();
        }

        @Override
        public ByteBuffer newBytes() {
            return newBytes.duplicate();
        }
    }

    record AuxOutputHwId(int misc, long hwId, SampleId sampleId) implements PerfRecord {
        public int type() { return RecordTypes.AUX_OUTPUT_HW_ID; }
    }

    // ---- user records (written by the perf tool) -------------------------------------------------------

    /** Pipe mode: an attr and its ids in the stream. */
    record HeaderAttr(int misc, EventAttr attr, List<Long> ids) implements PerfRecord {
        public HeaderAttr {
            ids = List.copyOf(ids);
        }
        public int type() { return RecordTypes.HEADER_ATTR; }
    }

    record HeaderEventType(int misc, long eventId, String name) implements PerfRecord {
        public int type() { return RecordTypes.HEADER_EVENT_TYPE; }
    }

    /** Pipe mode: tracing data; its {@code data} follows the record and is not counted in the header size. */
    record HeaderTracingData(int misc, ByteBuffer data) implements PerfRecord {
        public HeaderTracingData {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.HEADER_TRACING_DATA; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    /** Pipe mode build id: 20-byte id padded to 24, pid, file name. misc bit 15 says the size byte is valid. */
    record HeaderBuildId(int misc, int pid, ByteBuffer buildId, String filename) implements PerfRecord {
        public HeaderBuildId {
            buildId = readOnly(buildId);
        }

        public int type() { return RecordTypes.HEADER_BUILD_ID; }

        @Override
        public ByteBuffer buildId() {
            return buildId.duplicate();
        }
    }

    record FinishedRound(int misc) implements PerfRecord {
        public int type() { return RecordTypes.FINISHED_ROUND; }
    }

    record IdIndexEntry(long id, long idx, long cpu, long tid) {}

    record IdIndex(int misc, List<IdIndexEntry> entries) implements PerfRecord {
        public IdIndex {
            entries = List.copyOf(entries);
        }
        public int type() { return RecordTypes.ID_INDEX; }
    }

    /** PERF_RECORD_AUXTRACE_INFO; for Intel PT decode {@code priv} with {@link IntelPtInfo#of}. */
    record AuxtraceInfo(int misc, int auxType, int reserved, List<Long> priv) implements PerfRecord {
        public static final int TYPE_INTEL_PT = 1;

        public AuxtraceInfo {
            priv = List.copyOf(priv);
        }
        public int type() { return RecordTypes.AUXTRACE_INFO; }
    }

    /** PERF_RECORD_AUXTRACE: {@code data} ({@code size} bytes of AUX trace) follows the 48-byte record. */
    record Auxtrace(int misc, long size, long offset, long reference, int idx, int tid, int cpu, int reserved,
            ByteBuffer data) implements PerfRecord {
        public Auxtrace {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.AUXTRACE; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    /** PERF_RECORD_AUXTRACE_ERROR; {@code extra} holds what newer perf appends after msg (time, machine_pid, vcpu). */
    record AuxtraceError(int misc, int errorType, int code, int cpu, int pid, int tid, int fmt, long ip, String msg,
            ByteBuffer extra) implements PerfRecord {
        public AuxtraceError {
            extra = readOnly(extra);
        }

        public int type() { return RecordTypes.AUXTRACE_ERROR; }

        @Override
        public ByteBuffer extra() {
            return extra.duplicate();
        }
    }

    record ThreadMapEntry(long pid, String comm) {}

    record ThreadMap(int misc, List<ThreadMapEntry> entries) implements PerfRecord {
        public ThreadMap {
            entries = List.copyOf(entries);
        }
        public int type() { return RecordTypes.THREAD_MAP; }
    }

    record CpuMap(int misc, ByteBuffer data) implements PerfRecord {
        public CpuMap {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.CPU_MAP; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    record StatConfig(int misc, ByteBuffer data) implements PerfRecord {
        public StatConfig {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.STAT_CONFIG; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    record Stat(int misc, long id, int cpu, int thread, long val, long ena, long run) implements PerfRecord {
        public int type() { return RecordTypes.STAT; }
    }

    record StatRound(int misc, long roundType, long time) implements PerfRecord {
        public int type() { return RecordTypes.STAT_ROUND; }
    }

    record EventUpdate(int misc, long updateType, long id, ByteBuffer data) implements PerfRecord {
        public EventUpdate {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.EVENT_UPDATE; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    /** PERF_RECORD_TIME_CONV; {@code extra} is time_cycles, time_mask, cap_user_time_zero/short when present. */
    record TimeConv(int misc, long timeShift, long timeMult, long timeZero, ByteBuffer extra) implements PerfRecord {
        public TimeConv {
            extra = readOnly(extra);
        }

        /** The 56-byte form perf writes since 5.11, from the perf_event_mmap_page fields. */
        public static TimeConv of(long timeShift, long timeMult, long timeZero, long timeCycles, long timeMask,
                boolean capUserTimeZero, boolean capUserTimeShort) {
            ByteBuffer e = ByteBuffer.allocate(24).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            e.putLong(0, timeCycles).putLong(8, timeMask).put(16, (byte) (capUserTimeZero ? 1 : 0))
                    .put(17, (byte) (capUserTimeShort ? 1 : 0));
            return new TimeConv(0, timeShift, timeMult, timeZero, e);
        }

        public int type() { return RecordTypes.TIME_CONV; }

        private ByteBuffer le() {
            return extra.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        }

        /** time_cycles (0 in the older 32-byte form). */
        public long timeCycles() { return extra.remaining() >= 8 ? le().getLong(extra.position()) : 0; }
        public long timeMask() { return extra.remaining() >= 16 ? le().getLong(extra.position() + 8) : 0; }
        public boolean capUserTimeZero() { return extra.remaining() >= 17 && extra.get(extra.position() + 16) != 0; }
        public boolean capUserTimeShort() { return extra.remaining() >= 18 && extra.get(extra.position() + 17) != 0; }

        @Override
        public ByteBuffer extra() {
            return extra.duplicate();
        }
    }

    /** Pipe mode: one feature section in the stream. */
    record HeaderFeature(int misc, Feature feature) implements PerfRecord {
        public int type() { return RecordTypes.HEADER_FEATURE; }
    }

    /** zstd-compressed records, kept compressed. */
    record Compressed(int misc, ByteBuffer data) implements PerfRecord {
        public Compressed {
            data = readOnly(data);
        }

        public int type() { return RecordTypes.COMPRESSED; }

        @Override
        public ByteBuffer data() {
            return data.duplicate();
        }
    }

    record FinishedInit(int misc) implements PerfRecord {
        public int type() { return RecordTypes.FINISHED_INIT; }
    }

    /** A record type this reader does not know; its body is kept as is. */
    record Unknown(int type, int misc, ByteBuffer body) implements PerfRecord {
        public Unknown {
            body = readOnly(body);
        }

        @Override
        public ByteBuffer body() {
            return body.duplicate();
        }
    }
}
