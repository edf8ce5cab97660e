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
    private final Map<Integer, AuxFlagCounts> flagsByCpu;

    /** How many PERF_RECORD_AUX records the kernel wrote, and how many carried each flag. */
    public record AuxFlagCounts(long records, long bytes, long truncated, long overwrite, long partial,
            long collision) {
        public static final AuxFlagCounts NONE = new AuxFlagCounts(0, 0, 0, 0, 0, 0);

        public boolean anyLoss() {
            return truncated > 0 || partial > 0 || collision > 0;
        }

        AuxFlagCounts plus(PerfRecord.Aux a) {
            return new AuxFlagCounts(records + 1, bytes + a.auxSize(), truncated + (a.truncated() ? 1 : 0),
                    overwrite + (a.overwrite() ? 1 : 0), partial + (a.partial() ? 1 : 0),
                    collision + (a.collision() ? 1 : 0));
        }
    }

    private AuxTrace(List<AuxBuffer> buffers, Optional<PerfRecord.AuxtraceInfo> info,
            Optional<PerfRecord.TimeConv> timeConv, AuxFlagCounts flags, Map<Integer, AuxFlagCounts> flagsByCpu) {
        this.flagsByCpu = Collections.unmodifiableMap(flagsByCpu);
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
        AuxFlagCounts all = AuxFlagCounts.NONE;
        Map<Integer, AuxFlagCounts> perCpu = new TreeMap<>();
        PerfDataFile.RecordReader r = file.records();
        while (r.hasNext()) {
            PerfRecord rec = r.next();
            if (rec instanceof PerfRecord.Auxtrace a) {
                buffers.add(new AuxBuffer(a.size() == 0 ? r.offset() + 48 : r.payloadOffset(), a.size(), a.offset(),
                        a.reference(), a.idx(), a.tid(), a.cpu(), a.data()));
            } else if (rec instanceof PerfRecord.Aux a) {
                all = all.plus(a);
                int cpu = a.sampleId().has(SampleType.CPU) ? a.sampleId().cpu() : -1;
                perCpu.put(cpu, perCpu.getOrDefault(cpu, AuxFlagCounts.NONE).plus(a));
            } else if (rec instanceof PerfRecord.AuxtraceInfo a && info == null) {
                info = a;
            } else if (rec instanceof PerfRecord.TimeConv t && tc == null) {
                tc = t;
            }
        }
        return new AuxTrace(buffers, Optional.ofNullable(info), Optional.ofNullable(tc),
                all, perCpu);
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

    /** The AUX flag counts per CPU (from the records' sample_id; -1 when the records carry no CPU). */
    public Map<Integer, AuxFlagCounts> flagsByCpu() {
        return flagsByCpu;
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
