package ptfence.sideband;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import ptfence.cli.BadInputException;
import ptfence.output.TextSink;

/**
 * One perf_event sideband file being read, record by record (libipt's pevent format: perf_event records, each
 * followed by the sample_id fields its sample_type selects). The current record's fields are kept in place,
 * so reading allocates nothing but the strings of MMAP/COMM records.
 */
final class PeventStream {
    static final String EOS = "reached end of trace stream";

    static final int PERF_SAMPLE_TID = 1 << 1;
    static final int PERF_SAMPLE_TIME = 1 << 2;
    static final int PERF_SAMPLE_ID = 1 << 6;
    static final int PERF_SAMPLE_CPU = 1 << 7;
    static final int PERF_SAMPLE_STREAM_ID = 1 << 9;
    static final int PERF_SAMPLE_IDENTIFIER = 1 << 16;
    static final int MISC_COMM_EXEC = 1 << 13;
    static final int MISC_SWITCH_OUT = 1 << 13;

    final String name;
    final ByteBuffer b;
    final PeventDump.Config config;
    int next;
    int current;
    long tsc;

    int type;
    int misc;
    int recordStart;
    int recordEnd;
    String text;
    boolean hasTid;
    boolean hasTime;
    boolean hasId;
    boolean hasCpu;
    boolean hasStreamId;
    boolean hasIdentifier;
    long pid;
    long tid;
    long time;
    long sampleTsc;
    long id;
    long cpu;
    long streamId;
    long identifier;

    PeventStream(String name, ByteBuffer b, PeventDump.Config config) {
        this.name = name;
        this.b = b;
        this.config = config;
    }

    long u32(int off) {
        return b.getInt(recordStart + off) & 0xffffffffL;
    }

    long u64(int off) {
        return b.getLong(recordStart + off);
    }

    /** Parses the record at {@code next}; null if fine, else libipt's error text. */
    String read() {
        int begin = next;
        int end = b.limit();
        if (end - begin < 8) {
            return EOS;
        }
        int rtype = b.getInt(begin);
        int rmisc = b.getShort(begin + 4) & 0xffff;
        int rsize = b.getShort(begin + 6) & 0xffff;
        if (rsize < 8) {
            return "decoder out of sync";
        }
        if (rtype == 0 || end - begin < rsize) {
            return EOS;
        }
        int rend = begin + rsize;
        type = rtype;
        misc = rmisc;
        recordStart = begin + 8;
        recordEnd = rend;
        text = null;
        hasTid = hasTime = hasId = hasCpu = hasStreamId = hasIdentifier = false;
        int pos = begin + 8;
        switch (rtype) {
            case 1: // MMAP
            case 3: // COMM
            case 10: { // MMAP2
                int fixed = rtype == 1 ? 32 : rtype == 3 ? 8 : 64;
                int s = pos + fixed;
                if (s > rend) {
                    return "internal error";
                }
                int z = s;
                while (z < rend && b.get(z) != 0) {
                    z++;
                }
                if (z >= rend) {
                    return "unknown packet";
                }
                byte[] str = new byte[z - s];
                b.get(s, str);
                text = new String(str, StandardCharsets.ISO_8859_1);
                int slen = (z - s + 1 + 7) & ~7;
                pos = s + slen;
                break;
            }
            case 2: // LOST
                pos += 16;
                break;
            case 4: // EXIT
            case 7: // FORK
            case 5: // THROTTLE
            case 6: // UNTHROTTLE
            case 11: // AUX
                pos += 24;
                break;
            case 12: // ITRACE_START
            case 13: // LOST_SAMPLES
            case 15: // SWITCH_CPU_WIDE
                pos += 8;
                break;
            case 14: // SWITCH
                break;
            default:
                next = rend;
                return null;
        }
        long sampleType = config.sampleType();
        if (!config.sampleConfig().isEmpty() && rend - 8 >= pos) {
            long ident = b.getLong(rend - 8);
            for (long[] sc : config.sampleConfig()) {
                if (sc[0] == ident) {
                    if ((sc[1] & PERF_SAMPLE_IDENTIFIER) == 0) {
                        return "bad configuration";
                    }
                    sampleType = sc[1];
                    break;
                }
            }
        }
        if ((sampleType & PERF_SAMPLE_TID) != 0) {
            if (pos + 8 <= rend) {
                pid = b.getInt(pos) & 0xffffffffL;
                tid = b.getInt(pos + 4) & 0xffffffffL;
            }
            hasTid = true;
            pos += 8;
        }
        if ((sampleType & PERF_SAMPLE_TIME) != 0) {
            if (pos + 8 > rend) {
                return "decoder out of sync";
            }
            time = b.getLong(pos);
            hasTime = true;
            pos += 8;
            String e = timeToTsc(time);
            if (e != null) {
                return e;
            }
        }
        if ((sampleType & PERF_SAMPLE_ID) != 0) {
            id = pos + 8 <= rend ? b.getLong(pos) : 0;
            hasId = true;
            pos += 8;
        }
        if ((sampleType & PERF_SAMPLE_STREAM_ID) != 0) {
            streamId = pos + 8 <= rend ? b.getLong(pos) : 0;
            hasStreamId = true;
            pos += 8;
        }
        if ((sampleType & PERF_SAMPLE_CPU) != 0) {
            cpu = pos + 4 <= rend ? b.getInt(pos) & 0xffffffffL : 0;
            hasCpu = true;
            pos += 8;
        }
        if ((sampleType & PERF_SAMPLE_IDENTIFIER) != 0) {
            identifier = pos + 8 <= rend ? b.getLong(pos) : 0;
            hasIdentifier = true;
            pos += 8;
        }
        if (pos != rend) {
            return "decoder out of sync";
        }
        next = rend;
        return null;
    }

