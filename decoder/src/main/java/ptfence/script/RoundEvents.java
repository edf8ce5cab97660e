package ptfence.script;

import java.util.Iterator;
import ptfence.perfdata.PerfDataFile;
import ptfence.perfdata.PerfRecord;
import ptfence.perfdata.RecordTypes;

/**
 * perf script's {@code --show-round-events}: to see the rounds perf turns its ordered queue off and delivers each
 * record as it reads it. perf 6.1's Intel PT decoder refuses that delivery: at the first kernel record after the
 * intel_pt AUXTRACE_INFO perf says so, names the record (file offset, size, type) and exits 234 (-EINVAL), with
 * nothing on stdout beyond what it printed before (--header). That end is what this class finds.
 */
public final class RoundEvents {
    private RoundEvents() {
    }

    /** perf's end of an unordered read of an Intel PT recording: its stderr lines (each ending in a newline). */
    public record Refusal(String lines) {
    }

    /**
     * The end perf 6.1 comes to reading {@code f} unordered, or null where perf would deliver a kernel record before
     * any intel_pt AUXTRACE_INFO (or the recording has none): then perf prints records as they come, which ptdecode
     * does not do.
     */
    public static Refusal unordered(PerfDataFile f) {
        boolean pt = false;
        PerfDataFile.RecordReader r = f.records();
        for (Iterator<PerfRecord> it = r; it.hasNext();) {
            PerfRecord rec = it.next();
            if (rec instanceof PerfRecord.AuxtraceInfo i && i.auxType() == PerfRecord.AuxtraceInfo.TYPE_INTEL_PT) {
                pt = true;
            } else if (RecordTypes.isKernelType(rec.type())) {
                if (!pt) {
                    return null;
                }
                int size = r.rawBytes().remaining();
                StringBuilder sb = new StringBuilder();
                if (f.pipeMode()) {
                    // the warning perf's intel_pt setup gives any pipe-mode recording
                    sb.append("WARNING: Intel PT with pipe mode is not recommended.\n"
                            + "         The output cannot relied upon.  In particular,\n"
                            + "         timestamps and the order of events may be incorrect.\n");
                }
                sb.append("Intel Processor Trace requires ordered events\n");
                if (f.pipeMode()) {
                    // perf's pipe reader counts from after the pipe's header and prints no errno
                    sb.append(hex(r.offset() - PerfDataFile.PIPE_HEADER_SIZE)).append(" [").append(hex(size))
                            .append("]: failed to process type: ").append(rec.type()).append('\n');
                } else {
                    sb.append(hex(r.offset())).append(" [").append(hex(size)).append("]: failed to process type: ")
                            .append(rec.type()).append(" [Invalid argument]\n");
                }
                return new Refusal(sb.toString());
            }
        }
        return null;
    }

    private static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }
}
