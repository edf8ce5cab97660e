package ptfence.perfdata;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import ptfence.cli.BadInputException;

/**
 * The AUX area (Intel PT) content of a recording: every AUXTRACE buffer in file order, grouped per mmap index
 * (one per CPU with per-cpu mmaps, else one per thread), the intel_pt AUXTRACE_INFO, the TIME_CONV, and the
 * PERF_RECORD_AUX flags counted.
 */
public final class AuxTrace {
    private final List<AuxBuffer> buffers;
    private final Optional<PerfRecord.AuxtraceInfo> info;
    private final Optional<PerfRecord.TimeConv> timeConv;
    private final AuxFlagCounts flags;

    /** How many PERF_RECORD_AUX records the kernel wrote, and how many carried each flag. */
    public record AuxFlagCounts(long records, long bytes, long truncated, long overwrite, long partial,
            long collision) {
        public boolean anyLoss() {
            return truncated > 0 || partial > 0 || collision > 0;
        }
    }

    private AuxTrace(List<AuxBuffer> buffers, Optional<PerfRecord.AuxtraceInfo> info,
            Optional<PerfRecord.TimeConv> timeConv, AuxFlagCounts flags) {
        this.buffers = Collections.unmodifiableList(buffers);
        this.info = info;
        this.timeConv = timeConv;
        this.flags = flags;
    }

    /** Reads the whole data section once; damage ends it with the BadInputException of the reader. */
    public static AuxTrace extract(PerfDataFile file) {
        List<AuxBuffer> buffers = new ArrayList<>();
        PerfRecord.AuxtraceInfo info = null;
        PerfRecord.TimeConv tc = null;
        long n = 0;
        long bytes = 0;
        long trunc = 0;
        long over = 0;
        long part = 0;
        long coll = 0;
        PerfDataFile.RecordReader r = file.records();
        while (r.hasNext()) {
            PerfRecord rec = r.next();
            if (rec instanceof PerfRecord.Auxtrace a) {
                buffers.add(new AuxBuffer(a.size() == 0 ? r.offset() + 48 : r.payloadOffset(), a.size(), a.offset(),
                        a.reference(), a.idx(), a.tid(), a.cpu(), a.data()));
            } else if (rec instanceof PerfRecord.Aux a) {
                n++;
                bytes += a.auxSize();
                trunc += a.truncated() ? 1 : 0;
                over += a.overwrite() ? 1 : 0;
                part += a.partial() ? 1 : 0;
                coll += a.collision() ? 1 : 0;
            } else if (rec instanceof PerfRecord.AuxtraceInfo a && info == null) {
                info = a;
            } else if (rec instanceof PerfRecord.TimeConv t && tc == null) {
                tc = t;
            }
        }
        return new AuxTrace(buffers, Optional.ofNullable(info), Optional.ofNullable(tc),
                new AuxFlagCounts(n, bytes, trunc, over, part, coll));
    }

    public List<AuxBuffer> buffers() {
        return buffers;
    }

    /** Buffers per mmap index, each list in file order. */
    public Map<Integer, List<AuxBuffer>> byIndex() {
        Map<Integer, List<AuxBuffer>> m = new TreeMap<>();
        for (AuxBuffer b : buffers) {
            m.computeIfAbsent(b.idx(), k -> new ArrayList<>()).add(b);
        }
        return m;
    }

    public Optional<PerfRecord.AuxtraceInfo> auxtraceInfo() {
        return info;
    }

    /** The intel_pt view of AUXTRACE_INFO, if the recording has one of type intel_pt. */
    public Optional<IntelPtInfo> intelPt() {
        if (info.isEmpty() || info.get().auxType() != PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
            return Optional.empty();
        }
        try {
            return Optional.of(IntelPtInfo.of(info.get()));
        } catch (BadPerfData e) {
            throw new BadInputException("AUXTRACE_INFO: " + e.getMessage());
        }
    }

    public Optional<PerfRecord.TimeConv> timeConv() {
        return timeConv;
    }

    public AuxFlagCounts flags() {
        return flags;
    }

    /** The stream of one mmap index: its buffers' bytes concatenated in file order. */
    public byte[] concatenated(int idx) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (AuxBuffer b : buffers) {
            if (b.idx() == idx) {
                ByteBuffer d = b.data();
                byte[] chunk = new byte[d.remaining()];
                d.get(chunk);
                out.writeBytes(chunk);
            }
        }
        return out.toByteArray();
    }
}
