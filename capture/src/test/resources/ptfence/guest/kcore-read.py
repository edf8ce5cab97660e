#!/usr/bin/env python3
"""An independent reader of /proc/kcore (no project code): kcore-read.py ADDR LEN OUT copies LEN bytes of kernel
memory at ADDR (hex) into OUT, through the ELF core's PT_LOAD segments; with --serve it reads 'ADDR LEN OUT' lines
from stdin, answering each with 'ok' or 'error ...' on stdout and adding 'ADDR LEN T0 T1 FILE' to the file 'index' beside OUT
(T0, T1: CLOCK_MONOTONIC around the two reads in a row that agreed, read_settled) (one process for a whole churn:
starting Python under QEMU's TCG costs a second); --self-test checks read_settled on a forged core."""
import os, struct, sys, time

def segments(f):
    f.seek(0)
    eh = f.read(64)
    assert eh[:4] == b'\x7fELF', 'not an ELF core'
    phoff, = struct.unpack_from('<Q', eh, 32)
    phentsize, phnum = struct.unpack_from('<HH', eh, 54)
    f.seek(phoff)
    ph = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz, memsz = struct.unpack_from('<IIQQQQQ', ph, i * phentsize)
        if p_type == 1:
            out.append((vaddr, off, filesz, memsz))
    return out

def read(f, segs, addr, n):
    buf = bytearray()
    while n > 0:
        for vaddr, off, filesz, memsz in segs:
            if vaddr <= addr < vaddr + memsz:
                k = min(n, vaddr + memsz - addr)
                f.seek(off + addr - vaddr)
                data = f.read(k)
                if len(data) != k:
                    raise IOError('short read at 0x%x' % addr)
                buf += data
                addr += k
                n -= k
                break
        else:
            raise IOError('0x%x in no PT_LOAD segment' % addr)
    return bytes(buf)

def read_settled(f, segs, addr, n, tries=20, between=None):
    """The bytes at [addr, addr+n) once two reads in a row agree, and the CLOCK_MONOTONIC times around that pair.
    A read is not atomic with the kernel's text_poke_bp(): it can catch a poke half done, its INT3 over the first
    byte of a call whose tail is already new (the 6.1 guest, two kretprobe lanes sharing one ftrace trampoline:
    0xcc at +0x7e, the ftrace_ops call, while the other lane's register re-poked it). The kernel publishes that state
    only between the INT3 and the final byte (the TEXT_POKE record's time lies inside it), so it is no version the
    archive could hold. between(k), where given, runs before the k-th read after the first (the self-test's poke)."""
    t0 = time.monotonic_ns()
    last = read(f, segs, addr, n)
    for k in range(tries):
        if between:
            between(k)
        t1 = time.monotonic_ns()
        data = read(f, segs, addr, n)
        if data == last:
            return data, t0, time.monotonic_ns()
        last, t0 = data, t1
    raise IOError('0x%x: no two reads of %d in a row agreed' % (addr, tries + 1))

def dump(f, segs, addr, n, kdir, name, ix):
    """Copies [addr, addr+n) into kdir/name and adds 'ADDR LEN T0 T1 FILE' to the open index ix (the churns'
    in-process use of the reader)."""
    data, t0, t1 = read_settled(f, segs, addr, n)
    open(os.path.join(kdir, name), 'wb').write(data)
    ix.write('%x %d %d %d %s\n' % (addr, len(data), t0, t1, name))

def self_test():
    """A forged ELF core with one PT_LOAD whose call site is mid-poke (INT3, new tail) at the first read and done by
    the second: the settled read returns the finished call, never the INT3, and a stable page in one pair."""
    import tempfile
    base, page = 0xffffffffc0313000, bytearray(range(256)) * 16
    page[0x7e:0x83] = b'\xcc\xad\x35\xd6\xc0'                      # text_poke_bp between its INT3 and last byte
    eh = bytearray(64)
    eh[:4] = b'\x7fELF'
    struct.pack_into('<Q', eh, 32, 64)
    struct.pack_into('<HH', eh, 54, 56, 1)
    ph = struct.pack('<IIQQQQQQ', 1, 5, 120, base, 0, len(page), len(page), 4096)
    with tempfile.NamedTemporaryFile() as core:
        core.write(bytes(eh) + ph + bytes(page))
        core.flush()
        f = open(core.name, 'r+b', buffering=0)
        def poke_done(k):
            if k == 0:
                f.seek(120 + 0x7e)
                f.write(b'\xe8')
        data, t0, t1 = read_settled(f, segments(f), base + 0x70, 32, between=poke_done)
        assert data[0x0e:0x13] == b'\xe8\xad\x35\xd6\xc0', 'the finished call: %s' % data[0x0e:0x13].hex()
        assert t0 <= t1
        reads = []
        data, _, _ = read_settled(f, segments(f), base, 4096, between=reads.append)
        assert reads == [0] and data[0x7e] == 0xe8, 'a stable page: one pair of reads'
    print('ok')

class Phases:
    """Where a churn's time goes: phase(name) adds the time since the last call to name's total."""
    def __init__(self):
        self.spent, self.last = {}, time.monotonic()

    def __call__(self, name):
        now = time.monotonic()
        self.spent[name] = self.spent.get(name, 0) + now - self.last
        self.last = now

    def __str__(self):
        return 'ms spent: ' + ' '.join('%s=%d' % (k, v * 1000) for k, v in self.spent.items())

def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = segments(f)
    if sys.argv[1:] == ['--serve']:
        for line in sys.stdin:
            try:
                a, n, out = line.split()
                data, before, after = read_settled(f, segs, int(a, 16), int(n))
                open(out, 'wb').write(data)
                # the index the checker reads: what was read where, between which CLOCK_MONOTONIC times
                with open(os.path.join(os.path.dirname(out), 'index'), 'a') as ix:
                    ix.write('%s %d %d %d %s\n' % (a, len(data), before, after, os.path.basename(out)))
                print('ok', flush=True)
            except Exception as e:
                print('error', e, flush=True)
    else:
        open(sys.argv[3], 'wb').write(read_settled(f, segs, int(sys.argv[1], 16), int(sys.argv[2]))[0])

if __name__ == "__main__":
    main()
