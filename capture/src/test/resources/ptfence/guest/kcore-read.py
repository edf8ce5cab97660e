#!/usr/bin/env python3
"""An independent reader of /proc/kcore (no project code): kcore-read.py ADDR LEN OUT copies LEN bytes of kernel
memory at ADDR (hex) into OUT, through the ELF core's PT_LOAD segments; with --serve it reads 'ADDR LEN OUT' lines
from stdin, answering each with 'ok' or 'error ...' on stdout and adding 'ADDR LEN T0 T1 FILE' to the file 'index' beside OUT
(T0, T1: CLOCK_MONOTONIC before and after the read) (one process for a whole churn: starting Python
under QEMU's TCG costs a second)."""
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

def dump(f, segs, addr, n, kdir, name, ix):
    """Copies [addr, addr+n) into kdir/name and adds 'ADDR LEN T0 T1 FILE' to the open index ix (the churns'
    in-process use of the reader)."""
    t0 = time.monotonic_ns()
    data = read(f, segs, addr, n)
    t1 = time.monotonic_ns()
    open(os.path.join(kdir, name), 'wb').write(data)
    ix.write('%x %d %d %d %s\n' % (addr, len(data), t0, t1, name))

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
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = segments(f)
    if sys.argv[1:] == ['--serve']:
        for line in sys.stdin:
            try:
                a, n, out = line.split()
                before = time.monotonic_ns()
                data = read(f, segs, int(a, 16), int(n))
                after = time.monotonic_ns()
                open(out, 'wb').write(data)
                # the index the checker reads: what was read where, between which CLOCK_MONOTONIC times
                with open(os.path.join(os.path.dirname(out), 'index'), 'a') as ix:
                    ix.write('%s %d %d %d %s\n' % (a, len(data), before, after, os.path.basename(out)))
                print('ok', flush=True)
            except Exception as e:
                print('error', e, flush=True)
    else:
        open(sys.argv[3], 'wb').write(read(f, segs, int(sys.argv[1], 16), int(sys.argv[2])))

if __name__ == "__main__":
    main()
