package ptfence.sys;

import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.SaveError;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The bpf(2) system call, typed: one method per command this project uses. Attribute unions, pointers and
 * native buffers stay in here; callers pass and get Java arrays. Every failure is a {@link BpfException} that
 * names the command and the errno (and carries the verifier log for a refused program).
 */
public final class Bpf {
    // x86-64 syscall number and the bpf_cmd values (uapi, never renumbered).
    private static final long NR_BPF = 321;
    private static final int MAP_CREATE = 0, MAP_LOOKUP_ELEM = 1, MAP_UPDATE_ELEM = 2, PROG_LOAD = 5,
            PROG_TEST_RUN = 10, PROG_GET_NEXT_ID = 11, PROG_GET_FD_BY_ID = 13, OBJ_GET_INFO_BY_FD = 15,
            RAW_TRACEPOINT_OPEN = 17, BTF_LOAD = 18, BTF_GET_FD_BY_ID = 19, LINK_CREATE = 28, LINK_UPDATE = 29,
            ENABLE_STATS = 32, OBJ_GET = 7, MAP_GET_FD_BY_ID = 14, LINK_GET_FD_BY_ID = 30, LINK_GET_NEXT_ID = 31;
    /** sizeof(union bpf_attr) in the newest uapi; the kernel accepts a larger zero-tailed attr. */
    private static final int ATTR_SIZE = 168;
    private static final int ENOENT = 2;

    public static final int PROG_TYPE_SOCKET_FILTER = 1, PROG_TYPE_TRACEPOINT = 5, PROG_TYPE_XDP = 6,
            PROG_TYPE_RAW_TRACEPOINT = 17;
    public static final int ATTACH_XDP = 37, ATTACH_PERF_EVENT = 41;
    public static final int MAP_TYPE_ARRAY = 2, MAP_TYPE_PROG_ARRAY = 3, MAP_TYPE_PERF_EVENT_ARRAY = 4,
            MAP_TYPE_PERCPU_ARRAY = 6, MAP_TYPE_LRU_HASH = 9, MAP_TYPE_RINGBUF = 27;
    public static final int PROG_TYPE_PERF_EVENT = 7;

    public interface LibC {
        @SaveError long syscall(long number, long cmd, Pointer attr, long size);
        @SaveError int close(int fd);
    }

    private static volatile Bpf instance;

    private final LibC libc;
    private final Runtime runtime;

    private Bpf() {
        libc = LibraryLoader.create(LibC.class).load("c");
        runtime = Runtime.getRuntime(libc);
    }

    public static Bpf get() {
        Bpf b = instance;
        if (b == null) {
            synchronized (Bpf.class) {
                if (instance == null) instance = new Bpf();
                b = instance;
            }
        }
        return b;
    }

    /**
     * What to load: program type, instructions (8 bytes each), license, name (at most 15 chars kept), and
     * optionally program BTF with func_info records ({u32 insn_off, u32 type_id} each) and line_info records
     * (struct bpf_line_info {u32 insn_off, file_name_off, line_off, line_col}, 16 bytes each).
     */
    public record ProgLoad(int progType, byte[] insns, String license, String name, int expectedAttachType,
                           int attachBtfId, BpfFd progBtf, byte[] funcInfo, byte[] lineInfo) {
        public ProgLoad(int progType, byte[] insns, String license, String name, int expectedAttachType,
                        int attachBtfId) {
            this(progType, insns, license, name, expectedAttachType, attachBtfId, null, new byte[0], new byte[0]);
        }

        public ProgLoad(int progType, byte[] insns, String license, String name, int expectedAttachType,
                        int attachBtfId, BpfFd progBtf, byte[] funcInfo) {
            this(progType, insns, license, name, expectedAttachType, attachBtfId, progBtf, funcInfo, new byte[0]);
        }

        public ProgLoad(int progType, byte[] insns, String name) {
            this(progType, insns, "GPL", name, 0, 0);
        }
    }

