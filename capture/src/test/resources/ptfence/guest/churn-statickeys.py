#!/usr/bin/env python3
"""churn-statickeys.py N OUT: N static-key flips, each the first perf_event_open of a tracepoint event (its key goes
0 -> 1: every jump label site of that key becomes a jmp) or the close of that event (1 -> 0: back to a nop), in core
text and in a module's (nbd, loaded here by modprobe and removed at the end). The keys flip in turn, overlapping:
open k0, open k1, close k0, open k2, close k1, ... so another key's sites stay jumps while one flips.

An independent reader (kcore-read.py's, no project code) finds each key's sites itself, in the kernel's own jump
tables: vmlinux's [__start___jump_table, __stop___jump_table) (kallsyms) and the module's __jump_table (its address in
/sys/module/<m>/sections, its size from the .ko's section header). x86-64 entries are relative: s32 code, s32 target,
s64 key, each relative to its own field's address; the key's low bits are flags (1: branch, 2: init). A tracepoint's
key is the static_key in `struct tracepoint` after its name pointer (checked: the pointer names the tracepoint). After
each flip, every site of the flipped key and of the keys still enabled is copied from /proc/kcore into
OUT/kcore/jl-<core|module>-<tracepoint>.<flip>.<address> (index: ADDR LEN T0 T1 FILE, CLOCK_MONOTONIC), the site's
length decoded from its instruction (2 or 5 bytes, as the kernel's jump_entry_size does). The reader also checks the
kernel did what the flip asked: the key's enabled count, and each site a jmp to the entry's target exactly when
enabled XOR branch, else a nop; a site that is neither is a failure (exit 1). OUT/kcore/flips has one line per flip
(flip, op, tracepoint, enabled count, sites, as expected: yes/no) and one 'sites' line per key."""
import ctypes, lzma, os, struct, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
kr = __import__('kcore-read')

CORE = os.environ.get('SK_CORE', 'signal:signal_generate timer:hrtimer_start sched:sched_process_fork '
                      'kmem:mm_page_alloc workqueue:workqueue_queue_work net:net_dev_xmit lock:contention_begin '
                      'tlb:tlb_flush rcu:rcu_utilization').split()
MODULE = os.environ.get('SK_MODULE', 'nbd')

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_PERF_EVENT_OPEN, PERF_TYPE_TRACEPOINT, PERF_FLAG_FD_CLOEXEC = 298, 2, 8
NOPS = {b'\x66\x90': 2, b'\x0f\x1f\x44\x00\x00': 5}


def perf_open(event_id):
    """A disabled system-wide (CPU 0) counting event on the tracepoint: opening it registers perf's probe."""
    attr = bytearray(64)
    struct.pack_into('<IIQ', attr, 0, PERF_TYPE_TRACEPOINT, 64, event_id)
    struct.pack_into('<Q', attr, 40, 1)  # disabled
    buf = ctypes.create_string_buffer(bytes(attr), 64)
    fd = libc.syscall(NR_PERF_EVENT_OPEN, buf, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, 'perf_event_open tracepoint %d: %s' % (event_id, os.strerror(e)))
    return fd

def kallsyms():
    syms = {}
    for line in open('/proc/kallsyms'):
        f = line.split()
        mod = f[3].strip('[]') if len(f) > 3 else ''
        syms[(f[2], mod)] = int(f[0], 16)
    return syms

