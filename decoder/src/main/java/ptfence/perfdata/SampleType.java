package ptfence.perfdata;

/** perf_event_attr.sample_type bits (include/uapi/linux/perf_event.h). */
public final class SampleType {
    public static final long IP = 1L << 0;
    public static final long TID = 1L << 1;
    public static final long TIME = 1L << 2;
    public static final long ADDR = 1L << 3;
    public static final long READ = 1L << 4;
    public static final long CALLCHAIN = 1L << 5;
    public static final long ID = 1L << 6;
    public static final long CPU = 1L << 7;
    public static final long PERIOD = 1L << 8;
    public static final long STREAM_ID = 1L << 9;
    public static final long RAW = 1L << 10;
    public static final long BRANCH_STACK = 1L << 11;
    public static final long REGS_USER = 1L << 12;
    public static final long STACK_USER = 1L << 13;
    public static final long WEIGHT = 1L << 14;
    public static final long DATA_SRC = 1L << 15;
    public static final long IDENTIFIER = 1L << 16;
    public static final long TRANSACTION = 1L << 17;
    public static final long REGS_INTR = 1L << 18;
    public static final long PHYS_ADDR = 1L << 19;
    public static final long AUX = 1L << 20;
    public static final long CGROUP = 1L << 21;
    public static final long DATA_PAGE_SIZE = 1L << 22;
    public static final long CODE_PAGE_SIZE = 1L << 23;
    public static final long WEIGHT_STRUCT = 1L << 24;

    private SampleType() {}
}
