#!/bin/bash
# churn-all.sh OUT KIND=N...: runs the named churns one after another under one ptrec (its start costs minutes under
# TCG on a loaded machine): modules=N (churn-modules.sh), kprobes=N (churn-kprobes.sh), fentry=N (churn-fentry.py),
# xdp=N (churn-xdp.py). Each leaves its kcore copies in OUT/kcore (one index) and its exit status in OUT/<kind>.rc.
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/kcore"
for spec in "$@"; do
  kind=${spec%%=*} n=${spec#*=}
  case $kind in
    modules) bash "$here/churn-modules.sh" "$n" "$out" ;;
    kprobes) bash "$here/churn-kprobes.sh" "$n" "$out" ;;
    fentry) python3 "$here/churn-fentry.py" "$n" "$out" ;;
    xdp) python3 "$here/churn-xdp.py" "$n" "$out" ;;
    *) echo "churn-all: unknown churn $kind" >&2; false ;;
  esac
  echo $? > "$out/$kind.rc"
  echo "churn-all: $kind=$n rc $(cat "$out/$kind.rc") at $(cut -d' ' -f1 /proc/uptime) s"
done
