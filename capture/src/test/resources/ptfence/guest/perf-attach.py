#!/usr/bin/env python3
"""perf-attach.py OUT: BPF programs run as perf event overflow handlers, held until SIGTERM, for ptrec to find
(issue 29: which event each program runs on, by ioctl and by link, type, config, pid/cpu). Attaches:
  - a perf_event program to cpu-clock, period 10000003, on the first CPU, by PERF_EVENT_IOC_SET_BPF;
  - a perf_event program to cpu-clock, period 20000003, on the last CPU, by BPF_LINK_CREATE (BPF_PERF_EVENT);
  - a perf_event program to page-faults, frequency 97, following this process (any CPU), by ioctl (not task-clock:
    the kernel turns a clock event's frequency into the period 1e9/freq, and keeps only that);
  - a kprobe program to a kprobe PMU event (perf_event_open, no tracefs) past a function's ftrace site, first CPU,
    by ioctl (an insn slot: at the entry it would ride on the kprobe ftrace ops and, held for the whole run, keep the
    kprobe lane's kretprobe from allocating and freeing that ops' trampoline each round);
  - a tracepoint program to sched:sched_process_exec (perf_event_open of the tracepoint's id, as bpftrace and BCC
    attach), first CPU, by ioctl.
Writes what it attached, as the kernel reports the ids (BPF_OBJ_GET_INFO_BY_FD), to OUT/expected, a line each:
PROG_ID TAG_HEX NAME VIA LINK_ID TYPE CONFIG PERIOD FREQ CPU PID TRACE_EVENT (system:name, - for none); then
OUT/ready. Plain syscalls through ctypes."""
import ctypes, os, signal, struct, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bpfsys import bpf, libc

PROG_LOAD, OBJ_GET_INFO_BY_FD, LINK_CREATE = 5, 15, 28
PROG_TYPE_KPROBE, PROG_TYPE_TRACEPOINT, PROG_TYPE_PERF_EVENT = 2, 5, 7
ATTACH_PERF_EVENT = 41
NR_PERF_EVENT_OPEN = 298
IOC_SET_BPF = 0x40042408
KPROBE_FUNC = b'__x64_sys_getppid'


def load(prog_type, name):
    insns = struct.pack('<BBhi', 0xb7, 0, 0, 0) + struct.pack('<BBhi', 0x95, 0, 0, 0)   # r0 = 0; exit
    ins = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(b'GPL')
    attr = struct.pack('<IIQQIIQII16sII', prog_type, 2, ctypes.addressof(ins), ctypes.addressof(lic), 0, 0, 0,
                       0, 0, name.encode()[:15], 0, 0)
    return bpf(PROG_LOAD, attr)


def info(fd, size):
    buf = ctypes.create_string_buffer(size)
    bpf(OBJ_GET_INFO_BY_FD, struct.pack('<IIQ', fd, size, ctypes.addressof(buf)))
    return buf.raw


def perf_event_open(type_, config, period, freq, pid, cpu, config1=0, config2=0):
    # perf_event_attr up to sig_data (PERF_ATTR_SIZE_VER7, 128 bytes); freq is flag bit 10
    attr = bytearray(128)
    struct.pack_into('<IIQQ', attr, 0, type_, 128, config, period)
    struct.pack_into('<Q', attr, 40, (1 << 10) if freq else 0)
    struct.pack_into('<QQ', attr, 56, config1, config2)
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd = libc.syscall(NR_PERF_EVENT_OPEN, buf, pid, cpu, -1, 0)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, 'perf_event_open(type %d config %d): %s' % (type_, config, os.strerror(e)))
    return fd


def ioctl_set_bpf(event, prog):
    if libc.ioctl(event, IOC_SET_BPF, prog) != 0:
        e = ctypes.get_errno()
        raise OSError(e, 'PERF_EVENT_IOC_SET_BPF: %s' % os.strerror(e))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))
    first, last = cpus[0], cpus[-1]
    kprobe_type = int(open('/sys/bus/event_source/devices/kprobe/type').read())
    func = ctypes.create_string_buffer(KPROBE_FUNC)
    # the first offset past the ftrace site that is an instruction boundary (EILSEQ elsewhere)
    for off in (9, 8, 5, 10, 11, 12, 13, 14, 15, 16):
        try:
            os.close(perf_event_open(kprobe_type, 0, 1, False, -1, first, ctypes.addressof(func), off))
            break
        except OSError:
            pass
    else:
        raise SystemExit('perf-attach: no kprobe site in %s' % KPROBE_FUNC.decode())
    tp_id = int(open('/sys/kernel/tracing/events/sched/sched_process_exec/id').read())
    # name, program type, (type, config, period, freq, pid, cpu, config1, config2), how, the trace event's name
    wanted = [('ptf_pa_ioctl', PROG_TYPE_PERF_EVENT, (1, 0, 10000003, False, -1, first, 0, 0), 'ioctl', '-'),
              ('ptf_pa_link', PROG_TYPE_PERF_EVENT, (1, 0, 20000003, False, -1, last, 0, 0), 'link', '-'),
              ('ptf_pa_task', PROG_TYPE_PERF_EVENT, (1, 2, 97, True, os.getpid(), -1, 0, 0), 'ioctl', '-'),
              ('ptf_pa_kprobe', PROG_TYPE_KPROBE, (kprobe_type, 0, 1, False, -1, first, ctypes.addressof(func), off),
               'ioctl', 'kprobes:' + KPROBE_FUNC.decode()),
              ('ptf_pa_tp', PROG_TYPE_TRACEPOINT, (2, tp_id, 1, False, -1, first, 0, 0), 'ioctl',
               'sched:sched_process_exec')]
    held, lines = [], []
    for name, prog_type, (t, c, period, freq, pid, cpu, c1, c2), via, trace_event in wanted:
        prog = load(prog_type, name)
        event = perf_event_open(t, c, period, freq, pid, cpu, c1, c2)
        link_id = 0
        if via == 'link':
            link = bpf(LINK_CREATE, struct.pack('<IIII', prog, event, ATTACH_PERF_EVENT, 0))
            link_id, = struct.unpack_from('<I', info(link, 16), 4)   # bpf_link_info: type, id, prog_id
            held.append(link)
        else:
            ioctl_set_bpf(event, prog)
        pinfo = info(prog, 80)                                         # bpf_prog_info: type, id, tag[8], ...
        prog_id, = struct.unpack_from('<I', pinfo, 4)
        held += [prog, event]
        lines.append('%d %s %s %s %d %d %d %d %d %d %d %s' % (prog_id, pinfo[8:16].hex(), name, via, link_id, t, c,
                                                              period, 1 if freq else 0, cpu, pid, trace_event))
    with open(os.path.join(out, 'expected'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    open(os.path.join(out, 'ready'), 'w').close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        os.getppid()                          # runs through the kprobe now and then
        time.sleep(0.5)


if __name__ == '__main__':
    main()
