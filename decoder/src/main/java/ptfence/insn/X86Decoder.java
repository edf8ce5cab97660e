package ptfence.insn;

import capstone.Capstone;

/**
 * Decodes one x86 instruction: capstone gives its length (and text for the text format), a small
 * opcode reader gives what control flow needs (class, op, branch displacement). Capstone costs several
 * microseconds per call through JNA, so callers cache the results per code content ({@link CodeCache}).
 * Not thread-safe; give each thread its own.
 */
public final class X86Decoder {
    /** The longest x86 instruction, in bytes. */
    public static final int MAX_LENGTH = 15;

    static {
        LibraryDirs.forJna(); // before capstone's binding or this class loads capstone through JNA
    }
    private final Capstone[] engines = new Capstone[4];

    /** Result of the last {@link #decode} call. */
    public int length;
    public byte cls;
    public byte op;
    /** Branch displacement for direct branches (target = ip + length + displacement). */
    public int displacement;

    private Capstone engine(int mode) {
        Capstone cs = engines[mode];
        if (cs == null) {
            int csMode = switch (mode) {
                case ExecMode.BITS16 -> Capstone.CS_MODE_16;
                case ExecMode.BITS32 -> Capstone.CS_MODE_32;
                default -> Capstone.CS_MODE_64;
            };
            cs = new Capstone(Capstone.CS_ARCH_X86, csMode);
            if (att) {
                cs.setSyntax(Capstone.CS_OPT_SYNTAX_ATT);
            }
            engines[mode] = cs;
        }
        return cs;
    }

    // ------------------------------------------------------------------ batches through the C API

    /**
     * The capstone C API, bound directly: the Java binding builds objects and strings for every
     * instruction (several microseconds each); a batch call that only reads each cs_insn's size costs a
     * few hundred nanoseconds per instruction.
     */
    interface CapstoneC extends com.sun.jna.Library {
        int cs_open(int arch, int mode, com.sun.jna.ptr.LongByReference handle);
    }

    /**
     * cs_disasm and cs_free by JNA's direct mapping: an interface proxy call goes through reflection and boxing (a
     * first pass over a big binary made ~1,300 batch calls that cost a third of a second that way).
     */
    private static final class DirectC {
        static native long cs_disasm(long handle, byte[] code, long size, long address, long count,
                com.sun.jna.Pointer insn);

        static native void cs_free(com.sun.jna.Pointer insn, long count);

        static {
            com.sun.jna.Native.register(DirectC.class, "capstone");
        }
    }

    /** sizeof(cs_insn) in capstone 4 and the offset of its uint16_t size field. */
    private static final int CS_INSN_SIZE = 240;
    private static final int CS_INSN_SIZE_FIELD = 16;
    private static final int BATCH_WINDOW = 1024;

    private static CapstoneC capstoneC;
    /** cs_open handles per thread and mode (a handle must not be used by two threads at once). */
    private static final ThreadLocal<long[]> HANDLES = ThreadLocal.withInitial(() -> new long[4]);
    /** Where cs_disasm stores its cs_insn array pointer (size_t and pointers are 64 bits on the platforms we run). */
    private final com.sun.jna.Memory insnRef = new com.sun.jna.Memory(8);
    private final byte[] window = new byte[BATCH_WINDOW];

    /** Offsets (relative to the batch start) and lengths of the instructions the last {@link #batch} found. */
    public final int[] batchOffset = new int[BATCH_WINDOW];
    public final byte[] batchLength = new byte[BATCH_WINDOW];

    private long handle(int mode) {
        long[] handles = HANDLES.get();
        if (handles[mode] == 0) {
            synchronized (X86Decoder.class) {
                if (capstoneC == null) {
                    capstoneC = com.sun.jna.Native.load("capstone", CapstoneC.class);
                }
            }
            com.sun.jna.ptr.LongByReference h = new com.sun.jna.ptr.LongByReference();
            int csMode = switch (mode) {
                case ExecMode.BITS16 -> Capstone.CS_MODE_16;
                case ExecMode.BITS32 -> Capstone.CS_MODE_32;
                default -> Capstone.CS_MODE_64;
            };
            if (capstoneC.cs_open(Capstone.CS_ARCH_X86, csMode, h) != 0) {
                throw new IllegalStateException("capstone: cs_open failed");
            }
            handles[mode] = h.getValue();
        }
        return handles[mode];
    }

