#!/bin/bash
# churn-kprobes.sh N OUT: registers and unregisters kprobes through tracefs N times: one at an offset into a function
# (an insn slot, kprobe_insn_page; enabled, so the optimizer may move it to a kprobe_optinsn_page), a kretprobe,
# and every 4th round waits for the optimizer. While they are live, the independent reader (kcore-read.py) copies
# every page kallsyms lists under [__builtin__kprobes] and every ftrace trampoline ([__builtin__ftrace]: the
# kretprobe at a function entry rides on ftrace) into OUT/kcore (index: see kcore-read.py).
n=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd   # a bare devtmpfs has none: <(...) and coproc need it
fail=0
T=/sys/kernel/tracing
mkdir -p "$out/kcore"
coproc KR { python3 "$here/kcore-read.py" --serve; }
# the first offset past the function's ftrace site that is an instruction boundary
fn=${KPROBE_FUNC:-vfs_read} site=
for off in 9 8 5 10 11 12 13 14 15 16; do
  if echo "p:ptf_try $fn+$off" >> $T/kprobe_events 2>/dev/null; then site="$fn+$off"; echo "-:ptf_try" >> $T/kprobe_events; break; fi
done
[ -n "$site" ] || { echo "churn: no kprobe site in $fn" >&2; exit 1; }
echo "churn: kprobe at $site"
# where the time goes (microseconds per phase, summed over the rounds): printed at the end
declare -A spent; last=${EPOCHREALTIME/./}
phase() { local now=${EPOCHREALTIME/./}; spent[$1]=$(( ${spent[$1]:-0} + now - last )); last=$now; }
for i in $(seq "$n"); do
  echo "p:ptf_kp $site" >> $T/kprobe_events || echo "churn: register $site failed" >&2
  echo "r:ptf_kr ${KRETPROBE_FUNC:-vfs_write}" >> $T/kprobe_events || echo "churn: register kretprobe failed" >&2
  phase register
  echo 1 > $T/events/kprobes/ptf_kp/enable; echo 1 > $T/events/kprobes/ptf_kr/enable
  phase enable
  read -r _ < /etc/hostname; echo > /dev/null               # run through the probes (builtins: no fork)
  if [ $((i % 4)) = 0 ]; then
    sleep 0.3                                               # the optimizer's delay
    grep -c OPTIMIZED /sys/kernel/debug/kprobes/list >> "$out/optimized"
    while read -r addr _ name _; do
      echo "$addr 4096 $out/kcore/$name.$i.$addr" >&"${KR[1]}"
      read -r ans <&"${KR[0]}"
      [ "$ans" = ok ] || fail=1; [ "$ans" = ok ] || echo "churn: kcore read of $name: $ans" >&2
    done < <(grep -E '\[__builtin__(kprobes|ftrace)\]' /proc/kallsyms)
  fi
  phase copies
  echo 0 > $T/events/kprobes/ptf_kp/enable; echo 0 > $T/events/kprobes/ptf_kr/enable
  phase disable
  echo "-:ptf_kp" >> $T/kprobe_events; echo "-:ptf_kr" >> $T/kprobe_events
  phase unregister
done
echo "churn: $n rounds of kprobes at $site; ms spent: $(for k in "${!spent[@]}"; do printf '%s=%d ' $k $((spent[$k] / 1000)); done)"
exit $fail
