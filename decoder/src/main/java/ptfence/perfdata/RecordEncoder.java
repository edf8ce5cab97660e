package ptfence.perfdata;

import java.nio.ByteBuffer;
import ptfence.perfdata.PerfRecord.*;

/**
 * Encodes records in the kernel's and perf's layouts (little endian); the one writer for perf.data records.
 * Strings are NUL-terminated and padded the way their producers pad them (kernel: to 8 bytes; perf's build
 * ids: to 64).
 */
final class RecordEncoder {
    static final int MAX_RECORD = 0xffff;

    private RecordEncoder() {}

    /** Header, body and sample_id trailer of a record. AUXTRACE / TRACING_DATA payloads are not included. */
    static Out encode(PerfRecord r) {
        Out o = new Out(64);
        o.u32(r.type()).u16(r.misc()).u16(0);
        body(r, o);
        trailer(r.sampleId(), o);
        if (o.length() > MAX_RECORD) {
            throw new IllegalArgumentException(r.typeName() + " record of " + o.length() + " bytes exceeds 64 KiB");
        }
        o.u16At(6, o.length());
        return o;
    }

    /** The bytes that follow the record in the stream (AUXTRACE data, tracing data), or null. */
    static ByteBuffer payload(PerfRecord r) {
        if (r instanceof Auxtrace a) {
            if (a.size() != a.data().remaining()) {
                throw new IllegalArgumentException("AUXTRACE size " + a.size() + " but " + a.data().remaining()
                        + " bytes of data");
            }
            return a.data();
        }
        if (r instanceof HeaderTracingData t) {
            return t.data();
        }
        return null;
    }

    private static void body(PerfRecord r, Out o) {
        if (r instanceof Mmap m) {
            o.u32(m.pid()).u32(m.tid()).u64(m.addr()).u64(m.len()).u64(m.pgoff()).paddedString(m.filename(), 8);
        } else if (r instanceof Lost l) {
            o.u64(l.id()).u64(l.lost());
        } else if (r instanceof Comm c) {
            o.u32(c.pid()).u32(c.tid()).paddedString(c.comm(), 8);
        } else if (r instanceof Exit e) {
            o.u32(e.pid()).u32(e.ppid()).u32(e.tid()).u32(e.ptid()).u64(e.time());
        } else if (r instanceof Fork f) {
            o.u32(f.pid()).u32(f.ppid()).u32(f.tid()).u32(f.ptid()).u64(f.time());
        } else if (r instanceof Throttle t) {
            o.u64(t.time()).u64(t.id()).u64(t.streamId());
        } else if (r instanceof Unthrottle t) {
            o.u64(t.time()).u64(t.id()).u64(t.streamId());
        } else if (r instanceof Read rd) {
            o.u32(rd.pid()).u32(rd.tid()).bytes(rd.values());
        } else if (r instanceof Sample s) {
            sample(s, o);
        } else if (r instanceof Mmap2 m) {
            o.u32(m.pid()).u32(m.tid()).u64(m.addr()).u64(m.len()).u64(m.pgoff()).u32(m.maj()).u32(m.min())
                    .u64(m.ino()).u64(m.inoGeneration()).u32(m.prot()).u32(m.flags()).paddedString(m.filename(), 8);
        } else if (r instanceof Aux a) {
            o.u64(a.auxOffset()).u64(a.auxSize()).u64(a.flags());
        } else if (r instanceof ItraceStart i) {
            o.u32(i.pid()).u32(i.tid());
        } else if (r instanceof LostSamples l) {
            o.u64(l.lost());
        } else if (r instanceof Switch) {
            // header and trailer only
        } else if (r instanceof SwitchCpuWide s) {
            o.u32(s.nextPrevPid()).u32(s.nextPrevTid());
        } else if (r instanceof Namespaces n) {
            o.u32(n.pid()).u32(n.tid()).u64(n.namespaces().size());
            n.namespaces().forEach(ns -> o.u64(ns.dev()).u64(ns.ino()));
        } else if (r instanceof Ksymbol k) {
            o.u64(k.addr()).u32(k.len()).u16(k.ksymType()).u16(k.flags()).paddedString(k.name(), 8);
        } else if (r instanceof BpfEvent b) {
            o.u16(b.eventType()).u16(b.flags()).u32(b.id());
            fixed(o, b.tag(), 8);
        } else if (r instanceof Cgroup c) {
            o.u64(c.id()).paddedString(c.path(), 8);
        } else if (r instanceof TextPoke t) {
            o.u64(t.addr()).u16(t.oldBytes().remaining()).u16(t.newBytes().remaining()).bytes(t.oldBytes())
                    .bytes(t.newBytes()).pad(8);
        } else if (r instanceof AuxOutputHwId h) {
            o.u64(h.hwId());
        } else if (r instanceof HeaderAttr a) {
            o.bytes(a.attr().raw());
            a.ids().forEach(o::u64);
        } else if (r instanceof HeaderEventType e) {
            o.u64(e.eventId()).fixedString(e.name(), 64);
        } else if (r instanceof HeaderTracingData t) {
            o.u32(t.data().remaining()).pad(8);
        } else if (r instanceof HeaderBuildId b) {
            o.u32(b.pid());
            fixed(o, b.buildId(), 24);
            o.paddedString(b.filename(), 64);
        } else if (r instanceof FinishedRound || r instanceof FinishedInit) {
            // header only
        } else if (r instanceof IdIndex x) {
            o.u64(x.entries().size());
            x.entries().forEach(e -> o.u64(e.id()).u64(e.idx()).u64(e.cpu()).u64(e.tid()));
        } else if (r instanceof AuxtraceInfo i) {
            o.u32(i.auxType()).u32(i.reserved());
            i.priv().forEach(o::u64);
        } else if (r instanceof Auxtrace a) {
            o.u64(a.size()).u64(a.offset()).u64(a.reference()).u32(a.idx()).u32(a.tid()).u32(a.cpu())
                    .u32(a.reserved());
        } else if (r instanceof AuxtraceError e) {
            o.u32(e.errorType()).u32(e.code()).u32(e.cpu()).u32(e.pid()).u32(e.tid()).u32(e.fmt()).u64(e.ip())
                    .fixedString(e.msg(), 64).bytes(e.extra());
        } else if (r instanceof ThreadMap t) {
            o.u64(t.entries().size());
            t.entries().forEach(e -> o.u64(e.pid()).fixedString(e.comm(), 16));
        } else if (r instanceof CpuMap c) {
            o.bytes(c.data());
        } else if (r instanceof StatConfig s) {
            o.bytes(s.data());
        } else if (r instanceof Stat s) {
            o.u64(s.id()).u32(s.cpu()).u32(s.thread()).u64(s.val()).u64(s.ena()).u64(s.run());
        } else if (r instanceof StatRound s) {
            o.u64(s.roundType()).u64(s.time());
        } else if (r instanceof EventUpdate e) {
            o.u64(e.updateType()).u64(e.id()).bytes(e.data());
        } else if (r instanceof TimeConv t) {
            o.u64(t.timeShift()).u64(t.timeMult()).u64(t.timeZero()).bytes(t.extra());
        } else if (r instanceof HeaderFeature f) {
            o.u64(f.feature().id()).bytes(FeatureCodec.encode(f.feature()));
        } else if (r instanceof Compressed c) {
            o.bytes(c.data());
        } else if (r instanceof Unknown u) {
            o.bytes(u.body());
        } else {
            throw new IllegalStateException("no encoding for " + r.getClass().getSimpleName());
        }
    }