    /**
     * Decodes straight through {@code code[off..off+avail)} (at most 1 KiB) in one call; fills
     * {@link #batchOffset}/{@link #batchLength} and returns how many instructions capstone decoded before the
     * first it could not (0 if the first one fails: use {@link #decode} for the fallbacks).
     */
    public int batch(byte[] code, int off, int avail, int mode) {
        if (mode == ExecMode.UNKNOWN || avail <= 0) {
            return 0;
        }
        int n = Math.min(avail, BATCH_WINDOW);
        System.arraycopy(code, off, window, 0, n);
        long h = handle(mode);
        long count = DirectC.cs_disasm(h, window, n, 0, 0, insnRef);
        if (count <= 0) {
            return 0;
        }
        com.sun.jna.Pointer p = insnRef.getPointer(0);
        try {
            int at = 0;
            for (int i = 0; i < count; i++) {
                int len = p.getShort((long) i * CS_INSN_SIZE + CS_INSN_SIZE_FIELD);
                batchOffset[i] = at;
                batchLength[i] = (byte) len;
                at += len;
            }
        } finally {
            DirectC.cs_free(p, count);
        }
        return (int) count;
    }

    /** Classifies an instruction whose length is known (from {@link #batch}); sets cls/op/displacement. */
    public void classifyKnown(byte[] code, int off, int len, int mode) {
        length = len;
        cls = InsnClass.OTHER;
        op = InsnOp.NONE;
        displacement = 0;
        byte[] w = new byte[len];
        System.arraycopy(code, off, w, 0, len);
        if (mode == ExecMode.BITS64 && jmpabs(w, len)) {
            return;
        }
        classify(w, mode);
    }

    /**
     * Decodes the instruction at {@code code[off..off+avail)} in {@code mode}. Returns its length, or 0 if
     * the bytes are not a valid instruction (or it is cut short by {@code avail}).
     */
    public int decode(byte[] code, int off, int avail, int mode) {
        length = 0;
        cls = InsnClass.OTHER;
        op = InsnOp.NONE;
        displacement = 0;
        int n = Math.min(avail, MAX_LENGTH);
        if (n <= 0 || mode == ExecMode.UNKNOWN) {
            return 0;
        }
        byte[] window = new byte[n];
        System.arraycopy(code, off, window, 0, n);
        if (mode == ExecMode.BITS64 && jmpabs(window, n)) {
            return length;
        }
        Capstone.CsInsn[] insns = engine(mode).disasm(window, 0, 1);
        if (insns == null || insns.length == 0) {
            length = ptwriteLength(window, n, mode);
            if (length == 0) {
                length = vexLength(window, n, mode);
            }
            if (length == 0) {
                length = group7RegisterLength(window, n, mode);
            }
            if (length == 0) {
                length = twoByteModrmLength(window, n, mode);
            }
            if (length == 0) {
                return 0;
            }
        } else {
            length = insns[0].size;
        }
        classify(window, mode);
        return length;
    }

    private boolean att;

    /** Makes {@link #text} AT&T syntax (ptxed --att) instead of Intel's. */
    public void att(boolean on) {
        if (on != att) {
            att = on;
            for (int i = 0; i < engines.length; i++) { // (lengths do not depend on the syntax; texts do)
                if (engines[i] != null) {
                    engines[i].close();
                    engines[i] = null;
                }
            }
            java.util.Arrays.fill(textBytes, null);
        }
    }

