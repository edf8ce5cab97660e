#!/usr/bin/env python3
"""churn-modules.py N OUT: loads and unloads $MODS (default: dummy veth) N times with init_module/delete_module in
this one process (a modprobe per load cost ~1.8 s under TCG: a process start and modules.dep read over 9p); right
after each load, while the module is live, [address, address+size) as /proc/modules gives them is copied from
/proc/kcore by kcore-read.py's reader (no project code) into OUT/kcore/<module>.<round>.<address> (index: ADDR LEN T0
T1 FILE). Each module's file and dependencies come from `modprobe --show-depends`, once; dependencies stay loaded.
The names of the functions each module's file has in .init.text go to OUT/kcore/init-symbols ("MODULE NAME" lines):
the reference for the names the fence archives with the module's init text, read from the ELF file, not the kernel."""
import ctypes, lzma, os, struct, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
kr = __import__('kcore-read')

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_INIT_MODULE, NR_DELETE_MODULE, O_NONBLOCK = 175, 176, 0o4000


def image(path):
    data = open(path, 'rb').read()
    return lzma.decompress(data) if path.endswith('.xz') else data

def init_functions(elf):
    """Names of the STT_FUNC symbols defined in .init.text of an ELF64 little-endian relocatable file."""
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign, sh_entsize
    secs = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize) for i in range(shnum)]

    def string(table, off):
        at = secs[table][4] + off
        return elf[at:elf.index(b'\0', at)].decode()

    init = {i for i, s in enumerate(secs) if string(shstrndx, s[0]) == '.init.text'}
    names = []
    for s in secs:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        for at in range(s[4], s[4] + s[5], 24):
            st_name, st_info, _, st_shndx = struct.unpack_from('<IBBH', elf, at)
            if st_shndx in init and st_info & 0xf == 2 and st_name:
                names.append(string(s[6], st_name))
    return names

def init_module(name, data):
    buf = ctypes.create_string_buffer(data, len(data))
    if libc.syscall(NR_INIT_MODULE, buf, ctypes.c_ulong(len(data)), b'') < 0:
        e = ctypes.get_errno()
        raise OSError(e, 'init_module %s: %s' % (name, os.strerror(e)))

def delete_module(name):
    # blocking, as rmmod does: the call returns once the module's exit ran and its memory is freed
    if libc.syscall(NR_DELETE_MODULE, name.encode(), 0) < 0:
        e = ctypes.get_errno()
        raise OSError(e, 'delete_module %s: %s' % (name, os.strerror(e)))

def live(name):
    for line in open('/proc/modules'):
        f = line.split()
        if f[0] == name:
            return int(f[5], 16), int(f[1])
    raise OSError('%s not in /proc/modules' % name)

def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    mods = os.environ.get('MODS', 'dummy veth').split()
    kdir = os.path.join(out, 'kcore')
    os.makedirs(kdir, exist_ok=True)
    images = {}
    for m in mods:
        lines = subprocess.run(['modprobe', '--show-depends', m], check=True, capture_output=True,
                               text=True).stdout.split('\n')
        paths = [l.split()[1] for l in lines if l.startswith('insmod ')]
        for dep in paths[:-1]:
            subprocess.run(['insmod', dep])   # already loaded is fine
        images[m] = image(paths[-1])
    with open(os.path.join(kdir, 'init-symbols'), 'w') as out_syms:
        for m in mods:
            for name in init_functions(images[m]):
                out_syms.write('%s %s\n' % (m, name))
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = kr.segments(f)
    ix = open(os.path.join(kdir, 'index'), 'a')
    phase = kr.Phases()
    for i in range(1, n + 1):
        for m in mods:
            init_module(m, images[m])
        phase('load')
        for m in mods:
            addr, size = live(m)
            kr.dump(f, segs, addr, size, kdir, '%s.%d.%x' % (m, i, addr), ix)
        ix.flush()
        phase('copies')
        for m in mods:
            delete_module(m)
        phase('unload')
    print('churn: %d rounds of %s; %s' % (n, ' '.join(mods), phase))

main()
