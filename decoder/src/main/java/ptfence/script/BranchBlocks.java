package ptfence.script;

import ptfence.calls.BranchFlags;
import ptfence.insn.InsnClass;
import ptfence.insn.X86Decoder;
import ptfence.symbol.Symbol;
import ptfence.symbol.SymbolCursor;
import ptfence.symbol.Symbolizer;

/**
 * {@code -F brstackinsn} (and {@code brstackinsnlen}): the instructions of each block between an instruction sample's
 * last branches (--itrace=l), oldest first, as perf 6.1's perf_sample__fprintf_brstackinsn prints them: a symbol
 * line where the function changes, each instruction's address and bytes ("insn: 48 31 ed ", perf's own decoder
 * without XED; --xed disassembles them after), the branch ending a block padded and marked {@code #}, and the block
 * from the newest branch's target up to the sample. perf reads each block's bytes from the map at its start, up to
 * 16 KiB less an instruction; blocks it cannot read are left out, and so are they here.
 */
final class BranchBlocks {
    /** perf's MAXBB and MAXINSN: a block's bytes are read with one instruction's room past its end. */
    private static final int MAXBB = 16384;
    private static final int MAXINSN = 15;
    /** grab_bb's -ENXIO: a block that runs between kernel and user space (the caller joins it to the next). */
    private static final int CROSSES = -6;

    private final SymbolCursor cursor;
    private final Symbolizer symbols;
    private final X86Decoder x86 = new X86Decoder();
    private final byte[] buf = new byte[MAXBB];
    private int mode;
    private Symbol lastSym;
    private int ilen;

    BranchBlocks(SymbolCursor cursor, Symbolizer symbols) {
        this.cursor = cursor;
        this.symbols = symbols;
    }

    /** The blocks of {@code s}'s last branches after the sample's other fields (nothing without last branches). */
    void write(LineBytes b, long fields, SampleSink s, long sampleIp, int maxBlocks) {
        int nr = s.lastBranchCount();
        if (nr == 0) {
            return;
        }
        if (maxBlocks > 0 && nr > maxBlocks + 1) {
            nr = maxBlocks + 1;
        }
        boolean withLen = (fields & FieldSet.BRSTACKINSNLEN) != 0;
        boolean srcline = (fields & FieldSet.SRCLINE) != 0;
        long time = s.time();
        int pid = s.pid();
        lastSym = null;
        b.ch('\n');
        // the oldest branch's own instruction (where its block began is not known)
        long first = s.lastBranchFrom(nr - 1);
        int len = grab(s, first, first, buf);
        if (len > 0) {
            sym(b, first, time, pid, srcline);
            jump(b, first, s.lastBranchFlags(nr - 1), 0, len, withLen);
        }
        for (int i = nr - 2; i >= 0; i--) {
            long start = s.lastBranchTo(i + 1);
            long end = s.lastBranchFrom(i);
            len = grab(s, start, end, buf);
            if (len == CROSSES && i > 0) { // perf patches up a transfer that ring filtering left out
                end = s.lastBranchFrom(--i);
                len = grab(s, start, end, buf);
            }
            if (len <= 0) {
                continue;
            }
            long off = 0;
            for (; off < len; off += ilen) {
                long ip = start + off;
                sym(b, ip, time, pid, srcline);
                if (ip == end) {
                    jump(b, ip, s.lastBranchFlags(i), (int) off, len, withLen);
                    break;
                }
                b.ch('\t').hexZero(ip, 16).ch('\t');
                insn(b, (int) off, len);
                if (withLen) {
                    b.str("\tilen: ").sdec(ilen);
                }
                b.ch('\n');
                if (ilen == 0) {
                    break;
                }
            }
            if (off != end - start) {
                b.str("\tmismatch of LBR data and executable\n");
            }
        }
        // the block from the newest branch's target up to the sample, unless the sample is that branch
        if (s.lastBranchFrom(0) == sampleIp || (s.lastBranchFlags(0) & BranchFlags.TX_ABORT) != 0) {
            return;
        }
        long start = s.lastBranchTo(0);
        long end = sampleIp;
        if (Long.compareUnsigned(end, start) < 0) {
            end = start + 128; // perf: a branch the last branches miss; walk on to the next branch
        }
        len = grab(s, start, end, buf);
        sym(b, start, time, pid, srcline);
        if (len <= 0) {
            len = grab(s, sampleIp, sampleIp, buf); // at least the sample's own instruction
            if (len <= 0) {
                return;
            }
            b.ch('\t').hexZero(sampleIp, 16).ch('\t');
            insn(b, 0, len);
            if (withLen) {
                b.str("\tilen: ").sdec(ilen);
            }
            b.ch('\n');
            return;
        }
        for (long off = 0; Long.compareUnsigned(off, end - start) <= 0; off += ilen) {
            b.ch('\t').hexZero(start + off, 16).ch('\t');
            insn(b, (int) Math.min(off, Integer.MAX_VALUE), len);
            if (withLen) {
                b.str("\tilen: ").sdec(ilen);
            }
            b.ch('\n');
            if (ilen == 0) {
                break;
            }
            if (InsnClass.isBranch(x86.cls) && start + off != sampleIp) {
                b.str("\t... not reaching sample ...\n");
                break;
            }
        }
    }

