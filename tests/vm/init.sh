#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=dash  # busybox ash: local is fine
# PID 1 of the test VM (tests/vm/run.sh puts it in the initramfs as /init).
# Mounts what execgate needs, runs /opt/execgate/cases/*.sh (those named by
# egvm.cases= on the kernel command line, or all), then powers off.
#
# Results go through /dev/kmsg, at a level the console prints: printk writes
# a record whole and synchronously, so a marker line is never torn by other
# output and is on the serial port before poweroff. One per case:
#   EGVM:RESULT <case> PASS|FAIL|SKIP <ms> <reason>
# and EGVM:DONE <count> last. Everything a case prints goes to the console
# too, between EGVM:BEGIN and EGVM:END lines.
/bin/busybox --install -s
export PATH=/opt/execgate:/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root TERM=dumb
export EG=/opt/execgate/execgate EG_HELPERS=/opt/execgate/helpers \
	EG_POLICIES=/opt/execgate/policy EG_LIB=/opt/execgate/lib.sh

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mount -t securityfs securityfs /sys/kernel/security
mount -t bpf -o mode=700 bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
hostname egvm

kmsg() {
	# <2>: above loglevel=3, so the console prints it
	echo "<2>$*" > /dev/kmsg
}

only=$(sed -n 's/.*egvm\.cases=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
selected() {
	[ -z "$only" ] && return 0
	for o in $only; do
		[ "$o" = "$1" ] && return 0
	done
	return 1
}

uptime_ms() {
	local up
	read -r up _ < /proc/uptime
	up=$(echo "$up" | tr -d . | sed 's/^0*//')
	echo $(( ${up:-0} * 10 ))
}

kmsg "EGVM:BOOTED $(uname -r) lsm=$(cat /sys/kernel/security/lsm 2>/dev/null) uptime_ms=$(uptime_ms)"
count=0
for c in /opt/execgate/cases/*.sh; do
	[ -f "$c" ] || continue
	name=$(basename "$c" .sh)
	selected "$name" || continue
	count=$((count + 1))
	# A case may ask for more time with a line "# egvm-timeout: SECONDS".
	t=$(sed -n 's/^# egvm-timeout: *\([0-9][0-9]*\).*/\1/p' "$c" | head -n 1)
	t=${t:-60}
	# every case starts with an empty /tmp of its own
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	dir=/tmp/$name
	out=/run/egvm/$name
	mkdir -p "$dir" /run/egvm
	echo "EGVM:BEGIN $name"
	t0=$(uptime_ms)
	(cd "$dir" && exec timeout -k 5 "$t" sh "$c" > "$out.out" 2> "$out.err")
	rc=$?
	ms=$(( $(uptime_ms) - t0 ))
	sed 's/^/    /' "$out.out"
	sed 's/^/    stderr: /' "$out.err"
	echo "EGVM:END $name rc=$rc"
	# the reason: the case's last line on stdout
	why=$(grep -v '^[[:space:]]*$' "$out.out" | tail -n 1 | cut -c 1-300)
	case $rc in
	0)  res=PASS ;;
	77) res=SKIP ;;
	137|143) res=FAIL why="timed out after $t s (egvm-timeout); last output: $why" ;;
	*)  res=FAIL why="exit status $rc: ${why:-no output}" ;;
	esac
	# notes the host shows under the result
	grep '^note: ' "$out.out" | cut -c 1-300 | while read -r n; do
		kmsg "EGVM:NOTE $name ${n#note: }"
	done
	kmsg "EGVM:RESULT $name $res $ms ${why:-ok}"
	# Nothing a case started outlives it: kill -1 from PID 1 spares only PID 1.
	kill -KILL -1 2>/dev/null
	sleep 0.2
	rm -rf /sys/fs/bpf/* "$out.out" "$out.err"
	umount /tmp 2>/dev/null || umount -l /tmp
	find /sys/fs/cgroup -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
done
kmsg "EGVM:DONE $count uptime_ms=$(uptime_ms)"
poweroff -f
