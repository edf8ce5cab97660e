#!/usr/bin/env python3
"""kprobe-pmu.py FUNC+OFF RETFUNC: kprobes opened through the kprobe PMU (perf_event_open, no tracefs), for the
kprobe churn's rounds that do not use kprobe_events. Reads commands on stdin, answers 'ok' (or 'error ...'):
'open' opens a kprobe at FUNC+OFF and a kretprobe on RETFUNC (the PMU's retprobe bit), CPU-wide on the first CPU,
enabled at once; 'close' closes both (the kernel unregisters them). Plain syscalls through ctypes."""
import ctypes, os, struct, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpfsys import libc

NR_PERF_EVENT_OPEN = 298
PMU = '/sys/bus/event_source/devices/kprobe/'


def retprobe_bit():
    # format/retprobe reads "config:0": the bit of attr.config that makes the probe a kretprobe
    spec = open(PMU + 'format/retprobe').read().strip()
    return 1 << int(spec.split(':')[1])


def open_probe(kind, func, off, config):
    name = ctypes.create_string_buffer(func.encode())
    attr = bytearray(128)
    struct.pack_into('<IIQQ', attr, 0, kind, 128, config, 1)
    struct.pack_into('<QQ', attr, 56, ctypes.addressof(name), off)
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd = libc.syscall(NR_PERF_EVENT_OPEN, buf, -1, min(os.sched_getaffinity(0)), -1, 0)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, 'perf_event_open(kprobe %s+%d): %s' % (func, off, os.strerror(e)))
    return fd


def main():
    func, off = sys.argv[1].split('+')
    retfunc = sys.argv[2]
    kind = int(open(PMU + 'type').read())
    ret = retprobe_bit()
    fds = []
    for line in sys.stdin:
        cmd = line.strip()
        try:
            if cmd == 'open':
                fds = [open_probe(kind, func, int(off), 0), open_probe(kind, retfunc, 0, ret)]
            elif cmd == 'close':
                for fd in fds:
                    os.close(fd)
                fds = []
            else:
                raise ValueError('unknown command %r' % cmd)
            print('ok', flush=True)
        except (OSError, ValueError) as e:
            print('error %s' % e, flush=True)


if __name__ == '__main__':
    main()
