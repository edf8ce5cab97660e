#!/bin/bash
# churn-modules.sh N OUT: loads and unloads $MODS (default: dummy veth) N times; right after each load, while the
# module is live, the independent reader (kcore-read.py) copies [address, address+size) from /proc/kcore, with
# address and size as /proc/modules gives them, into OUT/kcore/<module>.<round>.<address>.
n=$1 out=$2
mods=${MODS:-dummy veth}
here=$(cd "$(dirname "$0")" && pwd)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd   # a bare devtmpfs has none: <(...) and coproc need it
fail=0
mkdir -p "$out/kcore"
coproc KR { python3 "$here/kcore-read.py" --serve; }
for i in $(seq "$n"); do
  for m in $mods; do modprobe "$m" || echo "churn: modprobe $m failed" >&2; done
  for m in $mods; do
    read -r _ size _ _ _ addr _ < <(grep "^$m " /proc/modules)
    echo "${addr#0x} $size $out/kcore/$m.$i.${addr#0x}" >&"${KR[1]}"
    read -r ans <&"${KR[0]}"
    [ "$ans" = ok ] || fail=1; [ "$ans" = ok ] || echo "churn: kcore read of $m: $ans" >&2
  done
  for m in $mods; do rmmod "$m" || echo "churn: rmmod $m failed" >&2; done
done
echo "churn: $n rounds of $mods"
exit $fail
