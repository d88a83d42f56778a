#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Regenerate vmlinux/x86/vmlinux.h from the running kernel's BTF.
# CO-RE relocations make the result usable on other kernels too; regenerate
# only when a newer kernel type is needed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
btf=${1:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable: kernel built without CONFIG_DEBUG_INFO_BTF?" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "gen-vmlinux: bpftool not found: apt-get install bpftool" >&2; exit 1; }
out="$here/vmlinux/x86/vmlinux.h"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