    /** Capstone's text for the instruction (for --format=text); null if it does not decode. */
    public String text(byte[] code, int off, int avail, int mode, long ip) {
        int n = Math.min(avail, MAX_LENGTH);
        if (n <= 0) {
            return null;
        }
        int slot = (int) ((ip ^ ip >>> 17) * 0x9E3779B1L >>> 20) & (TEXT_SLOTS - 1);
        byte[] known = textBytes[slot];
        if (known != null && textIps[slot] == ip && textModes[slot] == mode && known.length <= n
                && java.util.Arrays.equals(known, 0, known.length, code, off, off + known.length)) {
            return texts[slot];
        }
        byte[] window = new byte[n];
        System.arraycopy(code, off, window, 0, n);
        Capstone.CsInsn[] insns = engine(mode).disasm(window, ip, 1);
        if (insns == null || insns.length == 0) {
            return null;
        }
        String text = insns[0].opStr.isEmpty() ? insns[0].mnemonic : insns[0].mnemonic + " " + insns[0].opStr;
        textIps[slot] = ip;
        textModes[slot] = (byte) mode;
        textBytes[slot] = java.util.Arrays.copyOf(window, Math.min(n, insns[0].size));
        texts[slot] = text;
        return text;
    }

    /*
     * The text of recently printed instructions: a flow revisits the same code over and over and capstone costs
     * microseconds per call. An entry is keyed by address, mode and its own bytes, since other code can sit at the
     * same address later (and the text of relative operands depends on the address).
     */
    private static final int TEXT_SLOTS = 1 << 14;
    private final long[] textIps = new long[TEXT_SLOTS];
    private final byte[] textModes = new byte[TEXT_SLOTS];
    private final byte[][] textBytes = new byte[TEXT_SLOTS][];
    private final String[] texts = new String[TEXT_SLOTS];

    /**
     * JMPABS (APX: REX2 with M0=0, W=0, then A1 and a 64-bit absolute target), unknown to capstone 4. It
     * is direct but, like libipt, we let its TIP give the target, so it is classified as an indirect jump.
     */
    private boolean jmpabs(byte[] b, int n) {
        int i = 0;
        while (i < n && isLegacyPrefix(b[i] & 0xff)) {
            if ((b[i] & 0xff) == 0x66 || (b[i] & 0xff) == 0x67) {
                return false;
            }
            i++;
        }
        if (i + 2 >= n || (b[i] & 0xff) != 0xd5 || (b[i + 1] & 0x88) != 0 || (b[i + 2] & 0xff) != 0xa1) {
            return false;
        }
        if (i + 11 > n) {
            return false;
        }
        length = i + 11;
        cls = InsnClass.JUMP_INDIRECT;
        return true;
    }

    private static boolean isLegacyPrefix(int p) {
        return switch (p) {
            case 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65 -> true;
            default -> false;
        };
    }

    /**
     * Length of a VEX/EVEX-encoded instruction capstone 4 does not know (newer AVX-512 forms). None of
     * them transfers control, so the length is all the flow needs. Returns 0 if this is not one.
     */
    private static int vexLength(byte[] b, int n, int mode) {
        int i = 0;
        boolean asz = false;
        while (i < n && isLegacyPrefix(b[i] & 0xff)) {
            asz |= (b[i] & 0xff) == 0x67;
            i++;
        }
        if (i >= n) {
            return 0;
        }
        boolean m64 = mode == ExecMode.BITS64;
        int esc = b[i] & 0xff;
        int map;
        int opAt;
        if (esc == 0xc5 && i + 1 < n && (m64 || (b[i + 1] & 0xc0) == 0xc0)) {
            map = 1;
            opAt = i + 2;
        } else if (esc == 0xc4 && i + 2 < n && (m64 || (b[i + 1] & 0xc0) == 0xc0)) {
            map = b[i + 1] & 0x1f;
            opAt = i + 3;
        } else if (esc == 0x62 && i + 3 < n && (m64 || (b[i + 1] & 0xc0) == 0xc0)) {
            map = b[i + 1] & 0x07;
            opAt = i + 4;
        } else {
            return 0;
        }
        if (opAt + 1 >= n) {
            return 0;
        }
        int opcode = b[opAt] & 0xff;
        int len = modrmEnd(b, opAt + 1, n, mode == ExecMode.BITS16 != asz && !m64);
        if (len <= 0) {
            return 0;
        }
        boolean imm8 = map == 3 || (map == 1 && ((opcode >= 0x70 && opcode <= 0x73) || opcode == 0xc2
                || (opcode >= 0xc4 && opcode <= 0xc6)));
        len += imm8 ? 1 : 0;
        return len <= n ? len : 0;
    }

