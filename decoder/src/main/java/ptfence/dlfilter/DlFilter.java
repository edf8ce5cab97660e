package ptfence.dlfilter;

import com.kenai.jffi.CallContext;
import com.kenai.jffi.CallingConvention;
import com.kenai.jffi.Closure;
import com.kenai.jffi.ClosureManager;
import com.kenai.jffi.Invoker;
import com.kenai.jffi.Library;
import com.kenai.jffi.MemoryIO;
import com.kenai.jffi.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import ptfence.cli.BadInputException;

/**
 * perf script's {@code --dlfilter}: a shared object built against perf's {@code perf_dlfilter.h} ABI, loaded and
 * called as perf 6.1 calls it. The one facade over that native interface (jffi, the layer jnr-ffi stands on: it
 * has dlsym, which the filter's optional entry points and its {@code perf_dlfilter_fns} table need); nothing above
 * sees an address.
 *
 * <p>perf's calls: {@code start(&data, ctx)} once before the first sample, {@code filter_event_early} and
 * {@code filter_event} per sample (0 keeps it, 1 drops it, negative stops perf script with an error), {@code
 * stop(data, ctx)} at the end; before {@code start} perf copies its callback table into the filter's global {@code
 * perf_dlfilter_fns}. Callbacks given: resolve_ip, resolve_addr, args (the --dlarg values), resolve_address, insn
 * (the sample's instruction bytes where the line has them); srcline, attr and object_code answer "none" (NULL, -1).
 *
 * <p>A filter may print (perf-intel-pt's dlfilter-show-cycles.so prints cycle counts ahead of perf's line): the C
 * library's {@code stdout} points at a memory stream during each call, and what was printed goes ahead of the
 * sample's own line, where perf's shared stdout puts it.
 *
 * <p>Calls are serialized (the filter's {@code data} is one state, as under perf's single thread).
 */
public final class DlFilter implements AutoCloseable {
    // struct perf_dlfilter_sample (x86-64, perf 6.1, with machine_pid and vcpu): offsets of the fields set here
    static final int S_SIZE = 0, S_IP = 8, S_PID = 16, S_TID = 20, S_TIME = 24, S_ADDR = 32, S_ID = 40, S_PERIOD = 56,
            S_INSN_CNT = 80, S_CYC_CNT = 88, S_CPU = 96, S_FLAGS = 100, S_CPUMODE = 144, S_ADDR_SYM = 145,
            S_MISC = 146, S_EVENT = 192, S_MACHINE_PID = 200, S_VCPU = 204, SAMPLE_SIZE = 208;
    // struct perf_dlfilter_al
    static final int A_SIZE = 0, A_SYMOFF = 4, A_SYM = 8, A_ADDR = 16, A_SYM_START = 24, A_SYM_END = 32, A_DSO = 40,
            A_BINDING = 48, A_IS64 = 49, A_KERNEL = 50, A_BUILDID_SIZE = 52, A_BUILDID = 56, A_FILTERED = 64,
            A_COMM = 72, AL_SIZE = 80;
    /** struct perf_dlfilter_fns: 8 callbacks and 120 reserved pointers. */
    static final int FNS_SIZE = 128 * 8;

    /**
     * One sample as perf gives it to the filter; filled where the sample is made and kept with its line until the
     * line's turn to be printed (ptfence.script.DlFilterCalls), then reused.
     */
    public static final class Sample {
        public long ip;
        public long addr;
        public int pid;
        public int tid;
        public long time;
        public int cpu;
        public int flags;
        public long period;
        public String event;
        public boolean addrCorrelatesSym;
        public String comm;
        /** The instruction's bytes (a copy: the sample outlives the decoder's buffer), insnLen of them. */
        public final byte[] insn = new byte[16];
        public int insnLen;
        /** perf's IPC counts of the sample (0: none). */
        public long insnCnt;
        public long cycCnt;
        /** Symbol lookup for resolve_ip/resolve_addr/resolve_address: null where no symbol covers it. */
        public Resolver resolver;

        /** Copies the instruction's bytes ({@code src} null or {@code len} 0: none). */
        public void insn(byte[] src, int len) {
            insnLen = src == null ? 0 : Math.max(0, Math.min(len, insn.length));
            if (insnLen > 0) {
                System.arraycopy(src, 0, insn, 0, insnLen);
            }
        }
    }

