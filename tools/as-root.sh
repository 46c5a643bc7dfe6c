#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Run a command as root: directly when we are root, through sudo where it exists,
# otherwise say plainly that root is needed.
if [ "$(id -u)" = 0 ]; then
	exec "$@"
elif command -v sudo >/dev/null 2>&1; then
	exec sudo -E "$@"
fi
echo "burstmeter: '$1' needs root (BPF and cgroups), and there is no sudo here: run it as root" >&2
exit 1