    /**
     * perf's grab_bb: the bytes of [start, end] and one instruction's room after, from the code at {@code start};
     * 0 where perf reads none (no address, too long, nothing mapped), {@link #CROSSES} between kernel and user.
     */
    private int grab(SampleSink s, long start, long end, byte[] into) {
        if (start == 0 || end == 0) {
            return 0;
        }
        if (start < 0 != end < 0) { // perf's machine__kernel_ip (the kernel's half of the address space)
            return CROSSES;
        }
        if (Long.compareUnsigned(end - start, MAXBB - MAXINSN) > 0) {
            return 0;
        }
        mode = s.codeMode();
        return s.code(start, into, (int) (end - start) + MAXINSN);
    }

    /** ip__fprintf_sym: "\tname+off:" (decimal offset) with the source line, where the function changes. */
    private void sym(LineBytes b, long ip, long time, int pid, boolean srcline) {
        if (lastSym != null && lastSym.covers(ip)) {
            return;
        }
        Symbol sym = cursor.symbol(ip, time, pid);
        if (sym == null) {
            return;
        }
        b.ch('\t').str(sym.name());
        long off = ip - sym.start();
        if (off != 0) {
            b.ch('+').sdec(off);
        }
        b.ch(':');
        if (srcline) {
            String src = cursor.srcline(ip, time, pid);
            if (src == null) {
                src = symbols.srclineFallback(ip, time, pid);
            }
            if (src != null) {
                b.ch('\t').str(src);
            }
        }
        b.ch('\n');
        lastSym = sym;
    }

    /** ip__fprintf_jump: the branch ending a block, its bytes padded to 30, and its flags (none carry cycles here). */
    private void jump(LineBytes b, long ip, int flags, int off, int len, boolean withLen) {
        b.ch('\t').hexZero(ip, 16).ch('\t');
        int at = b.length();
        insn(b, off, len);
        b.spaces(30 - (b.length() - at)).ch('\t');
        if (withLen) {
            b.str("ilen: ").sdec(ilen).ch('\t');
        }
        b.ch('#');
        if ((flags & BranchFlags.IN_TX) != 0) {
            b.str(" INTX");
        }
        if ((flags & BranchFlags.TX_ABORT) != 0) {
            b.str(" ABORT");
        }
        b.ch('\n');
    }

    /**
     * The length perf's instruction decoder gives a one-byte opcode that x86-64 does not have (push/pop of segment
     * registers, daa/das/aaa/aas, pusha/popa, into, salc; aam/aad with their immediate): capstone rejects them, perf
     * measures them (a block read from code other than what ran shows them: a program reloaded at the same address).
     */
    private static int invalid64Length(int op, int avail) {
        return switch (op) {
            case 0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0xce, 0xd6 -> 1;
            case 0xd4, 0xd5 -> avail >= 2 ? 2 : 0;
            default -> 0;
        };
    }

    /** perf's dump_insn (Intel PT's decoder, no XED): "insn: " and each byte with a blank after, or "<bad>". */
    private void insn(LineBytes b, int off, int len) {
        ilen = 0;
        int avail = len - off;
        int n = avail <= 0 ? 0 : x86.decode(buf, off, avail, mode);
        if (n == 0 && avail > 0 && mode == ptfence.insn.ExecMode.BITS64) {
            n = invalid64Length(buf[off] & 0xff, avail);
            x86.cls = InsnClass.OTHER;
        }
        if (n == 0) {
            x86.cls = InsnClass.OTHER;
            b.str("<bad>");
            return;
        }
        ilen = n;
        b.str("insn: ");
        for (int i = 0; i < ilen; i++) {
            b.hexZero(buf[off + i] & 0xff, 2).ch(' ');
        }
    }
}
