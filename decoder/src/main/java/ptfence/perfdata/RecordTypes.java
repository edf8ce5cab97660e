package ptfence.perfdata;

/** perf_event_header.type values and the names {@code perf report -D} prints for them. */
public final class RecordTypes {
    public static final int MMAP = 1;
    public static final int LOST = 2;
    public static final int COMM = 3;
    public static final int EXIT = 4;
    public static final int THROTTLE = 5;
    public static final int UNTHROTTLE = 6;
    public static final int FORK = 7;
    public static final int READ = 8;
    public static final int SAMPLE = 9;
    public static final int MMAP2 = 10;
    public static final int AUX = 11;
    public static final int ITRACE_START = 12;
    public static final int LOST_SAMPLES = 13;
    public static final int SWITCH = 14;
    public static final int SWITCH_CPU_WIDE = 15;
    public static final int NAMESPACES = 16;
    public static final int KSYMBOL = 17;
    public static final int BPF_EVENT = 18;
    public static final int CGROUP = 19;
    public static final int TEXT_POKE = 20;
    public static final int AUX_OUTPUT_HW_ID = 21;

    /** Types from here on are written by the perf tool, not the kernel, and carry no sample_id trailer. */
    public static final int USER_TYPE_START = 64;
    public static final int HEADER_ATTR = 64;
    public static final int HEADER_EVENT_TYPE = 65;
    public static final int HEADER_TRACING_DATA = 66;
    public static final int HEADER_BUILD_ID = 67;
    public static final int FINISHED_ROUND = 68;
    public static final int ID_INDEX = 69;
    public static final int AUXTRACE_INFO = 70;
    public static final int AUXTRACE = 71;
    public static final int AUXTRACE_ERROR = 72;
    public static final int THREAD_MAP = 73;
    public static final int CPU_MAP = 74;
    public static final int STAT_CONFIG = 75;
    public static final int STAT = 76;
    public static final int STAT_ROUND = 77;
    public static final int EVENT_UPDATE = 78;
    public static final int TIME_CONV = 79;
    public static final int HEADER_FEATURE = 80;
    public static final int COMPRESSED = 81;
    public static final int FINISHED_INIT = 82;

    private static final String[] KERNEL = {null, "MMAP", "LOST", "COMM", "EXIT", "THROTTLE", "UNTHROTTLE", "FORK",
        "READ", "SAMPLE", "MMAP2", "AUX", "ITRACE_START", "LOST_SAMPLES", "SWITCH", "SWITCH_CPU_WIDE", "NAMESPACES",
        "KSYMBOL", "BPF_EVENT", "CGROUP", "TEXT_POKE", "AUX_OUTPUT_HW_ID"};
    private static final String[] USER = {"ATTR", "EVENT_TYPE", "TRACING_DATA", "BUILD_ID", "FINISHED_ROUND",
        "ID_INDEX", "AUXTRACE_INFO", "AUXTRACE", "AUXTRACE_ERROR", "THREAD_MAP", "CPU_MAP", "STAT_CONFIG", "STAT",
        "STAT_ROUND", "EVENT_UPDATE", "TIME_CONV", "FEATURE", "COMPRESSED", "FINISHED_INIT"};

    private RecordTypes() {}

    /** perf's name for a record type ("MMAP2", "AUXTRACE", ...), or "UNKNOWN_&lt;n&gt;". */
    public static String name(int type) {
        if (type > 0 && type < KERNEL.length) {
            return KERNEL[type];
        }
        if (type >= USER_TYPE_START && type - USER_TYPE_START < USER.length) {
            return USER[type - USER_TYPE_START];
        }
        return "UNKNOWN_" + type;
    }

    public static boolean isKernelType(int type) {
        return type < USER_TYPE_START;
    }
}
