package ptfence.perfdata;

/**
 * A perf_event_attr as perf 6.1's perf_event_attr__fprintf writes it after a header's "# event :" line: each
 * field that is not zero, as ", name = value", in perf's order; bit sets by perf's names for the bits it knows.
 */
final class AttrText {
    private static final String[] SAMPLE_TYPE = {"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU",
        "PERIOD", "STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "IDENTIFIER", "REGS_INTR",
        "DATA_SRC", "WEIGHT", "PHYS_ADDR", "AUX", "CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT"};
    /** The bit of each name above (perf lists them out of bit order). */
    private static final int[] SAMPLE_TYPE_BITS = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 18, 15, 14,
        19, 20, 21, 22, 23, 24};
    private static final String[] BRANCH_TYPE = {"USER", "KERNEL", "HV", "ANY", "ANY_CALL", "ANY_RETURN",
        "IND_CALL", "ABORT_TX", "IN_TX", "NO_TX", "COND", "CALL_STACK", "IND_JUMP", "CALL", "NO_FLAGS", "NO_CYCLES",
        "TYPE_SAVE", "HW_INDEX", "PRIV_SAVE"};
    private static final String[] READ_FORMAT = {"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST"};
    /** The one-bit (and precise_ip's two-bit) fields of the flags word, from bit 0. */
    private static final String[] FLAGS = {"disabled", "inherit", "pinned", "exclusive", "exclude_user",
        "exclude_kernel", "exclude_hv", "exclude_idle", "mmap", "comm", "freq", "inherit_stat", "enable_on_exec",
        "task", "watermark", "precise_ip", null, "mmap_data", "sample_id_all", "exclude_host", "exclude_guest",
        "exclude_callchain_kernel", "exclude_callchain_user", "mmap2", "comm_exec", "use_clockid", "context_switch",
        "write_backward", "namespaces", "ksymbol", "bpf_event", "aux_output", "cgroup", "text_poke", "build_id",
        "inherit_thread", "remove_on_exec", "sigtrap"};

    private AttrText() {
    }

    static void append(StringBuilder sb, EventAttr a) {
        java.nio.ByteBuffer r = a.raw();
        unsigned(sb, "type", Integer.toUnsignedLong(a.type()));
        unsigned(sb, "size", Integer.toUnsignedLong(a.size()));
        hex(sb, "config", a.config());
        unsigned(sb, "{ sample_period, sample_freq }", a.samplePeriod());
        bits(sb, "sample_type", a.sampleType(), SAMPLE_TYPE, SAMPLE_TYPE_BITS);
        bits(sb, "read_format", a.readFormat(), READ_FORMAT, null);
        long flags = a.flags();
        for (int bit = 0; bit < FLAGS.length; bit++) {
            if (FLAGS[bit] != null) {
                long v = bit == 15 ? flags >>> 15 & 3 : flags >>> bit & 1;
                unsigned(sb, FLAGS[bit], v);
            }
        }
        unsigned(sb, "{ wakeup_events, wakeup_watermark }", Integer.toUnsignedLong(a.wakeupEvents()));
        unsigned(sb, "bp_type", Integer.toUnsignedLong(a.bpType()));
        hex(sb, "{ bp_addr, config1 }", a.config1());
        hex(sb, "{ bp_len, config2 }", a.config2());
        bits(sb, "branch_sample_type", a.branchSampleType(), BRANCH_TYPE, null);
        hex(sb, "sample_regs_user", u64(r, 80));
        unsigned(sb, "sample_stack_user", Integer.toUnsignedLong(u32(r, 88)));
        long clockid = u32(r, 92);
        if (clockid != 0) {
            sb.append(", clockid = ").append(clockid);
        }
        hex(sb, "sample_regs_intr", u64(r, 96));
        unsigned(sb, "aux_watermark", Integer.toUnsignedLong(a.auxWatermark()));
        unsigned(sb, "sample_max_stack", Integer.toUnsignedLong(u32(r, 108)) & 0xffff);
        unsigned(sb, "aux_sample_size", Integer.toUnsignedLong(u32(r, 112)));
        unsigned(sb, "sig_data", u64(r, 120));
    }

    private static long u64(java.nio.ByteBuffer r, int off) {
        return off + 8 <= r.limit() ? r.getLong(off) : 0;
    }

    private static int u32(java.nio.ByteBuffer r, int off) {
        return off + 4 <= r.limit() ? r.getInt(off) : 0;
    }

    private static void unsigned(StringBuilder sb, String name, long v) {
        if (v != 0) {
            sb.append(", ").append(name).append(" = ").append(Long.toUnsignedString(v));
        }
    }

    private static void hex(StringBuilder sb, String name, long v) {
        if (v != 0) {
            sb.append(", ").append(name).append(" = 0x").append(Long.toHexString(v));
        }
    }

    /** perf's __p_bits: the names of the set bits it knows, joined by '|' (bits it does not know are left out). */
    private static void bits(StringBuilder sb, String name, long v, String[] names, int[] bitOf) {
        if (v == 0) {
            return;
        }
        sb.append(", ").append(name).append(" = ");
        boolean first = true;
        for (int i = 0; i < names.length; i++) {
            int bit = bitOf != null ? bitOf[i] : i;
            if ((v >>> bit & 1) != 0) {
                sb.append(first ? "" : "|").append(names[i]);
                first = false;
            }
        }
    }
}
