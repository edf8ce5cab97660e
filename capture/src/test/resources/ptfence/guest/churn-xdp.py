#!/usr/bin/env python3
"""churn-xdp.py N OUT: N changes of the XDP dispatcher on a veth pair, in turn through netlink (IFLA_XDP attach,
replace, detach: what `ip link set dev X xdp` and libbpf's bpf_xdp_attach do) and through bpf() links (create,
update, close), with new programs loaded and old ones closed (freed) as it goes. Right after each change, while that
version is live, the dispatcher page is copied from /proc/kcore by kcore-read.py's reader (no project code) into
OUT/kcore (index: ADDR LEN T0 T1 FILE). Plain syscalls through ctypes: no libbpf, no bpftool."""
import ctypes, os, socket, struct, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
kr = __import__('kcore-read')

from bpfsys import bpf
PROG_LOAD, LINK_CREATE, LINK_UPDATE = 5, 28, 29
PROG_TYPE_XDP, ATTACH_XDP = 6, 37
XDP_FLAGS_DRV_MODE = 4


def load(ret, name):
    insns = struct.pack('<BBhi', 0xb7, 0, 0, ret) + struct.pack('<BBhi', 0x95, 0, 0, 0)   # r0 = ret; exit
    ins = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(b'GPL')
    attr = struct.pack('<IIQQIIQII16sII', PROG_TYPE_XDP, 2, ctypes.addressof(ins), ctypes.addressof(lic), 0, 0, 0,
                       0, 0, name.encode()[:15], 0, ATTACH_XDP)
    return bpf(PROG_LOAD, attr)

def link_create(prog, ifindex):
    return bpf(LINK_CREATE, struct.pack('<IIII', prog, ifindex, ATTACH_XDP, 0))

def link_update(link, prog):
    bpf(LINK_UPDATE, struct.pack('<IIII', link, prog, 0, 0))

def netlink_xdp(ifindex, fd):
    """RTM_SETLINK with IFLA_XDP {IFLA_XDP_FD fd, IFLA_XDP_FLAGS DRV_MODE}; fd -1 detaches."""
    inner = struct.pack('<HHi', 8, 1, fd) + struct.pack('<HHI', 8, 3, XDP_FLAGS_DRV_MODE)
    xdp = struct.pack('<HH', 4 + len(inner), 43 | 0x8000) + inner
    body = struct.pack('<BBHiII', socket.AF_UNSPEC, 0, 0, ifindex, 0, 0) + xdp
    msg = struct.pack('<IHHII', 16 + len(body), 19, 0x1 | 0x4, 1, 0) + body
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    try:
        s.bind((0, 0))
        s.send(msg)
        ack = s.recv(4096)
        err, = struct.unpack_from('<i', ack, 16)
        if err:
            raise OSError(-err, 'IFLA_XDP on %d: %s' % (ifindex, os.strerror(-err)))
    finally:
        s.close()

def dispatcher():
    for line in open('/proc/kallsyms'):
        f = line.split()
        if len(f) >= 4 and f[2] == 'bpf_dispatcher_xdp' and f[3] == '[bpf]':
            return int(f[0], 16)
    return None

def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    kdir = os.path.join(out, 'kcore')
    os.makedirs(kdir, exist_ok=True)
    subprocess.run(['ip', 'link', 'add', 'ptfx0', 'type', 'veth', 'peer', 'name', 'ptfx1'], check=True)
    subprocess.run(['ip', 'link', 'set', 'ptfx0', 'up'], check=True)
    subprocess.run(['ip', 'link', 'set', 'ptfx1', 'up'], check=True)
    ifindex = socket.if_nametoindex('ptfx0')
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = kr.segments(f)
    ix = open(os.path.join(kdir, 'index'), 'a')
    progs = [load(2, 'ptf_xdp_a'), load(1, 'ptf_xdp_b')]
    changes, addr, link = 0, None, None
    steps = ['nl_attach', 'nl_replace', 'nl_detach', 'link_create', 'link_update', 'link_close']
    counts, phase = {}, kr.Phases()
    while changes < n:
        step = steps[changes % len(steps)]
        a, b = progs[-2], progs[-1]
        if step == 'nl_attach': netlink_xdp(ifindex, a)
        elif step == 'nl_replace': netlink_xdp(ifindex, b)
        elif step == 'nl_detach': netlink_xdp(ifindex, -1)
        elif step == 'link_create': link = link_create(a, ifindex)
        elif step == 'link_update': link_update(link, b)
        else:
            os.close(link)
            # new programs for the next round; the old ones are freed (their dispatcher entries gone already)
            for p in progs: os.close(p)
            progs = [load(2, 'ptf_xdp_a'), load(1, 'ptf_xdp_b')]
        changes += 1
        counts[step] = counts.get(step, 0) + 1
        phase(step)
        addr = addr or dispatcher()
        if addr is None or step in ('nl_detach', 'link_close'):
            continue   # nothing dispatches through it then: no version to compare
        kr.dump(f, segs, addr, 4096, kdir, 'dispatcher.%d.%x' % (changes, addr), ix)
        ix.flush()
        phase('copies')
    subprocess.run(['ip', 'link', 'del', 'ptfx0'])
    print('churn: %d dispatcher changes %s; %s' % (changes, counts, phase))

main()
