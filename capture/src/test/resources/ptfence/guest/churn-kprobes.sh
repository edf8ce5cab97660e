#!/bin/bash
# churn-kprobes.sh N OUT: registers and unregisters kprobes N times: one at an offset into a function (an insn slot,
# kprobe_insn_page; enabled, so the optimizer may move it to a kprobe_optinsn_page) and a kretprobe, through tracefs
# (kprobe_events) in odd rounds and through the kprobe PMU (perf_event_open, kprobe-pmu.py) in even ones; every 4th
# round waits for the optimizer. While they are live, the independent reader (kcore-read.py) copies
# every page kallsyms lists under [__builtin__kprobes] and every ftrace trampoline ([__builtin__ftrace]: the
# kretprobe at a function entry rides on ftrace) into OUT/kcore (index: see kcore-read.py).
n=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd   # a bare devtmpfs has none: <(...) and coproc need it
fail=0
T=/sys/kernel/tracing
mkdir -p "$out/kcore"
coproc KR { python3 "$here/kcore-read.py" --serve; }
pmu() {  # a command to the kprobe PMU helper (fds 7 and 8, started below: bash keeps one coproc only)
  echo "$1" >&7; read -r ans <&8
  [ "$ans" = ok ] || { fail=1; echo "churn: kprobe PMU $1: $ans" >&2; }
}
# the first offset past the function's ftrace site that is an instruction boundary
fn=${KPROBE_FUNC:-vfs_read} site=
for off in 9 8 5 10 11 12 13 14 15 16; do
  if echo "p:ptf_try $fn+$off" >> $T/kprobe_events 2>/dev/null; then site="$fn+$off"; echo "-:ptf_try" >> $T/kprobe_events; break; fi
done
[ -n "$site" ] || { echo "churn: no kprobe site in $fn" >&2; exit 1; }
echo "churn: kprobe at $site"
mkfifo "$out/kp.in" "$out/kp.out"
python3 "$here/kprobe-pmu.py" "$site" "${KRETPROBE_FUNC:-vfs_write}" < "$out/kp.in" > "$out/kp.out" &
exec 7>"$out/kp.in" 8<"$out/kp.out"
pmu_rounds=0
# where the time goes (microseconds per phase, summed over the rounds): printed at the end
declare -A spent; last=${EPOCHREALTIME/./}
phase() { local now=${EPOCHREALTIME/./}; spent[$1]=$(( ${spent[$1]:-0} + now - last )); last=$now; }
for i in $(seq "$n"); do
  if [ $((i % 2)) = 0 ]; then
    pmu open; pmu_rounds=$((pmu_rounds + 1))                # registered and enabled as the events open
    phase register
  else
  echo "p:ptf_kp $site" >> $T/kprobe_events || echo "churn: register $site failed" >&2
  echo "r:ptf_kr ${KRETPROBE_FUNC:-vfs_write}" >> $T/kprobe_events || echo "churn: register kretprobe failed" >&2
  phase register
  echo 1 > $T/events/kprobes/ptf_kp/enable; echo 1 > $T/events/kprobes/ptf_kr/enable
  phase enable
  fi
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
  if [ $((i % 2)) = 0 ]; then
    pmu close
    phase unregister
    continue
  fi
  echo 0 > $T/events/kprobes/ptf_kp/enable; echo 0 > $T/events/kprobes/ptf_kr/enable
  phase disable
  echo "-:ptf_kp" >> $T/kprobe_events; echo "-:ptf_kr" >> $T/kprobe_events
  phase unregister
done
echo "churn: $n rounds of kprobes at $site ($pmu_rounds through the kprobe PMU); ms spent: $(for k in "${!spent[@]}"; do printf '%s=%d ' $k $((spent[$k] / 1000)); done)"
exit $fail