    /**
     * BPF_PROG_LOAD. The first attempt runs without a verifier log (loads are hot in churn tests); a refusal is
     * retried once with log level 1 so that the exception carries the verifier's reason.
     */
    public BpfFd progLoad(ProgLoad p) throws BpfException {
        try {
            return progLoad(p, 0);
        } catch (BpfException e) {
            if (e.errno() == 1 /* EPERM before the verifier: no log to get */) throw e;
            return progLoad(p, 1);
        }
    }

    private BpfFd progLoad(ProgLoad p, int logLevel) throws BpfException {
        if (p.insns().length % 8 != 0) throw new IllegalArgumentException("insns not a multiple of 8 bytes");
        Pointer insns = bytes(p.insns());
        Pointer license = cString(p.license());
        int logSize = logLevel == 0 ? 0 : 16 << 20;
        Pointer log = logLevel == 0 ? null : Memory.allocateDirect(runtime, logSize, true);
        Pointer attr = attr();
        attr.putInt(0, p.progType());
        attr.putInt(4, p.insns().length / 8);
        attr.putLong(8, insns.address());
        attr.putLong(16, license.address());
        attr.putInt(24, logLevel);
        attr.putInt(28, logSize);
        attr.putLong(32, log == null ? 0 : log.address());
        putName(attr, 48, p.name());
        attr.putInt(68, p.expectedAttachType());
        Pointer funcInfo = null, lineInfo = null;
        if (p.progBtf() != null) {
            funcInfo = bytes(p.funcInfo());
            attr.putInt(72, p.progBtf().fd());
            attr.putInt(76, 8);                        // func_info_rec_size
            attr.putLong(80, funcInfo.address());
            attr.putInt(88, p.funcInfo().length / 8);  // func_info_cnt
            if (p.lineInfo() != null && p.lineInfo().length > 0) {
                lineInfo = bytes(p.lineInfo());
                attr.putInt(92, 16);                       // line_info_rec_size
                attr.putLong(96, lineInfo.address());
                attr.putInt(104, p.lineInfo().length / 16); // line_info_cnt
            }
        }
        attr.putInt(108, p.attachBtfId());
        long fd = sys(PROG_LOAD, attr, insns, license, funcInfo, lineInfo, log);
        if (fd < 0) {
            int errno = runtime.getLastError();
            String text = log == null ? null : log.getString(0, logSize, StandardCharsets.UTF_8);
            throw new BpfException("bpf(BPF_PROG_LOAD, " + p.name() + ", " + p.insns().length / 8 + " insns)",
                    errno, text);
        }
        return new BpfFd((int) fd, "prog " + p.name());
    }

    /** BPF_BTF_LOAD of a raw BTF blob (program BTF); the kernel's log is in the exception on failure. */
    public BpfFd btfLoad(byte[] btf) throws BpfException {
        Pointer data = bytes(btf);
        int logSize = 1 << 20;
        Pointer log = Memory.allocateDirect(runtime, logSize, true);
        Pointer attr = attr();
        attr.putLong(0, data.address());
        attr.putLong(8, log.address());
        attr.putInt(16, btf.length);
        attr.putInt(20, logSize);
        attr.putInt(24, 1);
        long fd = sys(BTF_LOAD, attr, data, log);
        if (fd < 0) throw new BpfException("bpf(BPF_BTF_LOAD, " + btf.length + " bytes)", runtime.getLastError(),
                log.getString(0, logSize, StandardCharsets.UTF_8));
        return new BpfFd((int) fd, "btf");
    }