    private String timeToTsc(long t) {
        if (t == 0) {
            sampleTsc = 0;
            return null;
        }
        long mult = config.timeMult() & 0xffffffffL;
        if (mult == 0) {
            return "bad configuration";
        }
        long x = t - config.timeZero();
        long quot = Long.divideUnsigned(x, mult);
        long rem = Long.remainderUnsigned(x, mult);
        int shift = config.timeShift();
        quot = shift >= 64 ? 0 : quot << shift;
        rem = shift >= 64 ? 0 : rem << shift;
        rem = Long.divideUnsigned(rem, mult);
        sampleTsc = quot + rem;
        return null;
    }

    void printRecord(TextSink o, int flags) {
        boolean c = (flags & PeventDump.COMPACT) != 0;
        boolean v = (flags & PeventDump.VERBOSE) != 0;
        switch (type) {
            case 1:
                if (c) {
                    o.str("PERF_RECORD_MMAP  ").hex(u32(0)).ch('/').hex(u32(4)).str(", ").hex(u64(8)).str(", ")
                            .hex(u64(16)).str(", ").hex(u64(24)).str(", ").str(text);
                }
                if (v) {
                    o.str("PERF_RECORD_MMAP").str("\n  pid: ").hex(u32(0)).str("\n  tid: ").hex(u32(4))
                            .str("\n  addr: ").hex(u64(8)).str("\n  len: ").hex(u64(16)).str("\n  pgoff: ")
                            .hex(u64(24)).str("\n  filename: ").str(text);
                }
                break;
            case 2:
                if (c) {
                    o.str("PERF_RECORD_LOST  ").hex(u64(0)).str(", ").hex(u64(8));
                }
                if (v) {
                    o.str("PERF_RECORD_LOST").str("\n  id: ").hex(u64(0)).str("\n  lost: ").hex(u64(8));
                }
                break;
            case 3: {
                String sfx = (misc & MISC_COMM_EXEC) != 0 ? ".EXEC" : "";
                if (c) {
                    o.str("PERF_RECORD_COMM").str(sfx).str("  ").hex(u32(0)).ch('/').hex(u32(4)).str(", ").str(text);
                }
                if (v) {
                    o.str("PERF_RECORD_COMM").str(sfx).str("\n  pid: ").hex(u32(0)).str("\n  tid: ").hex(u32(4))
                            .str("\n  comm: ").str(text);
                }
                break;
            }
            case 4:
            case 7: {
                String n = type == 4 ? "PERF_RECORD_EXIT" : "PERF_RECORD_FORK";
                if (c) {
                    o.str(n).str("  ").hex(u32(0)).ch('/').hex(u32(8)).str(", ").hex(u32(4)).ch('/').hex(u32(12))
                            .str(", ").hex(u64(16));
                }
                if (v) {
                    o.str(n).str("\n  pid: ").hex(u32(0)).str("\n  ppid: ").hex(u32(4)).str("\n  tid: ")
                            .hex(u32(8)).str("\n  ptid: ").hex(u32(12)).str("\n  time: ").hex(u64(16));
                }
                break;
            }
            case 5:
            case 6: {
                String n = type == 5 ? "PERF_RECORD_THROTTLE" : "PERF_RECORD_UNTHROTTLE";
                if (c) {
                    o.str(n).str("  ").hex(u64(0)).str(", ").hex(u64(8)).str(", ").hex(u64(16));
                }
                if (v) {
                    o.str(n).str("\n  time: ").hex(u64(0)).str("\n  id: ").hex(u64(8)).str("\n  stream_id: ")
                            .hex(u64(16));
                }
                break;
            }
            case 10:
                if (c) {
                    o.str("PERF_RECORD_MMAP2  ").hex(u32(0)).ch('/').hex(u32(4)).str(", ").hex(u64(8)).str(", ")
                            .hex(u64(16)).str(", ").hex(u64(24)).str(", ").hex(u32(32)).str(", ").hex(u32(36))
                            .str(", ").hex(u64(40)).str(", ").hex(u64(48)).str(", ").hex(u32(56)).str(", ")
                            .hex(u32(60)).str(", ").str(text);
                }
                if (v) {
                    o.str("PERF_RECORD_MMAP2").str("\n  pid: ").hex(u32(0)).str("\n  tid: ").hex(u32(4))
                            .str("\n  addr: ").hex(u64(8)).str("\n  len: ").hex(u64(16)).str("\n  pgoff: ")
                            .hex(u64(24)).str("\n  maj: ").hex(u32(32)).str("\n  min: ").hex(u32(36))
                            .str("\n  ino: ").hex(u64(40)).str("\n  ino_generation: ").hex(u64(48))
                            .str("\n  prot: ").hex(u32(56)).str("\n  flags: ").hex(u32(60))
                            .str("\n  filename: ").str(text);
                }
                break;
            case 11: {
                String sfx = (u64(16) & 1) != 0 ? ".TRUNCATED" : "";
                if (c) {
                    o.str("PERF_RECORD_AUX").str(sfx).str("  ").hex(u64(0)).str(", ").hex(u64(8)).str(", ")
                            .hex(u64(16));
                }
                if (v) {
                    o.str("PERF_RECORD_AUX").str(sfx).str("\n  aux offset: ").hex(u64(0)).str("\n  aux size: ")
                            .hex(u64(8)).str("\n  flags: ").hex(u64(16));
                }
                break;
            }
            case 12:
                if (c) {
                    o.str("PERF_RECORD_ITRACE_START  ").hex(u32(0)).ch('/').hex(u32(4));
                }
                if (v) {
                    o.str("PERF_RECORD_ITRACE_START").str("\n  pid: ").hex(u32(0)).str("\n  tid: ").hex(u32(4));
                }
                break;
            case 13:
                if (c) {
                    o.str("PERF_RECORD_LOST_SAMPLES  ").hex(u64(0));
                }
                if (v) {
                    o.str("PERF_RECORD_LOST_SAMPLES").str("\n  lost: ").hex(u64(0));
                }
                break;
            case 14:
                if (c || v) {
                    o.str("PERF_RECORD_SWITCH.").str((misc & MISC_SWITCH_OUT) != 0 ? "OUT" : "IN");
                }
                break;
            case 15: {
                boolean out = (misc & MISC_SWITCH_OUT) != 0;
                String sfx = out ? "OUT" : "IN";
                String pfx = out ? "next" : "prev";
                if (c) {
                    o.str("PERF_RECORD_SWITCH_CPU_WIDE.").str(sfx).str("  ").hex(u32(0)).ch('/').hex(u32(4));
                }
                if (v) {
                    o.str("PERF_RECORD_SWITCH_CPU_WIDE.").str(sfx).str("\n  ").str(pfx).str(" pid: ").hex(u32(0))
                            .str("\n  ").str(pfx).str(" tid: ").hex(u32(4));
                }
                break;
            }
            default:
                if (c) {
                    o.str("UNKNOWN (").hex(type & 0xffffffffL).str(", ").hex(misc).ch(')');
                }
                if (v) {
                    o.str("UNKNOWN").str("\n  type: ").hex(type & 0xffffffffL).str("\n  misc: ").hex(misc);
                }
                break;
        }
    }

