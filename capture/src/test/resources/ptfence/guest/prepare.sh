#!/usr/bin/env bash
# prepare.sh META CACHE: make a stock Debian kernel bootable under QEMU, in CACHE/<package> (outside the repository).
# META is a package name (linux-image-amd64, linux-image-6.12-amd64): the package it depends on today is looked up now,
# never pinned (its ABI number changes with each security update and old ones leave the mirror). The package is
# downloaded and extracted, never installed; the ELF vmlinux is unpacked from vmlinuz (booted through PVH, it spares
# the slow emulated guest its decompression); the initramfs holds static busybox, the package's own virtio/9p/overlay
# modules and INIT. Idempotent; concurrent callers wait on a lock. Prints the directory as its last line; exits 3
# (with the reason) where the package or a tool cannot be had.
set -euo pipefail
meta=$1 cache=$2 init=$3
say() { echo "guest prepare: $*" >&2; }
cannot() { echo "guest prepare: $*" >&2; exit 3; }
for t in apt-cache apt-get dpkg-deb depmod gzip xz; do command -v $t >/dev/null || cannot "no $t on this machine"; done
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || cannot "no static /bin/busybox (package busybox-static)"
lookup() { apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
pkg=$(lookup)
if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 || true
  pkg=$(lookup)
fi
[ -n "$pkg" ] || cannot "no kernel package behind $meta in apt's lists"
dir=$cache/$pkg
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$dir/ready" ]; then
  say "downloading and extracting $pkg (not installed)"
  rm -rf "$dir/kernel" "$dir/dl" "$dir/vmlinux" "$dir/initramfs.cpio.gz"
  mkdir -p "$dir/dl"
  (cd "$dir/dl" && apt-get download -qq "$pkg" >/dev/null 2>&1) || cannot "apt-get download $pkg failed"
  dpkg-deb -x "$dir"/dl/*.deb "$dir/kernel"
  rm -rf "$dir/dl"
  kver=$(ls "$dir/kernel/lib/modules")
  depmod -b "$dir/kernel" "$kver"
  z=$dir/kernel/boot/vmlinuz-$kver
  # 6.1 packs its vmlinux with xz, 6.12 with zstd; where neither unpacks the guest boots vmlinuz (~10 s slower)
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$z" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ]; then
    tail -c +$((off + 1)) "$z" | xz -dc --single-stream > "$dir/vmlinux" 2>/dev/null || true
  else
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$z" | head -1 | cut -d: -f1 || true)
    [ -n "$off" ] && command -v zstd >/dev/null && { tail -c +$((off + 1)) "$z" | zstd -qdc > "$dir/vmlinux" 2>/dev/null || true; }
  fi
  [ -s "$dir/vmlinux" ] && [ "$(head -c 4 "$dir/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] || rm -f "$dir/vmlinux"
  # the initramfs: busybox, the modules that reach the host's root (in dependency order; busybox insmod wants them
  # uncompressed, 6.12 ships them .ko.xz), and /init
  r=$dir/initramfs; rm -rf "$r"; mkdir -p "$r"/{bin,dev,proc,sys,lower,upper,newroot,mods}
  cp /bin/busybox "$r/bin/"
  : > "$r/mods/order"
  for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet \
           9pnet_virtio 9p overlay; do
    f=$(find "$dir/kernel/lib/modules/$kver/kernel" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" \) | head -1)
    [ -n "$f" ] || continue # built in, or not in this version
    case $f in
      *.xz) xz -dc "$f" > "$r/mods/$m.ko" ;;
      *.zst) zstd -qdc "$f" > "$r/mods/$m.ko" ;;
      *) cp "$f" "$r/mods/" ;;
    esac
    echo "$m" >> "$r/mods/order"
  done
  cp "$init" "$r/init"; chmod 755 "$r/init"
  (cd "$r" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$dir/initramfs.cpio.gz"
  rm -rf "$r"
  echo "$kver" > "$dir/ready"
fi
echo "$dir"