    /** Offset just past ModRM, SIB and displacement starting at {@code at}; 0 if the bytes run out. */
    private static int modrmEnd(byte[] b, int at, int n, boolean addr16) {
        if (at >= n) {
            return 0;
        }
        int modrm = b[at] & 0xff;
        int mod = modrm >> 6;
        int rm = modrm & 7;
        int len = at + 1;
        if (mod == 3) {
            return len;
        }
        if (addr16) {
            return len + (mod == 1 ? 1 : mod == 2 ? 2 : rm == 6 ? 2 : 0);
        }
        if (rm == 4) {
            if (len >= n) {
                return 0;
            }
            int base = b[len] & 7;
            len++;
            if (mod == 0 && base == 5) {
                len += 4;
            }
        } else if (mod == 0 && rm == 5) {
            len += 4;
        }
        return len + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
    }

    /**
     * A 0F-map instruction with a ModRM operand that capstone 4 does not know (CET's RDSSP, INCSSP, ...):
     * its length follows from ModRM, SIB, displacement and, for a few opcodes, an 8-bit immediate. Returns
     * 0 for opcodes without ModRM or outside this map.
     */
    private static int twoByteModrmLength(byte[] b, int n, int mode) {
        int i = 0;
        boolean asz = false;
        while (i < n && isLegacyPrefix(b[i] & 0xff)) {
            asz |= (b[i] & 0xff) == 0x67;
            i++;
        }
        boolean m64 = mode == ExecMode.BITS64;
        if (m64 && i < n && (b[i] & 0xf0) == 0x40) {
            i++;
        }
        if (i + 2 >= n || b[i] != 0x0f) {
            return 0;
        }
        int op = b[i + 1] & 0xff;
        boolean noModrm = op == 0x38 || op == 0x3a || op == 0x0f || (op >= 0x04 && op <= 0x0b) || op == 0x0e
                || (op >= 0x30 && op <= 0x37) || op == 0x77 || (op >= 0x80 && op <= 0x8f)
                || (op >= 0xa0 && op <= 0xa2) || (op >= 0xa8 && op <= 0xaa) || (op >= 0xc8 && op <= 0xcf);
        if (noModrm) {
            return 0;
        }
        int len = modrmEnd(b, i + 2, n, (mode == ExecMode.BITS16) != asz && !m64);
        if (len <= 0) {
            return 0;
        }
        boolean imm8 = (op >= 0x70 && op <= 0x73) || op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2
                || (op >= 0xc4 && op <= 0xc6);
        len += imm8 ? 1 : 0;
        return len <= n ? len : 0;
    }

    /**
     * 0F 01 with a register-form ModRM (C0..FF) is a family of operand-less system instructions; newer
     * ones (UIRET, ERETS, ERETU, ...) are unknown to capstone 4. Returns their length, or 0.
     */
    private static int group7RegisterLength(byte[] b, int n, int mode) {
        int i = 0;
        while (i < n && isLegacyPrefix(b[i] & 0xff)) {
            i++;
        }
        if (mode == ExecMode.BITS64 && i < n && (b[i] & 0xf0) == 0x40) {
            i++;
        }
        if (i + 2 < n && b[i] == 0x0f && b[i + 1] == 0x01 && (b[i + 2] & 0xc0) == 0xc0) {
            return i + 3;
        }
        return 0;
    }