    /**
     * Reads the next record and computes its trace time (the sample time converted to TSC, moved
     * {@code --pevent:tsc-offset} earlier without wrapping); 0 for records without a time, which apply at once.
     * Returns null, {@link #EOS} at the end, or libipt's text of the error.
     */
    String advance() {
        current = next;
        String err = read();
        if (err != null) {
            return err;
        }
        if (!hasTime) {
            tsc = 0;
            return null;
        }
        long offset = config.tscOffset();
        long t = sampleTsc;
        if (Long.compareUnsigned(offset, t) <= 0) {
            t -= offset;
        } else if (offset >= 0) {
            t = 0;
        } else if (Long.compareUnsigned(t, offset) <= 0) {
            t -= offset;
        } else {
            t = -1L;
        }
        sampleTsc = t;
        tsc = t;
        return null;
    }

    /**
     * Opens a sideband file; {@code spec} may carry ptdump's {@code :from[-to]} range, and a relative file
     * name is looked up in {@code dir}. The stream is named {@code spec}'s file part, as given.
     *
     * @throws BadInputException if the file cannot be read
     */
    static PeventStream open(String spec, PeventDump.Config config, Path dir) {
        String file = spec;
        long from = 0;
        long to = 0;
        int colon = spec.lastIndexOf(':');
        if (colon >= 0) {
            ptfence.packet.TraceSource.Range r = ptfence.packet.TraceSource.Range.parse(spec);
            if (!r.file().equals(spec)) {
                file = r.file();
                from = r.from();
                to = r.to() < 0 ? 0 : r.to();
            }
        }
        byte[] all;
        try {
            all = ptfence.cli.Inputs.readAllBytes(dir.resolve(file));
        } catch (NoSuchFileException e) {
            throw new BadInputException("error loading " + file + ": bad file (no such file)");
        } catch (IOException e) {
            throw new BadInputException("error loading " + file + ": bad file (" + e.getMessage() + ")");
        }
        long end = to == 0 ? all.length : Math.min(to, all.length);
        if (from > end) {
            throw new BadInputException("error loading " + file + ": bad file (offset 0x" + Long.toHexString(from)
                    + " outside the file)");
        }
        ByteBuffer b = ByteBuffer.wrap(all, (int) from, (int) (end - from)).slice().order(ByteOrder.LITTLE_ENDIAN);
        return new PeventStream(file, b, config);
    }

