#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Build the OCI image offline with buildah: FROM scratch plus burstmeter, bm-agent, bm-shim
# (static) and the shared libraries they load (ldd), tagged with burstmeter's version, and an
# OCI archive of it for nodes to import (ctr -n k8s.io images import ...).
# Usage: tools/image.sh BUILD_DIR [NAME]   (NAME default localhost/burstmeter; the archive is
# BUILD_DIR/<last part of NAME>-VERSION.oci.tar). The image that NAME:VERSION named before is
# removed once the new one takes the tag, unless something still uses it.
set -eu

O=${1:?usage: tools/image.sh BUILD_DIR [NAME]}
name=${2:-localhost/burstmeter}
bin=$O/burstmeter
ctx=$O/image
root=$ctx/rootfs

for tool in buildah podman ldd; do
	command -v "$tool" >/dev/null || { echo "burstmeter: $tool is missing: run tools/deps.sh deploy" >&2; exit 1; }
done
version=$("$bin" --version | awk '{print $2}')
[ -n "$version" ] || { echo "burstmeter: cannot tell the version of $bin" >&2; exit 1; }

rm -rf "$ctx"
mkdir -p "$root/usr/local/bin" "$root/etc/burstmeter" "$root/run/burstmeter" "$root/var/lib/burstmeter" \
	"$root/sys/fs/bpf" "$root/proc" "$root/dev"
install -m 0755 "$bin" "$O/bm-agent" "$O/bm-shim" "$root/usr/local/bin/"
# kubectl for podtenants' watch (deploy/kubernetes/podtenants.yaml): static, the build host's
if command -v kubectl >/dev/null; then
	install -m 0755 "$(command -v kubectl)" "$root/usr/local/bin/kubectl"
else
	echo "burstmeter: no kubectl here: the image's podtenants DaemonSet will not start" >&2
fi
# every library at the path the loader looks for it, symlinks resolved (no /lib -> usr/lib here)
# (ldd heads each file's list with "FILE:": not a library)
for lib in $(ldd "$bin" "$O/bm-agent" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# effects may run as nobody (run_as_non_root); glibc reads these files itself
printf 'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
mkdir -m 1777 "$root/tmp"
# `burstmeter top` through kubectl exec: the common terminals
for t in xterm xterm-256color screen screen-256color tmux-256color linux vt100 dumb; do
	for d in /lib/terminfo /usr/share/terminfo; do
		f=$d/$(printf %.1s "$t")/$t
		[ -f "$f" ] || continue
		mkdir -p "$root/usr/share/terminfo/$(printf %.1s "$t")"
		cp -L "$f" "$root/usr/share/terminfo/$(printf %.1s "$t")/"
		break
	done
done
cp deploy/Containerfile "$ctx/Containerfile"

# the image this tag names now: dangling (and ~16 MB lost) once the tag moves to the new one
old=$(podman image inspect --format '{{.Id}}' "$name:$version" 2>/dev/null || true)
buildah build --quiet --layers=false --network none --build-arg "VERSION=$version" \
	-f "$ctx/Containerfile" -t "$name:$version" "$ctx" >/dev/null
new=$(podman image inspect --format '{{.Id}}' "$name:$version")
# only when no tag is left on it (another name may share it) and no container uses it (rmi
# without --force refuses then)
if [ -n "$old" ] && [ "$old" != "$new" ] &&
	[ "$(podman image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
	podman rmi "$old" >/dev/null 2>&1 || echo "burstmeter: kept the previous $name:$version ($old): in use" >&2
fi
archive=$O/${name##*/}-$version.oci.tar
rm -f "$archive"
podman save --quiet --format oci-archive -o "$archive" "$name:$version"
size=$(podman image inspect --format '{{.Size}}' "$name:$version")
echo "burstmeter: built $name:$version, $((size / 1024)) KiB ($(du -k "$archive" | cut -f1) KiB as $archive)"