    /** What perf's addr_location says about an address. */
    public record Location(String sym, long symStart, long symEnd, String dso, long mapAddr) {
    }

    public interface Resolver {
        Location at(long address);
    }

    private static final MemoryIO MEM = MemoryIO.getInstance();
    private static final Invoker CALL = Invoker.getInstance();
    private static final CallContext INT_PPP = CallContext.getCallContext(Type.SINT,
            new Type[] {Type.POINTER, Type.POINTER, Type.POINTER}, CallingConvention.DEFAULT, false);
    private static final CallContext INT_PP = CallContext.getCallContext(Type.SINT,
            new Type[] {Type.POINTER, Type.POINTER}, CallingConvention.DEFAULT, false);
    private static final CallContext INT_P = CallContext.getCallContext(Type.SINT, new Type[] {Type.POINTER},
            CallingConvention.DEFAULT, false);
    private static final CallContext LONG_PP = CallContext.getCallContext(Type.POINTER,
            new Type[] {Type.POINTER, Type.POINTER}, CallingConvention.DEFAULT, false);
    private static final CallContext INT_PLI = CallContext.getCallContext(Type.SINT,
            new Type[] {Type.POINTER, Type.SINT64, Type.SINT}, CallingConvention.DEFAULT, false);

    private final String name;
    private final Library lib;
    private final long start;
    private final long stop;
    private final long filterEvent;
    private final long filterEventEarly;
    private final List<String> args;
    private final Object lock = new Object();
    private final Map<String, Long> strings = new HashMap<>();
    private final List<Closure.Handle> closures = new java.util.ArrayList<>();
    private final long sample = MEM.allocateMemory(SAMPLE_SIZE, true);
    private final long alIp = MEM.allocateMemory(AL_SIZE, true);
    private final long alAddr = MEM.allocateMemory(AL_SIZE, true);
    private final long dataPtr = MEM.allocateMemory(8, true);
    private final long ctx = MEM.allocateMemory(8, true); // perf's ctx: opaque to the filter
    private final long insnBuf = MEM.allocateMemory(16, true);
    private long argv;
    private final Capture capture;
    private Sample current;
    private boolean started;

