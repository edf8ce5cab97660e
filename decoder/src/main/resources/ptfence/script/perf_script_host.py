# ptdecode -s: runs one of perf's Python scripts unchanged, as perf script's Python engine does.
#
# ptdecode (ptfence.script.PythonScript) starts this program with the script's path and arguments and talks to it
# over stdin/stdout, one call at a time: a request is one line of JSON {"h": handler, "a": [args]} (a sample's
# dictionaries travel as JSON, byte strings as {"b": "hex"}); the answer is one JSON line {"n": bytes, "itrace":
# options, "exit": status} followed by exactly n bytes: what the handler printed, which ptdecode puts where perf's
# stdout has it; "exit" where the script ended the run (sys.exit, or an exception, reported as perf reports it).
# The script sees the module perf_trace_context, perf_script_context and sys.argv as under perf.
import io
import json
import os
import sys
import threading
import traceback
import types

_proto_in = sys.stdin.buffer
_proto_out = sys.stdout.buffer
_state = {"itrace": None, "insn": b"", "srccode": (None, 0, None)}


def _set_itrace_options(ctx, opts):
    _state["itrace"] = opts
    return 0


def _sample_insn(ctx):
    return _state["insn"]


def _sample_srccode(ctx):
    return _state["srccode"]


def _context_module():
    m = types.ModuleType("perf_trace_context")
    m.perf_set_itrace_options = _set_itrace_options
    m.perf_sample_insn = _sample_insn
    m.perf_sample_srccode = _sample_srccode
    m.common_pc = lambda ctx: 0
    m.common_flags = lambda ctx: 0
    m.common_lock_depth = lambda ctx: 0
    return m


class _Null:
    """A tuple slot perf 6.1 leaves NULL (the lost count of a sample's "values"): printed as Python prints one."""

    def __repr__(self):
        return "<NULL>"


_NULL = _Null()


def _decode(v):
    if isinstance(v, dict):
        if len(v) == 1 and "b" in v:
            return bytes.fromhex(v["b"])
        if len(v) == 1 and "t" in v:
            return tuple(_decode(x) for x in v["t"])
        if len(v) == 1 and "null" in v:
            return _NULL
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _answer(text, itrace=None, exit=None):
    data = text.encode("utf-8", "surrogateescape")
    head = {"n": len(data)}
    if itrace is not None:
        head["itrace"] = itrace
    if exit is not None:
        head["exit"] = exit
    _proto_out.write((json.dumps(head) + "\n").encode())
    _proto_out.write(data)
    _proto_out.flush()


def _exit_status(e):
    """The status a SystemExit gives the process, as the interpreter turns it into one (perf: PyErr_Print)."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _print_error(script):
    """The traceback from the script's first frame on: perf's interpreter calls the script from C, not from here."""
    kind, value, tb = sys.exc_info()
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()


# perf's handler_call_die: PyErr_Print, then Py_FatalError, which aborts the process (status 128 + SIGABRT)
_HANDLER_DIED = 134


def _handler_died():
    sys.stderr.write("Fatal Python error: handler_call_die: problem in Python trace event handler\n"
                     "Python runtime state: initialized\n\n"
                     "Current thread 0x%016x (most recent call first):\n  <no Python frame>\n"
                     % threading.get_ident())
    sys.stderr.flush()


def main():
    script = sys.argv[1]
    sys.argv = [script] + sys.argv[2:]
    sys.modules["perf_trace_context"] = _context_module()
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    os.environ.setdefault("PERF_EXEC_PATH", "/usr/lib/perf-core")
    ns = {"__name__": "__main__", "__file__": script, "perf_script_context": object()}
    captured = io.StringIO()
    real_stdout = sys.stdout
    sys.stdout = captured
    exit = None
    try:
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec")
        exec(code, ns)
    except SystemExit as e:
        sys.stdout = real_stdout
        exit = _exit_status(e)
    except BaseException:
        sys.stdout = real_stdout
        _print_error(script)
        sys.stderr.write("Error running python script %s\n" % script)
        exit = 255  # perf script returns -1
    finally:
        sys.stdout = real_stdout
    _answer(captured.getvalue(), exit=exit)
    if exit is not None:
        return exit
    for line in _proto_in:
        req = json.loads(line)
        handler = req["h"]
        args = _decode(req.get("a", []))
        if "insn" in req:
            _state["insn"] = bytes.fromhex(req["insn"])
        fn = ns.get(handler)
        captured = io.StringIO()
        sys.stdout = captured
        try:
            if fn is not None:  # a handler the script does not define is not called, as under perf
                fn(*args)
        except SystemExit as e:
            sys.stdout = real_stdout
            exit = _exit_status(e)
        except BaseException:
            sys.stdout = real_stdout
            _print_error(script)
            _handler_died()
            exit = _HANDLER_DIED
        finally:
            sys.stdout = real_stdout
        _answer(captured.getvalue(), _state["itrace"] if handler == "trace_begin" else None, exit)
        if exit is not None:
            return exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
