package ptfence.perfdata;

import static ptfence.perfdata.RecordTypes.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import ptfence.perfdata.PerfRecord.*;

/** Decodes one record from its bytes; the one parser for perf.data records (RecordEncoder is the one writer). */
final class RecordParser {
    private RecordParser() {}

    /**
     * @param rec     the record, position 0 = its header, limit = header.size, in the file's byte order
     * @param attr    the attr the record belongs to (for SAMPLE layout and the sample_id_all trailer); may be null
     * @param payload the bytes that follow AUXTRACE / HEADER_TRACING_DATA records, else null
     */
    static PerfRecord parse(ByteBuffer rec, EventAttr attr, ByteBuffer payload) {
        int type = rec.getInt(0);
        int misc = rec.getShort(4) & 0xffff;
        if (type == SAMPLE) {
            return sample(misc, new Cursor(rec.duplicate().order(rec.order()).position(8)),
                    attr == null ? 0 : attr.sampleType());
        }
        SampleId sid = SampleId.NONE;
        ByteBuffer body = rec.duplicate().order(rec.order()).position(8);
        if (hasTrailer(type) && attr != null && attr.sampleIdAll()) {
            long layout = attr.sampleType() & SampleId.TRAILER_BITS;
            int n = SampleId.size(layout);
            if (n > rec.limit() - 8) {
                throw new BadPerfData(RecordTypes.name(type) + " record of " + rec.limit()
                        + " bytes is too short for its " + n + "-byte sample_id trailer");
            }
            sid = trailer(new Cursor(rec.duplicate().order(rec.order()).position(rec.limit() - n)), layout);
            body.limit(rec.limit() - n);
        }
        Cursor c = new Cursor(body);
        switch (type) {
            case MMAP: {
                int pid = c.u32();
                int tid = c.u32();
                return new Mmap(misc, pid, tid, c.u64(), c.u64(), c.u64(), c.restString("mmap filename"), sid);
            }
            case LOST:
                return new Lost(misc, c.u64(), c.u64(), sid);
            case COMM: {
                int pid = c.u32();
                return new Comm(misc, pid, c.u32(), c.restString("comm"), sid);
            }
            case EXIT:
                return new Exit(misc, c.u32(), c.u32(), c.u32(), c.u32(), c.u64(), sid);
            case FORK:
                return new Fork(misc, c.u32(), c.u32(), c.u32(), c.u32(), c.u64(), sid);
            case THROTTLE:
                return new Throttle(misc, c.u64(), c.u64(), c.u64(), sid);
            case UNTHROTTLE:
                return new Unthrottle(misc, c.u64(), c.u64(), c.u64(), sid);
            case READ: {
                int pid = c.u32();
                int tid = c.u32();
                return new Read(misc, pid, tid, c.bytes(c.remaining(), "read values"), sid);
            }
            case MMAP2: {
                int pid = c.u32();
                int tid = c.u32();
                long addr = c.u64();
                long len = c.u64();
                long pgoff = c.u64();
                int maj = c.u32();
                int min = c.u32();
                long ino = c.u64();
                long gen = c.u64();
                int prot = c.u32();
                int flags = c.u32();
                return new Mmap2(misc, pid, tid, addr, len, pgoff, maj, min, ino, gen, prot, flags,
                        c.restString("mmap2 filename"), sid);
            }
            case AUX:
                return new Aux(misc, c.u64(), c.u64(), c.u64(), sid);
            case ITRACE_START:
                return new ItraceStart(misc, c.u32(), c.u32(), sid);
            case LOST_SAMPLES:
                return new LostSamples(misc, c.u64(), sid);
            case SWITCH:
                return new Switch(misc, sid);
            case SWITCH_CPU_WIDE:
                return new SwitchCpuWide(misc, c.u32(), c.u32(), sid);
            case NAMESPACES: {
                int pid = c.u32();
                int tid = c.u32();
                int n = c.count(c.u64(), 16, "namespaces");
                List<Namespace> ns = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    ns.add(new Namespace(c.u64(), c.u64()));
                }
                return new Namespaces(misc, pid, tid, ns, sid);
            }
            case KSYMBOL: {
                long addr = c.u64();
                int len = c.u32();
                int ktype = c.u16();
                int flags = c.u16();
                return new Ksymbol(misc, addr, len, ktype, flags, c.restString("ksymbol name"), sid);
            }
            case BPF_EVENT: {
                int etype = c.u16();
                int flags = c.u16();
                int id = c.u32();
                return new BpfEvent(misc, etype, flags, id, c.bytes(8, "bpf tag"), sid);
            }
            case CGROUP: {
                long id = c.u64();
                return new Cgroup(misc, id, c.restString("cgroup path"), sid);
            }
            case TEXT_POKE: {
                long addr = c.u64();
                int oldLen = c.u16();
                int newLen = c.u16();
                ByteBuffer old = c.bytes(oldLen, "text_poke old bytes");
                return new TextPoke(misc, addr, old, c.bytes(newLen, "text_poke new bytes"), sid);
            }
            case AUX_OUTPUT_HW_ID:
                return new AuxOutputHwId(misc, c.u64(), sid);
            case HEADER_ATTR: {
                int attrSize = attrSizeAt(c);
                EventAttr a = attr(c.bytes(attrSize, "attr"));
                int n = c.count(c.remaining() / 8, 8, "attr ids");
                List<Long> ids = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    ids.add(c.u64());
                }
                return new HeaderAttr(misc, a, ids);
            }
            case HEADER_EVENT_TYPE: {
                long id = c.u64();
                return new HeaderEventType(misc, id, c.restString("event type name"));
            }
            case HEADER_TRACING_DATA:
                c.u32();
                return new HeaderTracingData(misc, readOnly(payload));
            case HEADER_BUILD_ID: {
                int pid = c.u32();
                ByteBuffer id = c.bytes(24, "build id");
                return new HeaderBuildId(misc, pid, id, c.restString("build id filename"));
            }
            case FINISHED_ROUND:
                return new FinishedRound(misc);
            case ID_INDEX: {
                int n = c.count(c.u64(), 32, "id index");
                List<IdIndexEntry> e = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    e.add(new IdIndexEntry(c.u64(), c.u64(), c.u64(), c.u64()));
                }
                return new IdIndex(misc, e);
            }
            case AUXTRACE_INFO: {
                int atype = c.u32();
                int reserved = c.u32();
                int n = c.remaining() / 8;
                List<Long> priv = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    priv.add(c.u64());
                }
                return new AuxtraceInfo(misc, atype, reserved, priv);
            }
            case AUXTRACE:
                return new Auxtrace(misc, c.u64(), c.u64(), c.u64(), c.u32(), c.u32(), c.u32(), c.u32(),
                        readOnly(payload));
            case AUXTRACE_ERROR: {
                int etype = c.u32();
                int code = c.u32();
                int cpu = c.u32();
                int pid = c.u32();
                int tid = c.u32();
                int fmt = c.u32();
                long ip = c.u64();
                String msg = c.cstring(64, "auxtrace error msg");
                return new AuxtraceError(misc, etype, code, cpu, pid, tid, fmt, ip, msg,
                        c.bytes(c.remaining(), "auxtrace error tail"));
            }
            case THREAD_MAP: {
                int n = c.count(c.u64(), 24, "thread map");
                List<ThreadMapEntry> e = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long pid = c.u64();
                    e.add(new ThreadMapEntry(pid, c.cstring(16, "thread comm")));
                }
                return new ThreadMap(misc, e);
            }
            case CPU_MAP:
                return new CpuMap(misc, c.bytes(c.remaining(), "cpu map"));
            case STAT_CONFIG:
                return new StatConfig(misc, c.bytes(c.remaining(), "stat config"));
            case STAT:
                return new Stat(misc, c.u64(), c.u32(), c.u32(), c.u64(), c.u64(), c.u64());
            case STAT_ROUND:
                return new StatRound(misc, c.u64(), c.u64());
            case EVENT_UPDATE: {
                long utype = c.u64();
                long id = c.u64();
                return new EventUpdate(misc, utype, id, c.bytes(c.remaining(), "event update"));
            }
            case TIME_CONV: {
                long shift = c.u64();
                long mult = c.u64();
                long zero = c.u64();
                return new TimeConv(misc, shift, mult, zero, c.bytes(c.remaining(), "time conv tail"));
            }
            case HEADER_FEATURE: {
                long feat = c.u64();
                if (feat <= 0 || feat >= Feature.MAX_BITS) {
                    throw new BadPerfData("feature record with feature id " + feat);
                }
                ByteBuffer section = c.bytes(c.remaining(), "feature").duplicate().order(rec.order());
                return new HeaderFeature(misc, FeatureCodec.parse((int) feat, section));
            }
            case COMPRESSED:
                return new Compressed(misc, c.bytes(c.remaining(), "compressed"));
            case FINISHED_INIT:
                return new FinishedInit(misc);
            default:
                return new Unknown(type, misc, c.bytes(c.remaining(), "record body"));
        }
    }

    /** Kernel records other than SAMPLE end with the sample_id_all trailer; unknown types are kept whole. */
    static boolean hasTrailer(int type) {
        return type > 0 && type <= AUX_OUTPUT_HW_ID && type != SAMPLE;
    }

    private static ByteBuffer readOnly(ByteBuffer b) {
        return b == null ? ByteBuffer.allocate(0).asReadOnlyBuffer() : b.asReadOnlyBuffer();
    }

    /** The attr size at the cursor (attr.size, 0 meaning VER0), checked. */
    static int attrSizeAt(Cursor c) {
        int size = c.peekU32(4);
        return checkAttrSize(size == 0 ? EventAttr.SIZE_VER0 : size);
    }

    static int checkAttrSize(long size) {
        if (size < EventAttr.SIZE_VER0 || size > EventAttr.SIZE_MAX || size % 8 != 0) {
            throw new BadPerfData("perf_event_attr size " + size);
        }
        return (int) size;
    }

    /** An attr from the file's bytes, normalized to little endian (perf byte-swaps the same fields). */
    static EventAttr attr(ByteBuffer src) {
        ByteBuffer in = src.duplicate().order(src.order());
        int n = in.remaining();
        ByteBuffer out = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        if (in.order() == ByteOrder.LITTLE_ENDIAN) {
            out.put(in).flip();
            return new EventAttr(out);
        }
        int base = in.position();
        for (int off = 0; off < n; ) {
            int w = fieldWidth(off);
            if (off + w > n) {
                w = n - off;
            }
            if (w == 8) {
                out.putLong(off, in.getLong(base + off));
            } else if (w == 4) {
                out.putInt(off, in.getInt(base + off));
            } else if (w == 2) {
                out.putShort(off, in.getShort(base + off));
            } else {
                out.put(off, in.get(base + off));
            }
            off += w;
        }
        return new EventAttr(out);
    }

    /** Width of the attr field at an offset, for byte swapping. */
    private static int fieldWidth(int off) {
        switch (off) {
            case 0: case 4: case 48: case 52: case 88: case 92: case 104: case 112: case 116:
                return 4;
            case 108: case 110:
                return 2;
            default:
                return off % 8 == 0 ? 8 : 1;
        }
    }

    static SampleId trailer(Cursor c, long layout) {
        int pid = 0;
        int tid = 0;
        long time = 0;
        long id = 0;
        long stream = 0;
        int cpu = 0;
        int res = 0;
        long identifier = 0;
        if ((layout & SampleType.TID) != 0) {
            pid = c.u32();
            tid = c.u32();
        }
        if ((layout & SampleType.TIME) != 0) {
            time = c.u64();
        }
        if ((layout & SampleType.ID) != 0) {
            id = c.u64();
        }
        if ((layout & SampleType.STREAM_ID) != 0) {
            stream = c.u64();
        }
        if ((layout & SampleType.CPU) != 0) {
            cpu = c.u32();
            res = c.u32();
        }
        if ((layout & SampleType.IDENTIFIER) != 0) {
            identifier = c.u64();
        }
        return new SampleId(layout, pid, tid, time, id, stream, cpu, res, identifier);
    }

    private static Sample sample(int misc, Cursor c, long st) {
        long identifier = (st & SampleType.IDENTIFIER) != 0 ? c.u64() : 0;
        long ip = (st & SampleType.IP) != 0 ? c.u64() : 0;
        int pid = 0;
        int tid = 0;
        if ((st & SampleType.TID) != 0) {
            pid = c.u32();
            tid = c.u32();
        }
        long time = (st & SampleType.TIME) != 0 ? c.u64() : 0;
        long addr = (st & SampleType.ADDR) != 0 ? c.u64() : 0;
        long id = (st & SampleType.ID) != 0 ? c.u64() : 0;
        long stream = (st & SampleType.STREAM_ID) != 0 ? c.u64() : 0;
        int cpu = 0;
        int res = 0;
        if ((st & SampleType.CPU) != 0) {
            cpu = c.u32();
            res = c.u32();
        }
        long period = (st & SampleType.PERIOD) != 0 ? c.u64() : 0;
        return new Sample(misc, st, identifier, ip, pid, tid, time, addr, id, stream, cpu, res, period,
                c.bytes(c.remaining(), "sample rest"));
    }
}
