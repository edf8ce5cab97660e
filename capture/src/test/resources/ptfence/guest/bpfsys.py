"""bpf(2) through ctypes for the guest churns (no libbpf, no bpftool): bpf(cmd, attr bytes) -> fd or result."""
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_BPF = 321


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), 'bpf(%d): %s' % (cmd, os.strerror(ctypes.get_errno())))
    return r