def section_size(ko, name):
    """sh_size of section `name` in an ELF64 relocatable (the .ko the module was loaded from)."""
    shoff, = struct.unpack_from('<Q', ko, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', ko, 0x3a)
    def sh(i):
        return struct.unpack_from('<IIQQQQ', ko, shoff + i * shentsize)
    strs = sh(shstrndx)[4]
    for i in range(shnum):
        nm, _, _, _, _, size = sh(i)
        end = ko.index(b'\0', strs + nm)
        if ko[strs + nm:end].decode() == name:
            return size
    raise OSError('no %s section' % name)

class Reader:
    def __init__(self):
        self.f = open('/proc/kcore', 'rb', buffering=0)
        self.segs = kr.segments(self.f)

    def read(self, addr, n):
        return kr.read(self.f, self.segs, addr, n)

    def entries(self, start, count):
        """(code, target, key, flags) of each jump entry in [start, start + 16 * count)."""
        data, out = self.read(start, 16 * count), []
        for i, (code, target, key) in enumerate(struct.iter_unpack('<iiq', data)):
            at = start + 16 * i
            out.append(((at + code) & (2**64 - 1), (at + 4 + target) & (2**64 - 1),
                        (at + 8 + (key & ~3)) & (2**64 - 1), key & 3))
        return out

def site(r, code, target):
    """(length, is a jmp to target) of the jump label at code; a site that is neither a jmp nor a nop: (0, None)."""
    b = r.read(code, 5)
    if b[0] == 0xeb:
        return 2, code + 2 + struct.unpack_from('<b', b, 1)[0] == target
    if b[0] == 0xe9:
        return 5, code + 5 + struct.unpack_from('<i', b, 1)[0] == target
    for nop, n in NOPS.items():
        if b[:n] == nop:
            return n, False
    return 0, None

def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    kdir = os.path.join(out, 'kcore')
    os.makedirs(kdir, exist_ok=True)
    ko_path = [l.split()[1] for l in subprocess.run(['modprobe', '--show-depends', MODULE], check=True,
               capture_output=True, text=True).stdout.split('\n') if l.startswith('insmod ')][-1]
    ko = open(ko_path, 'rb').read()
    ko = lzma.decompress(ko) if ko_path.endswith('.xz') else ko
    subprocess.run(['modprobe', MODULE], check=True)
    r, syms = Reader(), kallsyms()
    tps = [(t, '') for t in CORE]
    tps += [(MODULE + ':' + d, MODULE) for d in sorted(os.listdir('/sys/kernel/tracing/events/' + MODULE))
            if os.path.isdir('/sys/kernel/tracing/events/%s/%s' % (MODULE, d))]
    tables = []  # (start, count): vmlinux's, the module's
    core_start, core_stop = syms[('__start___jump_table', '')], syms[('__stop___jump_table', '')]
    tables.append((core_start, (core_stop - core_start) // 16))
    mod_start = int(open('/sys/module/%s/sections/__jump_table' % MODULE).read(), 16)
    tables.append((mod_start, section_size(ko, '__jump_table') // 16))
    stext, etext = syms[('_stext', '')], syms[('_etext', '')]
    keys = {}  # key address -> (tracepoint, where, event id)
    for tp, mod in tps:
        name = tp.split(':')[1]
        addr = syms[('__tracepoint_' + name, mod)]
        ptr, = struct.unpack('<Q', r.read(addr, 8))
        assert r.read(ptr, len(name) + 1) == name.encode() + b'\0', '__tracepoint_%s does not name itself' % name
        eid = int(open('/sys/kernel/tracing/events/%s/id' % tp.replace(':', '/')).read())
        keys[addr + 8] = (name, 'module' if mod else 'core', eid)
    sites = {k: [] for k in keys}  # key -> [(code, target, branch)]
    for start, count in tables:
        for code, target, key, flags in r.entries(start, count):
            if key in sites and not flags & 2 and (code >= stext and code < etext or start == mod_start):
                sites[key].append((code, target, flags & 1))
    log = open(os.path.join(kdir, 'flips'), 'w')
    for k, (name, where, _) in keys.items():
        log.write('sites %s-%s %d %s\n' % (where, name, len(sites[k]),
                  ' '.join('%x' % c for c, _, _ in sites[k])))
    order = [k for k in keys if sites[k]]
    assert order, 'no jump label sites for any of %s' % [t for t, _ in tps]
    ix = open(os.path.join(kdir, 'index'), 'a')
    phase, fds, bad, flip = kr.Phases(), {}, 0, 0
    plan = [('open', order[0])]
    j = 1
    while len(plan) < n:
        plan.append(('open', order[j % len(order)]))
        plan.append(('close', order[(j - 1) % len(order)]))
        j += 1
    plan = plan[:n]
    for op, k in plan:
        flip += 1
        if op == 'open':
            fds[k] = perf_open(keys[k][2])
        else:
            os.close(fds.pop(k))
        phase(op)
        for d in [k] + [o for o in fds if o != k]:
            name, where, _ = keys[d]
            enabled, = struct.unpack('<i', r.read(d, 4))
            want_on = d in fds
            ok = (enabled > 0) == want_on
            for code, target, branch in sites[d]:
                length, is_jmp = site(r, code, target)
                ok = ok and length > 0 and is_jmp == (want_on != bool(branch))
                if length:
                    kr.dump(r.f, r.segs, code, length, kdir, 'jl-%s-%s.%d.%x' % (where, name, flip, code), ix)
            if d == k:
                log.write('%d %s %s-%s enabled=%d sites=%d expected=%s\n' % (flip, op, where, name, enabled,
                          len(sites[d]), 'yes' if ok else 'no'))
            if not ok:
                bad += 1
                print('churn-statickeys: flip %d (%s %s): key %s-%s not as expected' % (flip, op, keys[k][0],
                      where, name), file=sys.stderr)
        ix.flush()
        phase('copies')
    for fd in fds.values():
        os.close(fd)
    log.close()
    subprocess.run(['rmmod', MODULE])
    print('churn: %d static-key flips over %d keys (%d sites); %d not as expected; %s' % (
        flip, len(order), sum(len(sites[k]) for k in order), bad, phase))
    return 1 if bad else 0

sys.exit(main())