    private DlFilter(String name, Library lib, List<String> args) {
        this.name = name;
        this.lib = lib;
        this.args = List.copyOf(args);
        this.start = lib.getSymbolAddress("start");
        this.stop = lib.getSymbolAddress("stop");
        this.filterEvent = lib.getSymbolAddress("filter_event");
        this.filterEventEarly = lib.getSymbolAddress("filter_event_early");
        this.capture = Capture.open();
        long fns = lib.getSymbolAddress("perf_dlfilter_fns");
        if (fns != 0) {
            MEM.setMemory(fns, FNS_SIZE, (byte) 0);
            MEM.putAddress(fns, closure(b -> b.setAddressReturn(resolve(current == null ? 0 : current.ip, alIp, true)),
                    Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 8, closure(b -> b.setAddressReturn(current != null && current.addrCorrelatesSym
                    ? resolve(current.addr, alAddr, false) : 0), Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 16, closure(b -> {
                long countPtr = b.getAddress(1);
                if (countPtr != 0) {
                    MEM.putInt(countPtr, this.args.size());
                }
                b.setAddressReturn(argv());
            }, Type.POINTER, Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 24, closure(b -> b.setIntReturn(resolveAddress(b.getLong(1), b.getAddress(2))),
                    Type.SINT, Type.POINTER, Type.UINT64, Type.POINTER));
            MEM.putAddress(fns + 32, closure(b -> b.setAddressReturn(insn(b.getAddress(1))), Type.POINTER,
                    Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 40, closure(b -> {
                long line = b.getAddress(1);
                if (line != 0) {
                    MEM.putInt(line, 0);
                }
                b.setAddressReturn(0);
            }, Type.POINTER, Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 48, closure(b -> b.setAddressReturn(0), Type.POINTER, Type.POINTER));
            MEM.putAddress(fns + 56, closure(b -> b.setIntReturn(-1), Type.SINT, Type.POINTER, Type.UINT64,
                    Type.POINTER, Type.UINT32));
        }
    }

    /**
     * Loads the filter as perf finds it: a path, or a bare name looked up here, then in perf's dlfilters directories
     * ($PERF_EXEC_PATH/dlfilters, /usr/lib/perf-core/dlfilters, /usr/libexec/perf-core/dlfilters).
     */
    public static DlFilter load(String file, List<String> args) {
        Path p = find(file);
        // a copy per load: dlopen gives one instance per path and process, and a filter's static state (perf's
        // dlfilter-show-cycles counts per CPU) must start fresh for each run, as in perf's one-shot process
        Path copy;
        try {
            copy = Files.createTempFile("ptdecode-dlfilter", ".so");
            Files.copy(p, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (java.io.IOException e) {
            throw new BadInputException("--dlfilter " + file + ": " + e.getMessage());
        }
        Library lib;
        try {
            lib = Library.openLibrary(copy.toString(), Library.NOW | Library.LOCAL);
        } finally {
            try {
                Files.deleteIfExists(copy); // the mapping stays
            } catch (java.io.IOException e) {
                // left in the temporary directory
            }
        }
        if (lib == null) {
            throw new BadInputException("--dlfilter " + file + ": dlopen failed: " + Library.getLastError());
        }
        DlFilter f = new DlFilter(file, lib, args);
        if (f.filterEvent == 0 && f.filterEventEarly == 0) {
            // perf accepts such a filter and calls nothing per sample; say so, it is almost surely a wrong file
            System.err.println("ptdecode: --dlfilter " + file + ": neither filter_event nor filter_event_early "
                    + "is defined: every sample is kept");
        }
        return f;
    }

    private static final CallContext PTR_P = CallContext.getCallContext(Type.POINTER, new Type[] {Type.POINTER},
            CallingConvention.DEFAULT, false);

    /**
     * What perf's --list-dlfilters says of {@code file}: its filter_description's short and long text (null where it
     * has none), or null where it is no filter (no dlopen, or neither filter_event nor filter_event_early).
     */
    public static String[] describe(Path file) {
        Library lib = Library.openLibrary(file.toString(), Library.NOW | Library.LOCAL);
        if (lib == null || lib.getSymbolAddress("filter_event") == 0
                && lib.getSymbolAddress("filter_event_early") == 0) {
            return null;
        }
        long fn = lib.getSymbolAddress("filter_description");
        if (fn == 0) {
            return new String[] {null, null};
        }
        long longOut = MEM.allocateMemory(8, true);
        try {
            long desc = CALL.invokeN1(PTR_P, fn, longOut);
            long longDesc = MEM.getAddress(longOut);
            return new String[] {cString(desc), cString(longDesc)};
        } finally {
            MEM.freeMemory(longOut);
        }
    }

    private static String cString(long address) {
        if (address == 0) {
            return null;
        }
        byte[] b = MEM.getZeroTerminatedByteArray(address);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    static Path find(String file) {
        Path p = Path.of(file);
        if (file.contains("/") || Files.isRegularFile(p)) {
            if (!Files.isRegularFile(p)) {
                throw new BadInputException("--dlfilter " + file + ": no such file");
            }
            return p;
        }
        String exec = System.getenv("PERF_EXEC_PATH");
        for (String dir : new String[] {exec == null ? null : exec + "/dlfilters", "/usr/lib/perf-core/dlfilters",
            "/usr/libexec/perf-core/dlfilters"}) {
            if (dir != null && Files.isRegularFile(Path.of(dir, file))) {
                return Path.of(dir, file);
            }
        }
        throw new BadInputException("--dlfilter " + file + ": no such file (here or in perf's dlfilters directory)");
    }

    /** perf's start(): before the first sample; what it prints goes to {@code out}. A negative return stops. */
    public void start(java.io.OutputStream out) throws java.io.IOException {
        synchronized (lock) {
            started = true;
            if (start == 0) {
                return;
            }
            int r = (int) capture.around(() -> CALL.invokeN2(INT_PP, start, dataPtr, ctx));
            out.write(capture.take());
            if (r < 0) {
                throw new BadInputException("--dlfilter " + name + ": start failed (" + r + ")");
            }
        }
    }

    /**
     * Whether the sample is kept: filter_event_early, then filter_event (perf's internal filters, which ran before
     * the call here, sit between the two in perf; both see the same sample). What the filter printed is appended to
     * {@code printed} (ahead of the sample's line).
     */
    public boolean keep(Sample s, java.io.ByteArrayOutputStream printed) {
        synchronized (lock) {
            if (filterEvent == 0 && filterEventEarly == 0) {
                return true;
            }
            current = s;
            try {
                fill(s);
                long data = MEM.getAddress(dataPtr);
                int r = 0;
                if (filterEventEarly != 0) {
                    r = (int) capture.around(() -> CALL.invokeN3(INT_PPP, filterEventEarly, data, sample, ctx));
                }
                if (r == 0 && filterEvent != 0) {
                    r = (int) capture.around(() -> CALL.invokeN3(INT_PPP, filterEvent, data, sample, ctx));
                }
                byte[] out = capture.take();
                printed.write(out, 0, out.length);
                if (r < 0) {
                    throw new BadInputException("--dlfilter " + name + ": filter_event failed (" + r + ")");
                }
                return r == 0;
            } finally {
                current = null;
            }
        }
    }

    /** perf's stop(), after every sample's line; what it prints goes to {@code out}. */
    public void stop(java.io.OutputStream out) throws java.io.IOException {
        synchronized (lock) {
            if (started && stop != 0) {
                long data = MEM.getAddress(dataPtr);
                capture.around(() -> CALL.invokeN2(INT_PP, stop, data, ctx));
                out.write(capture.take());
            }
            started = false;
        }
    }

    /** Without stop() (a failed run): the callbacks and strings stay, the library is never unloaded (as perf). */
    @Override
    public void close() {
        started = false;
    }

    private void fill(Sample s) {
        MEM.putInt(sample + S_SIZE, SAMPLE_SIZE);
        MEM.putLong(sample + S_IP, s.ip);
        MEM.putInt(sample + S_PID, s.pid);
        MEM.putInt(sample + S_TID, s.tid);
        MEM.putLong(sample + S_TIME, Math.max(0, s.time));
        MEM.putLong(sample + S_ADDR, s.addr);
        MEM.putLong(sample + S_PERIOD, s.period);
        MEM.putLong(sample + S_INSN_CNT, s.insnCnt);
        MEM.putLong(sample + S_CYC_CNT, s.cycCnt);
        MEM.putInt(sample + S_CPU, s.cpu);
        MEM.putInt(sample + S_FLAGS, s.flags);
        MEM.putByte(sample + S_CPUMODE, (byte) (kernel(s.ip) ? 1 : 2)); // PERF_RECORD_MISC_KERNEL / _USER
        MEM.putByte(sample + S_ADDR_SYM, (byte) (s.addrCorrelatesSym ? 1 : 0));
        MEM.putShort(sample + S_MISC, (short) (kernel(s.ip) ? 1 : 2));
        MEM.putAddress(sample + S_EVENT, string(s.event));
        MEM.putInt(sample + S_MACHINE_PID, 0);
        MEM.putInt(sample + S_VCPU, 0);
    }

    private static boolean kernel(long ip) {
        return ip < 0; // the upper half of the address space
    }

    /** Fills {@code al} for {@code address} (resolve_ip with the comm and filtered members); its address. */
    private long resolve(long address, long al, boolean ip) {
        if (current == null) {
            return 0;
        }
        MEM.setMemory(al, AL_SIZE, (byte) 0);
        MEM.putInt(al + A_SIZE, AL_SIZE);
        fillAl(al, address, AL_SIZE);
        if (ip) {
            MEM.putByte(al + A_FILTERED, (byte) 0);
            MEM.putAddress(al + A_COMM, string(current.comm));
        }
        return al;
    }

    private void fillAl(long al, long address, int size) {
        Location l = current.resolver == null || address == 0 ? null : current.resolver.at(address);
        MEM.putLong(al + A_ADDR, l == null ? address : l.mapAddr());
        MEM.putByte(al + A_KERNEL, (byte) (kernel(address) ? 1 : 0));
        if (l != null && l.dso() != null) {
            MEM.putAddress(al + A_DSO, string(l.dso()));
            MEM.putByte(al + A_IS64, (byte) 1);
        }
        if (l != null && l.sym() != null) {
            MEM.putAddress(al + A_SYM, string(l.sym()));
            MEM.putInt(al + A_SYMOFF, (int) (address - l.symStart()));
            MEM.putLong(al + A_SYM_START, l.symStart());
            MEM.putLong(al + A_SYM_END, l.symEnd());
            MEM.putByte(al + A_BINDING, (byte) 1); // STB_GLOBAL: the symbol tables here keep no binding
        }
    }

    /** resolve_address(ctx, address, al): al->size must be set by the caller (perf checks it). */
    private int resolveAddress(long address, long al) {
        if (current == null || al == 0) {
            return -1;
        }
        int size = MEM.getInt(al + A_SIZE);
        if (size < A_COMM) {
            return -1;
        }
        long keep = Math.min(size, AL_SIZE);
        MEM.setMemory(al + 4, keep - 4, (byte) 0);
        fillAl(al, address, size);
        return 0;
    }

    private long insn(long lenPtr) {
        Sample s = current;
        if (s == null || s.insnLen <= 0) {
            if (lenPtr != 0) {
                MEM.putInt(lenPtr, 0);
            }
            return 0;
        }
        int n = Math.min(16, s.insnLen);
        MEM.putByteArray(insnBuf, s.insn, 0, n);
        if (lenPtr != 0) {
            MEM.putInt(lenPtr, n);
        }
        return insnBuf;
    }

    private long argv() {
        if (argv == 0) {
            argv = MEM.allocateMemory(8L * (args.size() + 1), true);
            for (int i = 0; i < args.size(); i++) {
                MEM.putAddress(argv + 8L * i, string(args.get(i)));
            }
        }
        return argv;
    }

    /** A NUL-terminated copy of {@code s}, kept for the filter's life (perf's strings live as long). */
    private long string(String s) {
        if (s == null) {
            return 0;
        }
        return strings.computeIfAbsent(s, k -> {
            byte[] b = k.getBytes(StandardCharsets.UTF_8);
            long a = MEM.allocateMemory(b.length + 1, true);
            MEM.putZeroTerminatedByteArray(a, b, 0, b.length);
            return a;
        });
    }

    private long closure(Closure c, Type ret, Type... params) {
        Closure.Handle h = ClosureManager.getInstance().newClosure(c, ret, params, CallingConvention.DEFAULT);
        h.setAutoRelease(false);
        closures.add(h);
        return h.getAddress();
    }

    /**
     * The C library's stdout, pointed at an open_memstream during each call to the filter: what the filter prints
     * comes back as bytes, to go where perf's shared stdout would have put it.
     */
    static final class Capture {
        private final long stdoutVar;
        private final long stream;
        private final long bufPtr;
        private final long sizePtr;
        private final long fflush;
        private final long fseek;

        private Capture(long stdoutVar, long stream, long bufPtr, long sizePtr, long fflush, long fseek) {
            this.stdoutVar = stdoutVar;
            this.stream = stream;
            this.bufPtr = bufPtr;
            this.sizePtr = sizePtr;
            this.fflush = fflush;
            this.fseek = fseek;
        }

        static Capture open() {
            Library c = Library.getDefault();
            long stdoutVar = c.getSymbolAddress("stdout");
            long openMemstream = c.getSymbolAddress("open_memstream");
            long fflush = c.getSymbolAddress("fflush");
            long fseek = c.getSymbolAddress("fseek");
            if (stdoutVar == 0 || openMemstream == 0 || fflush == 0 || fseek == 0) {
                return new Capture(0, 0, 0, 0, 0, 0); // not glibc-like: the filter's prints go to fd 1 as they are
            }
            long bufPtr = MEM.allocateMemory(8, true);
            long sizePtr = MEM.allocateMemory(8, true);
            long stream = CALL.invokeN2(LONG_PP, openMemstream, bufPtr, sizePtr);
            return new Capture(stdoutVar, stream, bufPtr, sizePtr, fflush, fseek);
        }

        long around(java.util.function.LongSupplier call) {
            if (stream == 0) {
                return call.getAsLong();
            }
            long saved = MEM.getAddress(stdoutVar);
            MEM.putAddress(stdoutVar, stream);
            try {
                return call.getAsLong();
            } finally {
                CALL.invokeN1(INT_P, fflush, stream);
                MEM.putAddress(stdoutVar, saved);
            }
        }

        /** The bytes printed since the last take. */
        byte[] take() {
            if (stream == 0) {
                return new byte[0];
            }
            long size = MEM.getLong(sizePtr);
            if (size <= 0) {
                return new byte[0];
            }
            byte[] out = new byte[(int) size];
            MEM.getByteArray(MEM.getAddress(bufPtr), out, 0, out.length);
            CALL.invokeN3(INT_PLI, fseek, stream, 0, 0); // SEEK_SET 0: the next prints start over
            CALL.invokeN1(INT_P, fflush, stream);
            return out;
        }
    }
}
