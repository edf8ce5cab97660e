package ptfence.script;

import java.util.List;
import ptfence.perfdata.PerfRecord;
import ptfence.symbol.Symbolizer;

/**
 * Which of the recording's own records perf script prints as samples, and the files it reads for them outside its
 * decoder's walks: the code at a printed sample's IP (script_fetch_insn: the sample has no instruction bytes), and a
 * vdso mapping's probe of the process's files for their ELF class (machine__findnew_vdso). Where a file is missing,
 * each read makes its data status ERROR ({@link DsoData}), which decides the walk failures perf reports. The one
 * home of this rule for the sample views ({@link SidebandLines}) and the call views.
 */
public final class RecordReads {
    private RecordReads() {
    }

    /** Files perf reads outside its decoder's walks: {@code files[i]} at perf time {@code times[i]} (ascending). */
    public record Files(long[] times, String[] files) {
    }

    /** perf's name of the vdso mapping (is_vdso_map). */
    static final String VDSO = "[vdso]";

    /**
     * Whether perf script prints the samples of a recorded event of {@code type} and {@code config}: not those of the
     * trace's own event (type {@code ptType}, its samples are synthesized from the trace), nor a dummy event's.
     */
    public static boolean printed(int type, long config, long ptType) {
        return type != ptType && !(type == 1 && config == 9);
    }

    /**
     * Whether perf script drops a recorded sample at perf time {@code time} before anything else: process_sample_event
     * leaves out a sample outside the --time ranges first, so it is neither printed nor its code's file read.
     */
    public static boolean dropped(TimeRanges time, long t) {
        return !time.isEmpty() && t >= 0 && time.skip(t);
    }

    /** The file perf reads for printed sample {@code s}'s code at perf time {@code time}, or null (no IP, unmapped). */
    public static String ofSample(Symbolizer symbols, PerfRecord.Sample s, long time) {
        return s.ip() == 0 ? null : symbols.dso(s.ip(), time, s.pid());
    }

    /**
     * Whether perf script reads the code at a printed synthesized branch from {@code from} whose instruction is
     * {@code insnLen} bytes: one without an instruction (asynchronous, an abort: perf's insn_len 0) has its code
     * fetched to be printed (script_fetch_insn); a trace begin (from 0) has no code to fetch.
     */
    public static boolean readsBranchCode(long from, int insnLen) {
        return insnLen == 0 && from != 0;
    }

    /** Whether {@code r} is a mapping of the vdso. */
    public static boolean vdso(PerfRecord r) {
        return VDSO.equals(r instanceof PerfRecord.Mmap m ? m.filename()
                : r instanceof PerfRecord.Mmap2 m ? m.filename() : null);
    }

    /** The files perf reads, in order, at vdso mapping {@code r} at perf time {@code time} (none for other records). */
    public static List<String> ofMapping(Symbolizer symbols, PerfRecord r, long time) {
        if (!vdso(r)) {
            return List.of();
        }
        int pid = r instanceof PerfRecord.Mmap m ? m.pid() : ((PerfRecord.Mmap2) r).pid();
        return symbols.filesReadForVdso(pid, time);
    }
}
