#!/bin/bash
# churn-all.sh OUT KIND=N...: runs the named churns under one ptrec (its start costs minutes under TCG on a loaded
# machine): modules=N rounds (churn-modules.py), kprobes=N rounds (churn-kprobes.sh), fentry=N attach/detach cycles
# (churn-fentry.py), xdp=N dispatcher changes (churn-xdp.py), statickeys=N static-key flips (churn-statickeys.py, a
# lane of its own: its own tracepoints and module, nbd), ftrace=N ftrace users made and removed (churn-ftrace.py: a
# trace instance's function tracer, function_graph, each on a function of its own), bpf=N BPF programs loaded and closed by each of two churns
# ($CHURN_BPF, a command line run in OUT/bpf: BpfChurnCheck's). The lanes run at once: modules then xdp, kprobes,
# fentry, statickeys, bpf. Much of a churn's time is the kernel waiting (RCU grace periods, ftrace's tasks-RCU, the
# kprobe optimizer), which the other lanes fill. The lanes keep apart what would interfere: modules and xdp both use veth (a veth pair
# pins the module), and the fentry churn stays off the kprobes churn's functions (vfs_write's ftrace site carries
# the kretprobe). CHURN_SERIAL=1 runs them one after another. Each kind leaves its kcore copies in OUT/<kind>/kcore
# (its own index) and its exit status in OUT/<kind>.rc; $CHURN_TIMES (else OUT/times) says when each ran (guest
# uptime).
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
times=${CHURN_TIMES:-$out/times}
declare -A n
for spec in "$@"; do n[${spec%%=*}]=${spec#*=}; done
up() { cut -d' ' -f1 /proc/uptime; }
run() {
  local kind=$1 count=${n[$1]}
  [ -n "$count" ] || return 0
  mkdir -p "$out/$kind/kcore"
  local t0; t0=$(up)
  case $kind in
    modules) python3 "$here/churn-modules.py" "$count" "$out/$kind" ;;
    kprobes) bash "$here/churn-kprobes.sh" "$count" "$out/$kind" ;;
    fentry) python3 "$here/churn-fentry.py" "$count" "$out/$kind" ;;
    xdp) python3 "$here/churn-xdp.py" "$count" "$out/$kind" ;;
    statickeys) python3 "$here/churn-statickeys.py" "$count" "$out/$kind" ;;
    ftrace) python3 "$here/churn-ftrace.py" "$count" "$out/$kind" ;;
    bpf) (cd "$out/$kind" && eval "$CHURN_BPF" > ns) ;;
  esac
  echo $? > "$out/$kind.rc"
  echo "$kind=$count rc $(cat "$out/$kind.rc") from $t0 to $(up) s" >> "$times"
  echo "churn-all: $kind=$count rc $(cat "$out/$kind.rc") from $t0 to $(up) s"
}
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd   # a bare devtmpfs has none: <(...) and coproc need it (once, not per lane)
for kind in "${!n[@]}"; do
  case $kind in modules|kprobes|fentry|xdp|statickeys|ftrace|bpf) ;; *) echo "churn-all: unknown churn $kind" >&2; exit 2 ;; esac
done
echo "lanes start at $(up) s" >> "$times"
if [ -n "$CHURN_SERIAL" ]; then
  for kind in modules kprobes fentry xdp statickeys ftrace bpf; do run $kind; done
else
  { run modules; run xdp; } &
  run kprobes &
  run fentry &
  run statickeys &
  run ftrace &
  run bpf &
  wait
fi
echo "lanes end at $(up) s" >> "$times"