    /**
     * Capstone 4 does not know PTWRITE (F3 [REX] 0F AE /4); measure it from its ModRM so traces with
     * PTWRITE still decode. Returns 0 for anything else.
     */
    private static int ptwriteLength(byte[] b, int n, int mode) {
        int i = 0;
        boolean asz = false;
        boolean f3 = false;
        while (i < n && ((b[i] & 0xff) == 0xf3 || (b[i] & 0xff) == 0x67)) {
            asz |= (b[i] & 0xff) == 0x67;
            f3 |= (b[i] & 0xff) == 0xf3;
            i++;
        }
        if (mode == ExecMode.BITS64 && i < n && (b[i] & 0xf0) == 0x40) {
            i++;
        }
        if (!f3 || i + 2 >= n || b[i] != 0x0f || (b[i + 1] & 0xff) != 0xae || ((b[i + 2] >> 3) & 7) != 4) {
            return 0;
        }
        int modrm = b[i + 2] & 0xff;
        int len = i + 3;
        int mod = modrm >> 6;
        int rm = modrm & 7;
        boolean addr16 = (mode == ExecMode.BITS16) != asz && mode != ExecMode.BITS64;
        if (mod == 3) {
            return len;
        }
        if (addr16) {
            return len + (mod == 1 ? 1 : mod == 2 ? 2 : rm == 6 ? 2 : 0);
        }
        if (rm == 4) {
            if (len >= n) {
                return 0;
            }
            int base = b[len] & 7;
            len++;
            if (mod == 0 && base == 5) {
                len += 4;
            }
        } else if (mod == 0 && rm == 5) {
            len += 4;
        }
        len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
        return len <= n ? len : 0;
    }

    /** Reads prefixes, opcode map and ModRM to classify; {@link #length} is already known. */
    private void classify(byte[] b, int mode) {
        boolean m64 = mode == ExecMode.BITS64;
        boolean osz = false;
        int lastF2F3 = 0;
        int i = 0;
        prefixes:
        while (i < length) {
            int p = b[i] & 0xff;
            switch (p) {
                case 0x66 -> osz = true;
                case 0xf2 -> lastF2F3 = 2;
                case 0xf3 -> lastF2F3 = 3;
                case 0xf0, 0x67, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65 -> { }
                default -> {
                    break prefixes;
                }
            }
            i++;
        }
        if (m64 && i < length && (b[i] & 0xf0) == 0x40) {
            i++; // REX
        }
        if (i >= length) {
            return;
        }
        int opc = b[i] & 0xff;
        if (opc == 0xd5 && m64) {
            return; // REX2 (APX): nothing PT-relevant that we classify
        }
        if ((opc == 0xc4 || opc == 0xc5 || opc == 0x62 || opc == 0x8f) && (m64 || (i + 1 < length && (b[i + 1] & 0xc0) == 0xc0))) {
            if (opc != 0x8f || (i + 1 < length && (b[i + 1] & 0x38) != 0)) {
                return; // VEX/EVEX/XOP: vector instructions
            }
        }
        int modrm = i + 1 < length ? b[i + 1] & 0xff : 0;
        int reg = (modrm >> 3) & 7;
        if (opc != 0x0f) {
            classifyMap0(opc, reg, m64);
            if (isRelative(opc)) {
                displacement = readDisplacement(b, i + 1);
            }
            return;
        }
        i++;
        if (i >= length) {
            return;
        }
        int opc1 = b[i] & 0xff;
        modrm = i + 1 < length ? b[i + 1] & 0xff : 0;
        reg = (modrm >> 3) & 7;
        int mod = modrm >> 6;
        if ((opc1 & 0xf0) == 0x80) {
            cls = InsnClass.COND_JUMP;
            displacement = readDisplacement(b, i + 1);
            return;
        }
        switch (opc1) {
            case 0x05 -> set(InsnClass.FAR_CALL, InsnOp.SYSCALL);
            case 0x34 -> set(InsnClass.FAR_CALL, InsnOp.SYSENTER);
            case 0x35 -> set(InsnClass.FAR_RETURN, InsnOp.SYSEXIT);
            case 0x07 -> set(InsnClass.FAR_RETURN, InsnOp.SYSRET);
            case 0x22 -> {
                if (reg == 3 && !rexR(b, i - 1, m64)) {
                    op = InsnOp.MOV_CR3;
                }
            }
            case 0x01 -> {
                switch (modrm) {
                    case 0xc1 -> set(InsnClass.FAR_CALL, InsnOp.VMCALL);
                    case 0xc2 -> set(InsnClass.FAR_RETURN, InsnOp.VMLAUNCH);
                    case 0xc3 -> set(InsnClass.FAR_RETURN, InsnOp.VMRESUME);
                    case 0xec -> set(InsnClass.FAR_RETURN, InsnOp.UIRET);
                    case 0xca -> {
                        if (lastF2F3 == 2) {
                            set(InsnClass.FAR_RETURN, InsnOp.ERETS);
                        } else if (lastF2F3 == 3) {
                            set(InsnClass.FAR_RETURN, InsnOp.ERETU);
                        }
                    }
                    default -> { }
                }
            }
            case 0xc7 -> {
                if (mod != 3 && reg == 6) {
                    op = InsnOp.VMPTRLD;
                }
            }
            case 0xae -> {
                if (lastF2F3 == 3 && !osz && reg == 4) {
                    cls = InsnClass.PTWRITE;
                }
            }
            default -> { }
        }
    }