    /** Prints the current record the way libipt's sideband dump does for {@code flags} (PeventDump.COMPACT, ...). */
    void print(TextSink out, int flags) {
        if (flags == 0) {
            return;
        }
        switch (flags & (PeventDump.FILENAME | PeventDump.FILE_OFFSET)) {
            case PeventDump.FILENAME | PeventDump.FILE_OFFSET:
                out.str(name).ch(':').hex16(current).str("  ");
                break;
            case PeventDump.FILENAME:
                out.str(name).str("  ");
                break;
            case PeventDump.FILE_OFFSET:
                out.hex16(current).str("  ");
                break;
            default:
                break;
        }
        if ((flags & PeventDump.TSC) != 0 && hasTime) {
            out.hex16(sampleTsc).str("  ");
        }
        printRecord(out, flags);
        if ((flags & PeventDump.COMPACT) != 0) {
            out.str("  {");
            if (hasTid) {
                out.ch(' ').hex(pid).ch('/').hex(tid);
            }
            if (hasTime) {
                out.ch(' ').hex(time);
            }
            if (hasId) {
                out.ch(' ').hex(id);
            }
            if (hasCpu) {
                out.str(" cpu-").hex(cpu);
            }
            if (hasStreamId) {
                out.ch(' ').hex(streamId);
            }
            if (hasIdentifier) {
                out.ch(' ').hex(identifier);
            }
            out.str(" }");
        }
        if ((flags & PeventDump.VERBOSE) != 0) {
            if (hasTid) {
                out.str("\n  pid: ").hex(pid).str("\n  tid: ").hex(tid);
            }
            if (hasTime) {
                out.str("\n  time: ").hex(time);
            }
            if (hasId) {
                out.str("\n  id: ").hex(id);
            }
            if (hasCpu) {
                out.str("\n  cpu: ").hex(cpu);
            }
            if (hasStreamId) {
                out.str("\n  stream id: ").hex(streamId);
            }
            if (hasIdentifier) {
                out.str("\n  identifier: ").hex(identifier);
            }
        }
        out.nl();
    }
}
