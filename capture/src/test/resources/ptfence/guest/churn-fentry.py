#!/usr/bin/env python3
"""churn-fentry.py N OUT: N (at least) attach/detach cycles of fentry, fexit and fmod_ret programs on the same few kernel
functions at once (each attach or detach rewrites the function's BPF trampoline into a new image; the last detach
frees it). After each attach, while the images are live, every bpf_trampoline_* image kallsyms lists is copied from
/proc/kcore by kcore-read.py's reader (no project code) into OUT/kcore (index: ADDR LEN T0 T1 FILE). Plain
syscalls through ctypes; the attach target's BTF id comes from /sys/kernel/btf/vmlinux read here."""
import ctypes, os, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
kr = __import__('kcore-read')

from bpfsys import bpf
PROG_LOAD, RAW_TRACEPOINT_OPEN = 5, 17
PROG_TYPE_TRACING, TRACE_FENTRY, TRACE_FEXIT, MODIFY_RETURN = 26, 24, 25, 26


def func_ids(names):
    """BTF FUNC ids of these functions in vmlinux's BTF."""
    d = open('/sys/kernel/btf/vmlinux', 'rb').read()
    magic, _, _, hdr_len, type_off, type_len, str_off, _ = struct.unpack_from('<HBBIIIII', d, 0)
    assert magic == 0xeb9f
    types, strs = hdr_len + type_off, hdr_len + str_off
    extra = {1: lambda v: 4, 3: lambda v: 12, 4: lambda v: 12 * v, 5: lambda v: 12 * v, 6: lambda v: 8 * v,
             13: lambda v: 8 * v, 14: lambda v: 4, 15: lambda v: 12 * v, 17: lambda v: 4, 19: lambda v: 12 * v}
    want, found, pos, tid = set(names), {}, types, 1
    while pos < types + type_len:
        name_off, info, _ = struct.unpack_from('<III', d, pos)
        kind, vlen = (info >> 24) & 0x1f, info & 0xffff
        if kind == 12:
            end = d.index(b'\0', strs + name_off)
            n = d[strs + name_off:end].decode()
            if n in want:
                found[n] = tid
        pos += 12 + extra.get(kind, lambda v: 0)(vlen)
        tid += 1
    return found

def load(attach_type, btf_id, name):
    insns = struct.pack('<BBhi', 0xb7, 0, 0, 0) + struct.pack('<BBhi', 0x95, 0, 0, 0)    # r0 = 0; exit
    ins = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(b'GPL')
    attr = struct.pack('<IIQQIIQII16sIIIIQ', PROG_TYPE_TRACING, 2, ctypes.addressof(ins), ctypes.addressof(lic),
                       0, 0, 0, 0, 0, name.encode()[:15], 0, attach_type, 0, 0, 0)
    # attach_btf_id at offset 108 (after prog_btf_fd, func_info_rec_size, func_info, func_info_cnt,
    # line_info_rec_size, line_info, line_info_cnt)
    attr = attr[:72] + b'\0' * 36 + struct.pack('<II', btf_id, 0)
    return bpf(PROG_LOAD, attr)

def attach(prog):
    return bpf(RAW_TRACEPOINT_OPEN, struct.pack('<QI', 0, prog))

def trampolines():
    """Every bpf_trampoline_* image kallsyms lists: found with bytes.find (splitting 120k lines in Python cost
    seconds a read under TCG)."""
    d, out, i = open('/proc/kallsyms', 'rb').read(), [], 0
    while True:
        i = d.find(b' bpf_trampoline_', i)
        if i < 0:
            return out
        start, end = d.rfind(b'\n', 0, i) + 1, d.find(b'\n', i)
        f = d[start:end if end >= 0 else len(d)].split()
        if len(f) >= 4 and f[3] == b'[bpf]':
            out.append((int(f[0], 16), f[2].decode()))
        i = end if end >= 0 else len(d)

def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    kdir = os.path.join(out, 'kcore')
    os.makedirs(kdir, exist_ok=True)
    # not vfs_write or ksys_write: the kprobes churn, running beside this one, puts its kretprobes there (ftrace
    # sites). Five functions a round: a kallsyms read (~5 s on 6.12 under TCG) per round, so per ten cycles
    names = os.environ.get('FENTRY_FUNCS', 'vfs_read do_sys_openat2 vfs_open vfs_getattr do_filp_open').split()
    # fmod_ret attaches only where the kernel allows a return to be changed (error-injection sites, LSM hooks):
    # security_file_open, an LSM hook the round's open runs through, on a trampoline of its own (FMODRET=0: none)
    fmodret = os.environ.get('FMODRET_FUNC', 'security_file_open') if os.environ.get('FMODRET', '1') != '0' else None
    ids = func_ids(names + ([fmodret] if fmodret else []))
    names = [fn for fn in names if fn in ids]
    if fmodret and fmodret not in ids:
        sys.exit('churn: no BTF FUNC %s for fmod_ret' % fmodret)
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = kr.segments(f)
    ix = open(os.path.join(kdir, 'index'), 'a')
    progs = []
    for fn in names:
        progs.append(load(TRACE_FENTRY, ids[fn], 'ptf_fentry'))
        progs.append(load(TRACE_FEXIT, ids[fn], 'ptf_fexit'))
    if fmodret:
        progs.append(load(MODIFY_RETURN, ids[fmodret], 'ptf_fmodret'))
    cycles = 0
    phase = kr.Phases()
    i = -1
    while cycles < n:
        i += 1
        links = []
        for p in progs:                  # attach one by one: each rewrites its function's trampoline
            links.append(attach(p))
            cycles += 1
        phase('attach')
        os.stat('/etc/hostname'); open('/etc/hostname').read()        # run through them
        live = trampolines()
        phase('kallsyms')
        for addr, name in live:
            kr.dump(f, segs, addr, 4096, kdir, '%s.%d.%x' % (name, i, addr), ix)
        ix.flush()
        phase('copies')
        for l in links:                  # detach: rewrites, the last one of a function frees its trampoline
            os.close(l)
        phase('detach')
    print('churn: %d fentry/fexit attach/detach cycles on %s%s; %s' % (cycles, ' '.join(names),
                                                                       ', fmod_ret on ' + fmodret if fmodret else '', phase))

main()