    /** BPF_MAP_CREATE. */
    public BpfFd mapCreate(int mapType, int keySize, int valueSize, int maxEntries, int flags, String name)
            throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, mapType);
        attr.putInt(4, keySize);
        attr.putInt(8, valueSize);
        attr.putInt(12, maxEntries);
        attr.putInt(16, flags);
        putName(attr, 28, name);
        long fd = sys(MAP_CREATE, attr);
        if (fd < 0) throw fail("bpf(BPF_MAP_CREATE, " + name + ", type " + mapType + ", " + maxEntries + " entries)");
        return new BpfFd((int) fd, "map " + name);
    }

    /** BPF_MAP_LOOKUP_ELEM into {@code value}; false if the key is absent. */
    public boolean mapLookup(BpfFd map, byte[] key, byte[] value) throws BpfException {
        Pointer k = bytes(key);
        Pointer v = Memory.allocateDirect(runtime, value.length, true);
        Pointer attr = attr();
        attr.putInt(0, map.fd());
        attr.putLong(8, k.address());
        attr.putLong(16, v.address());
        if (sys(MAP_LOOKUP_ELEM, attr, k) < 0) {
            if (runtime.getLastError() == ENOENT) return false;
            throw fail("bpf(BPF_MAP_LOOKUP_ELEM, " + map + ")");
        }
        v.get(0, value, 0, value.length);
        return true;
    }

    /** BPF_MAP_UPDATE_ELEM with BPF_ANY. */
    public void mapUpdate(BpfFd map, byte[] key, byte[] value) throws BpfException {
        Pointer attr = attr();
        Pointer k = bytes(key), v = bytes(value);
        attr.putInt(0, map.fd());
        attr.putLong(8, k.address());
        attr.putLong(16, v.address());
        if (sys(MAP_UPDATE_ELEM, attr, k, v) < 0) throw fail("bpf(BPF_MAP_UPDATE_ELEM, " + map + ")");
    }

    /** BPF_RAW_TRACEPOINT_OPEN: attaches; the returned link fd detaches when closed. */
    public BpfFd rawTracepointOpen(String tracepoint, BpfFd prog) throws BpfException {
        Pointer name = cString(tracepoint);
        Pointer attr = attr();
        attr.putLong(0, name.address());
        attr.putInt(8, prog.fd());
        long fd = sys(RAW_TRACEPOINT_OPEN, attr, name);
        if (fd < 0) throw fail("bpf(BPF_RAW_TRACEPOINT_OPEN, " + tracepoint + ", " + prog + ")");
        return new BpfFd((int) fd, "raw_tp link " + tracepoint);
    }

    /**
     * BPF_RAW_TRACEPOINT_OPEN with no name: attaches a tracing program (fentry/fexit) to the function its load named
     * (5.5+); closing the link detaches.
     */
    public BpfFd tracingAttach(BpfFd prog) throws BpfException {
        Pointer attr = attr();
        attr.putLong(0, 0);
        attr.putInt(8, prog.fd());
        long fd = sys(RAW_TRACEPOINT_OPEN, attr);
        if (fd < 0) throw fail("bpf(BPF_RAW_TRACEPOINT_OPEN, tracing, " + prog + ")");
        return new BpfFd((int) fd, "tracing link " + prog);
    }

    /** BPF_LINK_UPDATE: the link runs {@code newProg} from now on (an XDP link: the dispatcher is rewritten). */
    public void linkUpdate(BpfFd link, BpfFd newProg) throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, link.fd());
        attr.putInt(4, newProg.fd());
        if (sys(LINK_UPDATE, attr) < 0) throw fail("bpf(BPF_LINK_UPDATE, " + link + ", " + newProg + ")");
    }

    /** BPF_LINK_CREATE: attaches {@code prog} to a target fd or ifindex; closing the link detaches. */
    public BpfFd linkCreate(BpfFd prog, int targetFdOrIfindex, int attachType) throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, prog.fd());
        attr.putInt(4, targetFdOrIfindex);
        attr.putInt(8, attachType);
        long fd = sys(LINK_CREATE, attr);
        if (fd < 0) throw fail("bpf(BPF_LINK_CREATE, " + prog + ", target " + targetFdOrIfindex + ", attach type "
                + attachType + ")");
        return new BpfFd((int) fd, "link " + attachType);
    }

    /** BPF_PROG_TEST_RUN with only a context (raw_tp programs): returns the program's return value. */
    public int progTestRun(BpfFd prog, byte[] ctx) throws BpfException {
        Pointer c = bytes(ctx);
        Pointer attr = attr();
        attr.putInt(0, prog.fd());
        attr.putInt(40, ctx.length);
        attr.putLong(48, c.address());
        if (sys(PROG_TEST_RUN, attr, c) < 0) throw fail("bpf(BPF_PROG_TEST_RUN, " + prog + ")");
        return attr.getInt(4);
    }

    /**
     * BPF_PROG_TEST_RUN of a packet program (socket filter, XDP) on {@code data}, {@code repeat} times in the kernel:
     * returns the last run's return value.
     */
    public int progTestRunData(BpfFd prog, byte[] data, int repeat) throws BpfException {
        Pointer d = bytes(data);
        Pointer attr = attr();
        attr.putInt(0, prog.fd());
        attr.putInt(8, data.length);
        attr.putLong(16, d.address());
        attr.putInt(32, repeat);
        if (sys(PROG_TEST_RUN, attr, d) < 0) throw fail("bpf(BPF_PROG_TEST_RUN, " + prog + ", repeat " + repeat + ")");
        return attr.getInt(4);
    }

    /** BPF_MAP_GET_FD_BY_ID: a reference to another loader's map, or null once it is gone (ENOENT). */
    public BpfFd mapGetFdById(int id) throws BpfException {
        return fdById(MAP_GET_FD_BY_ID, "BPF_MAP_GET_FD_BY_ID", "map", id);
    }

    /** BPF_OBJ_GET: the object pinned at {@code path} in a bpf file system. */
    public BpfFd objGet(String path) throws BpfException {
        Pointer name = cString(path);
        Pointer attr = attr();
        attr.putLong(0, name.address());
        long fd = sys(OBJ_GET, attr, name);
        if (fd < 0) throw fail("bpf(BPF_OBJ_GET, " + path + ")");
        return new BpfFd((int) fd, "pinned " + path);
    }

    /** BPF_LINK_GET_NEXT_ID: the next link id after {@code startId}, or -1 when there is none. */
    public int linkGetNextId(int startId) throws BpfException {
        return nextId(LINK_GET_NEXT_ID, "BPF_LINK_GET_NEXT_ID", startId);
    }

    /** BPF_LINK_GET_FD_BY_ID, or null once the link is gone. */
    public BpfFd linkGetFdById(int id) throws BpfException {
        return fdById(LINK_GET_FD_BY_ID, "BPF_LINK_GET_FD_BY_ID", "link", id);
    }

    /** A *_GET_NEXT_ID command: the next id after {@code startId}, or -1 at the end (ENOENT). */
    private int nextId(int cmd, String name, int startId) throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, startId);
        if (sys(cmd, attr) < 0) {
            if (runtime.getLastError() == ENOENT) return -1;
            throw fail("bpf(" + name + ", after " + startId + ")");
        }
        return attr.getInt(4);
    }

    /** A *_GET_FD_BY_ID command: a reference to the object, or null once it is gone (ENOENT). */
    private BpfFd fdById(int cmd, String name, String what, int id) throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, id);
        long fd = sys(cmd, attr);
        if (fd < 0) {
            if (runtime.getLastError() == ENOENT) return null;
            throw fail("bpf(" + name + ", " + id + ")");
        }
        return new BpfFd((int) fd, what + " id " + id);
    }

    /** BPF_PROG_GET_NEXT_ID: the next program id after {@code startId}, or -1 when there is none. */
    public int progGetNextId(int startId) throws BpfException {
        return nextId(PROG_GET_NEXT_ID, "BPF_PROG_GET_NEXT_ID", startId);
    }

    /** BPF_PROG_GET_FD_BY_ID: a reference that keeps the program alive, or null once it is gone (ENOENT). */
    public BpfFd progGetFdById(int id) throws BpfException {
        return fdById(PROG_GET_FD_BY_ID, "BPF_PROG_GET_FD_BY_ID", "prog", id);
    }

    /** BPF_BTF_GET_FD_BY_ID, or null once the BTF object is gone. */
    public BpfFd btfGetFdById(int id) throws BpfException {
        return fdById(BTF_GET_FD_BY_ID, "BPF_BTF_GET_FD_BY_ID", "btf", id);
    }

    /** BPF_ENABLE_STATS(BPF_STATS_RUN_TIME): run time accounting is on while the returned fd is open. */
    public BpfFd enableRunTimeStats() throws BpfException {
        Pointer attr = attr();
        attr.putInt(0, 0);
        long fd = sys(ENABLE_STATS, attr);
        if (fd < 0) throw fail("bpf(BPF_ENABLE_STATS, run_time)");
        return new BpfFd((int) fd, "stats");
    }

    /** An output array of an info struct: the kernel fills {@code buffer} through the pointer at {@code pointerOffset}. */
    public record InfoArray(int pointerOffset, byte[] buffer) {}

    /**
     * BPF_OBJ_GET_INFO_BY_FD. {@code info} goes in as the struct (counts and record sizes set by the caller) and
     * comes back as the kernel wrote it; each {@link InfoArray} gets its pointer set and its bytes filled. The
     * kernel's info_len is returned. The two-call pattern (sizes first, then arrays) belongs to the caller.
     */
    public int objGetInfo(BpfFd obj, byte[] info, List<InfoArray> arrays) throws BpfException {
        Pointer in = bytes(info);
        Pointer[] natives = new Pointer[arrays.size()];
        for (int i = 0; i < natives.length; i++) {
            InfoArray a = arrays.get(i);
            natives[i] = Memory.allocateDirect(runtime, Math.max(1, a.buffer().length), true);
            in.putLong(a.pointerOffset(), a.buffer().length == 0 ? 0 : natives[i].address());
        }
        Pointer attr = attr();
        attr.putInt(0, obj.fd());
        attr.putInt(4, info.length);
        attr.putLong(8, in.address());
        if (sys(OBJ_GET_INFO_BY_FD, attr, in, natives) < 0) throw fail("bpf(BPF_OBJ_GET_INFO_BY_FD, " + obj + ")");
        in.get(0, info, 0, info.length);
        for (int i = 0; i < natives.length; i++) {
            byte[] b = arrays.get(i).buffer();
            natives[i].get(0, b, 0, b.length);
            // The pointer we lent is not the caller's business.
            java.nio.ByteBuffer.wrap(info).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                    .putLong(arrays.get(i).pointerOffset(), 0);
        }
        return attr.getInt(4);
    }

    void closeFd(int fd) {
        libc.close(fd);
    }

    /**
     * The call. Native buffers are freed when their Pointer is collected, and a local whose address went into the
     * attr is dead to the JIT after that: {@code keepAlive} holds them until the kernel is done.
     */
    private long sys(int cmd, Pointer attr, Object... keepAlive) {
        long r = libc.syscall(NR_BPF, cmd, attr, ATTR_SIZE);
        java.lang.ref.Reference.reachabilityFence(keepAlive);
        java.lang.ref.Reference.reachabilityFence(attr);
        return r;
    }

    private BpfException fail(String call) {
        return new BpfException(call, runtime.getLastError(), null);
    }

    private Pointer attr() {
        return Memory.allocateDirect(runtime, ATTR_SIZE, true);
    }

    private Pointer bytes(byte[] b) {
        Pointer p = Memory.allocateDirect(runtime, Math.max(1, b.length), true);
        p.put(0, b, 0, b.length);
        return p;
    }

    private Pointer cString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        Pointer p = Memory.allocateDirect(runtime, b.length + 1, true);
        p.put(0, b, 0, b.length);
        return p;
    }

    private static void putName(Pointer attr, int offset, String name) {
        byte[] b = name.getBytes(StandardCharsets.US_ASCII);
        attr.put(offset, b, 0, Math.min(15, b.length)); // BPF_OBJ_NAME_LEN 16, NUL included
    }

}
