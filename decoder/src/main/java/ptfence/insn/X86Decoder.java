package ptfence.insn;

import capstone.Capstone;

/**
 * Decodes one x86 instruction: capstone gives its length (and text for the text format), a small
 * opcode reader gives what control flow needs (class, op, branch displacement). Capstone costs several
 * microseconds per call through JNA, so callers cache the results per code content ({@link CodeCache}).
 * Not thread-safe; give each thread its own.
 */
public final class X86Decoder {
    private static final int MAX_LENGTH = 15;
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
            engines[mode] = cs;
        }
        return cs;
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
        Capstone.CsInsn[] insns = engine(mode).disasm(window, 0, 1);
        if (insns == null || insns.length == 0) {
            length = ptwriteLength(window, n, mode);
            if (length == 0) {
                return 0;
            }
        } else {
            length = insns[0].size;
        }
        classify(window, mode);
        return length;
    }

    /** Capstone's text for the instruction (for --format=text); null if it does not decode. */
    public String text(byte[] code, int off, int avail, int mode, long ip) {
        int n = Math.min(avail, MAX_LENGTH);
        if (n <= 0) {
            return null;
        }
        byte[] window = new byte[n];
        System.arraycopy(code, off, window, 0, n);
        Capstone.CsInsn[] insns = engine(mode).disasm(window, ip, 1);
        if (insns == null || insns.length == 0) {
            return null;
        }
        return insns[0].opStr.isEmpty() ? insns[0].mnemonic : insns[0].mnemonic + " " + insns[0].opStr;
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
