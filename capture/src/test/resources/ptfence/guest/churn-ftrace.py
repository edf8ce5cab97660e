#!/usr/bin/env python3
"""churn-ftrace.py N OUT: N rounds of ftrace users created and removed, each allocating an ftrace trampoline of its own
and freeing it: in odd rounds a trace instance (instances/ptf_ftrace) with the function tracer filtered to one function,
in even ones the function_graph tracer at the top level filtered the same way (the instance where the kernel takes
function_graph there: 6.1 does not). The function is one no other lane traces (FTRACE_FUNC, default
__x64_sys_getpid). While each user is live, every ftrace trampoline kallsyms lists ([__builtin__ftrace]) is copied from
/proc/kcore by kcore-read.py's reader (no project code) into OUT/kcore (index: ADDR LEN T0 T1 FILE)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
kr = __import__('kcore-read')

T = '/sys/kernel/tracing'


def write(path, text):
    with open(path, 'w') as f:
        f.write(text + '\n')


def set_filter(where, func):
    write(os.path.join(where, 'set_ftrace_filter'), func)
    got = open(os.path.join(where, 'set_ftrace_filter')).read().split()
    if got != [func]:
        sys.exit('churn-ftrace: %s/set_ftrace_filter holds %r after writing %s' % (where, ' '.join(got)[:80], func))


def trampolines():
    out = []
    for line in open('/proc/kallsyms'):
        if line.rstrip().endswith('[__builtin__ftrace]'):
            f = line.split()
            out.append((int(f[0], 16), f[2]))
    return out


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    kdir = os.path.join(out, 'kcore')
    os.makedirs(kdir, exist_ok=True)
    func = os.environ.get('FTRACE_FUNC', '__do_sys_getpid')
    if func not in (l.split()[0] for l in open(os.path.join(T, 'available_filter_functions'))):
        sys.exit('churn-ftrace: %s is not a function ftrace can trace here' % func)
    f = open('/proc/kcore', 'rb', buffering=0)
    segs = kr.segments(f)
    ix = open(os.path.join(kdir, 'index'), 'a')
    inst = os.path.join(T, 'instances', 'ptf_ftrace')
    kinds = {'function': 0, 'function_graph': 0}
    copies = 0
    for i in range(1, n + 1):
        graph = i % 2 == 0
        tracer = 'function_graph' if graph else 'function'
        os.mkdir(inst)
        where = inst
        if graph and 'function_graph' not in open(os.path.join(inst, 'available_tracers')).read().split():
            where = T  # this kernel gives function_graph to the top level only
        set_filter(where, func)
        write(os.path.join(where, 'current_tracer'), tracer)
        if not any(l.split()[0] == func for l in open(os.path.join(T, 'enabled_functions'))):
            sys.exit('churn-ftrace: %s is not in enabled_functions with the %s tracer on' % (func, tracer))
        kinds[tracer] += 1
        os.getpid()                                    # through the traced function
        for addr, name in trampolines():
            kr.dump(f, segs, addr, 4096, kdir, '%s.%d.%x' % (name, i, addr), ix)
            copies += 1
        ix.flush()
        write(os.path.join(where, 'current_tracer'), 'nop')
        write(os.path.join(where, 'set_ftrace_filter'), '')
        os.rmdir(inst)
    print('churn: %d ftrace users on %s (function %d, function_graph %d), %d kcore copies of ftrace trampolines'
          % (n, func, kinds['function'], kinds['function_graph'], copies))


main()
