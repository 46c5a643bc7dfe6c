#!/usr/bin/env bash
# Boot Debian's 6.1 cloud kernel under qemu (TCG) with a busybox initramfs and run
# PAYLOAD_DIR/vm-tests.sh inside it: a second, older kernel for the BPF programs.
# Usage: tests/vm/vm.sh BUILD_DIR PAYLOAD_DIR   (env: VM_TIMEOUT seconds, default 900)
# Exit status: the payload's, 1 if the VM never reported one, 2 on bad usage.
set -euo pipefail

die() { echo "vm.sh: $*" >&2; exit 2; }
fail() { echo "vm.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: vm.sh BUILD_DIR PAYLOAD_DIR"
[ -d "$2" ] || die "payload dir not found: $2"
[ -f "$2/vm-tests.sh" ] || die "payload has no vm-tests.sh: $2"
payload=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$1/vm
cache=$out/cache
timeout_s=${VM_TIMEOUT:-900}
mkdir -p "$cache"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Host tools; busybox-static because the initramfs has no libc of its own.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
	echo "vm.sh: installing ${need[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
		fail "apt-get install ${need[*]} failed"
fi

# The metapackage names the current ABI (linux-image-6.1.0-NN-cloud-amd64); follow it
# so security updates are picked up, but reuse a cached .deb without touching the network.
pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$pkg" ] || fail "cannot resolve linux-image-cloud-amd64 (apt-get update?)"
deb=$(ls "$cache/${pkg}"_*.deb 2>/dev/null | tail -n1 || true)
if [ -z "$deb" ]; then
	echo "vm.sh: downloading $pkg" >&2
	rm -f "$cache"/linux-image-* # a kernel ABI bump leaves the old one unused
	(cd "$cache" && apt-get download -qq "$pkg" 2>/dev/null) || fail "apt-get download $pkg failed"
	deb=$(ls "$cache/${pkg}"_*.deb | tail -n1)
fi
kernel=$cache/$pkg.vmlinuz
# brd (a ramdisk, built as a module): a block device for the I/O tests, the VM has no disk
brd=$cache/$pkg.brd.ko
if [ ! -s "$kernel" ] || [ ! -s "$brd" ]; then
	dpkg-deb -x "$deb" "$tmp/deb"
	cp "$tmp/deb"/boot/vmlinuz-* "$kernel"
	cp "$tmp/deb"/lib/modules/*/kernel/drivers/block/brd.ko "$brd" 2>/dev/null || true
	rm -rf "$tmp/deb"
fi

# initramfs: busybox applets, /init, the payload, and the shared libraries its ELFs need.
root=$tmp/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc,var/tmp}
# a workspace under /var/tmp (test_sandbox) lives on a node as on any Debian
chmod 1777 "$root/tmp" "$root/var/tmp"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh" # /init installs the other applet symlinks (faster than ~400 ln here)
install -m 755 "$here/init" "$root/init"
[ -s "$brd" ] && mkdir -p "$root/lib" && cp "$brd" "$root/lib/brd.ko"
cp -a "$payload" "$root/payload"
find "$root/payload" -type f -print0 | while IFS= read -r -d '' f; do
	[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	# Static binaries make ldd fail; that just means nothing to copy.
	ldd "$f" 2>/dev/null | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' || true
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$tmp/initrd.gz"

# Forward the host's CI flag: the kernel passes unknown key=value arguments to init's env.
append="console=ttyS0 ${VM_KERNEL_ARGS:-quiet} panic=-1"
[[ "${CI:-}" =~ ^[A-Za-z0-9_.-]+$ ]] && append+=" CI=$CI"

# One host thread runs both vCPUs in turn (thread=single). With a thread per vCPU
# (QEMU 7.2's default), unregistering a tracepoint program -- text_poke_bp() on the
# sched_switch static call -- sometimes ended with both vCPUs looping in exc_int3 with
# interrupts off, for good, apparently on a stale translation of the int3 (seen with the
# QEMU monitor, symbols from the guest's kallsyms; tests/vm/README.md).
accel=${VM_ACCEL:-tcg,thread=single}
log=$out/console.log
set +e
timeout --foreground -k 5 "$timeout_s" qemu-system-x86_64 -accel "$accel" -m 1024 -smp 2 -nographic -no-reboot -nic none ${VM_QEMU_ARGS:-} \
	-kernel "$kernel" -initrd "$tmp/initrd.gz" -append "$append" </dev/null | tee "$log"
qemu_rc=${PIPESTATUS[0]}
set -e

status=$(tr -d '\r' <"$log" | sed -n 's/.*BM_VM_EXIT=\([0-9][0-9]*\).*/\1/p' | tail -n1)
if [ -z "$status" ]; then
	reason="boot failure, kernel panic or interrupted"
	[ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ] && reason="timeout after ${timeout_s}s"
	echo "vm.sh: no BM_VM_EXIT marker ($reason, qemu status $qemu_rc); see $log" >&2
	exit 1
fi
exit "$status"