    private static boolean rexR(byte[] b, int before, boolean m64) {
        return m64 && before >= 0 && (b[before] & 0xf0) == 0x40 && (b[before] & 0x04) != 0;
    }

    private static boolean isRelative(int opc) {
        return (opc & 0xf0) == 0x70 || opc == 0xe8 || opc == 0xe9 || opc == 0xeb || (opc >= 0xe0 && opc <= 0xe3);
    }

    private void set(byte c, byte o) {
        cls = c;
        op = o;
    }

    private void classifyMap0(int opc, int reg, boolean m64) {
        if ((opc & 0xf0) == 0x70) {
            cls = InsnClass.COND_JUMP;
            return;
        }
        switch (opc) {
            case 0x9a -> {
                if (!m64) {
                    set(InsnClass.FAR_CALL, InsnOp.CALL_FAR);
                }
            }
            case 0xff -> {
                switch (reg) {
                    case 2 -> cls = InsnClass.CALL_INDIRECT;
                    case 3 -> set(InsnClass.FAR_CALL, InsnOp.CALL_FAR);
                    case 4 -> cls = InsnClass.JUMP_INDIRECT;
                    case 5 -> set(InsnClass.FAR_JUMP, InsnOp.JMP_FAR);
                    default -> { }
                }
            }
            case 0xe8 -> cls = InsnClass.CALL;
            case 0xcd -> set(InsnClass.FAR_CALL, InsnOp.INT);
            case 0xcc -> set(InsnClass.FAR_CALL, InsnOp.INT3);
            case 0xce -> {
                if (!m64) {
                    set(InsnClass.FAR_CALL, InsnOp.INTO);
                }
            }
            case 0xf1 -> set(InsnClass.FAR_CALL, InsnOp.INT1);
            case 0xcf -> set(InsnClass.FAR_RETURN, InsnOp.IRET);
            case 0xe9, 0xeb -> cls = InsnClass.JUMP;
            case 0xea -> {
                if (!m64) {
                    set(InsnClass.FAR_JUMP, InsnOp.JMP_FAR);
                }
            }
            case 0xe0, 0xe1, 0xe2, 0xe3 -> cls = InsnClass.COND_JUMP;
            case 0xc3, 0xc2 -> cls = InsnClass.RETURN;
            case 0xcb, 0xca -> set(InsnClass.FAR_RETURN, InsnOp.RET_FAR);
            default -> { }
        }
    }

    /** The displacement of a relative branch is everything after the opcode (no ModRM, no immediate). */
    private int readDisplacement(byte[] b, int from) {
        int n = length - from;
        return switch (n) {
            case 1 -> b[from];
            case 2 -> (short) ((b[from] & 0xff) | (b[from + 1] << 8));
            case 4 -> (b[from] & 0xff) | ((b[from + 1] & 0xff) << 8) | ((b[from + 2] & 0xff) << 16) | (b[from + 3] << 24);
            default -> 0;
        };
    }
}