    private static void fixed(Out o, ByteBuffer b, int n) {
        ByteBuffer d = b.duplicate();
        if (d.remaining() > n) {
            d.limit(d.position() + n);
        }
        int k = d.remaining();
        o.bytes(d).zeros(n - k);
    }

    private static void sample(Sample s, Out o) {
        long st = s.sampleType();
        if ((st & SampleType.IDENTIFIER) != 0) {
            o.u64(s.identifier());
        }
        if ((st & SampleType.IP) != 0) {
            o.u64(s.ip());
        }
        if ((st & SampleType.TID) != 0) {
            o.u32(s.pid()).u32(s.tid());
        }
        if ((st & SampleType.TIME) != 0) {
            o.u64(s.time());
        }
        if ((st & SampleType.ADDR) != 0) {
            o.u64(s.addr());
        }
        if ((st & SampleType.ID) != 0) {
            o.u64(s.id());
        }
        if ((st & SampleType.STREAM_ID) != 0) {
            o.u64(s.streamId());
        }
        if ((st & SampleType.CPU) != 0) {
            o.u32(s.cpu()).u32(s.res());
        }
        if ((st & SampleType.PERIOD) != 0) {
            o.u64(s.period());
        }
        o.bytes(s.rest());
    }

    static void trailer(SampleId t, Out o) {
        long l = t.layout();
        if ((l & SampleType.TID) != 0) {
            o.u32(t.pid()).u32(t.tid());
        }
        if ((l & SampleType.TIME) != 0) {
            o.u64(t.time());
        }
        if ((l & SampleType.ID) != 0) {
            o.u64(t.id());
        }
        if ((l & SampleType.STREAM_ID) != 0) {
            o.u64(t.streamId());
        }
        if ((l & SampleType.CPU) != 0) {
            o.u32(t.cpu()).u32(t.res());
        }
        if ((l & SampleType.IDENTIFIER) != 0) {
            o.u64(t.identifier());
        }
    }
}
