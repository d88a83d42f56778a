#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Install, with apt-get, whatever the build and the tests need and this
# machine lacks. Quiet and quick when everything is already there.
#   tools/install-deps.sh          build + test packages (containers, the
#                                  qemu BPF LSM suite, promtool, tmux, ...)
#   tools/install-deps.sh bench    also auditd (the benchmark's baseline) and autoconf
#                                  (the ./configure workload, tools/bench/workloads.py)
set -euo pipefail

pkgs=(make gcc clang llvm pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
      libyaml-dev libpcre2-dev libseccomp-dev libssl-dev libjansson-dev python3 util-linux procps
      # the HTTP/WebSocket API (userspace/api/)
      libwebsockets-dev
      libclang-rt-14-dev
      # tests: real containers, the BPF LSM kernel under qemu, metrics and
      # unit checkers, terminals, packaging
      podman runc busybox-static qemu-system-x86 cpio prometheus tmux jq
      man-db systemd dpkg-dev fakeroot logrotate rsyslog e2fsprogs btrfs-progs libc6-i386 curl
      # the approval page in a real browser (test_api)
      chromium
      # make test validates every record the suites write (docs/events.schema.json)
      python3-jsonschema python3-yaml)
for extra in "$@"; do
	case "$extra" in
	vm)    ;;	# part of the default set now
	bench) pkgs+=(auditd valgrind autoconf) ;;
	*)     echo "install-deps: unknown group '$extra' (vm, bench)" >&2; exit 2 ;;
	esac
done

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
