#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The BPF LSM suite: boots Debian's 6.1 kernel (CONFIG_BPF_LSM, booted with
# lsm=...,bpf) under qemu TCG with an initramfs holding busybox, the built
# execgate, its libraries and the test helpers, runs tests/vm/cases/*.sh
# inside, and prints one line per case: "PASS vm/NAME (Ns)",
# "FAIL vm/NAME: why" or "SKIP vm/NAME: reason". tests/vm/README.md.
#   tests/vm/run.sh [--console] [CASE...]     CASE: 30-daemon, or a prefix (30)
# Environment: EGVM_TIMEOUT (seconds for the whole boot, default 170),
# EGVM_LOCKUP_S (a soft lockup this long stops the guest as hung, default 60),
# EGVM_CACHE (kernel cache, default /var/cache/execgate-vm as root),
# EGVM_KERNEL (a bzImage to boot instead of Debian's), OUTPUT (.output).
set -u
SELF=$(readlink -f "$0")
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUTPUT:-.output}
VMDIR=$OUT/vm
TIMEOUT=${EGVM_TIMEOUT:-170}
if [ "$(id -u)" -eq 0 ]; then
	CACHE=${EGVM_CACHE:-/var/cache/execgate-vm}
else
	CACHE=${EGVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/execgate-vm}
fi
# The kernel package: the one Debian's linux-image-amd64 depends on.
META=linux-image-amd64
CMDLINE="console=ttyS0 lsm=lockdown,capability,landlock,yama,bpf panic=-1 loglevel=${EGVM_LOGLEVEL:-3} printk.devkmsg=on"

console=0
retried=0
want=()
while [ $# -gt 0 ]; do
	case "$1" in
	--console) console=1 ;;
	--retried) retried=$((retried + 1)) ;;	# internal: once per boot before this one that hung
	-h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "tests/vm/run.sh: unknown option $1" >&2; exit 2 ;;
	*) want+=("$1") ;;
	esac
	shift
done

# The cases to run: all, or those named (exactly, or by a prefix of their name).
cases=()
for c in tests/vm/cases/*.sh; do
	n=$(basename "$c" .sh)
	if [ ${#want[@]} -eq 0 ]; then
		cases+=("$n")
		continue
	fi
	for w in "${want[@]}"; do
		case "$n" in "${w%.sh}"*) cases+=("$n"); break ;; esac
	done
done
if [ ${#cases[@]} -eq 0 ]; then
	echo "tests/vm/run.sh: no case matches ${want[*]:-} in tests/vm/cases" >&2
	exit 2
fi

# Every case gets the same verdict; exits.
all() {
	local verdict=$1 why=$2 c
	for c in "${cases[@]}"; do
		echo "$verdict vm/$c: $why"
	done
	[ "$verdict" = SKIP ] && exit 0
	exit 1
}

log() { echo "vm: $*" >&2; }

# --- what the host needs
for t in qemu-system-x86_64 cpio gzip; do
	command -v "$t" > /dev/null ||
		all SKIP "no $t (tools/install-deps.sh installs qemu-system-x86 and cpio)"
done
BUSYBOX=
for b in /bin/busybox /usr/bin/busybox; do
	# busybox-static: the dynamic one would need its libraries in the guest too
	if [ -x "$b" ] && ! ldd "$b" > /dev/null 2>&1; then
		BUSYBOX=$b
		break
	fi
done
[ -n "$BUSYBOX" ] || all SKIP "no static busybox (tools/install-deps.sh installs busybox-static)"
[ -x "$OUT/execgate" ] && [ -d "$OUT/tests/helpers" ] ||
	all FAIL "$OUT/execgate or its test helpers not built (make build-tests)"

# --- the kernel: Debian's, downloaded once, never installed on the host
# kernel_pkg: the linux-image-6.1.0-N-amd64 that linux-image-amd64 names now.
kernel_pkg() {
	apt-cache depends "$META" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}

# newest_cached: the newest kernel already in the cache, if any.
newest_cached() {
	ls -d "$CACHE"/linux-image-*/ 2>/dev/null | sort -V | tail -n 1 | sed 's:/$::'
}

# fetch PKG: downloads PKG with apt-get download and keeps its /boot only.
fetch() {
	local pkg=$1 tmp deb
	tmp=$(mktemp -d "$CACHE/.dl.XXXXXX") || return 1
	chmod 755 "$tmp"
	# apt drops to the _apt user for downloads when it may write there
	if id _apt > /dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
		chown _apt "$tmp"
	fi
	log "downloading $pkg (about 70 MB, once; cached in $CACHE)"
	if ! (cd "$tmp" && apt-get download -q -o Acquire::Retries=1 "$pkg" > download.log 2>&1); then
		sed 's/^/    /' "$tmp/download.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	deb=$(ls "$tmp"/*.deb 2>/dev/null | head -n 1)
	mkdir -p "$tmp/x"
	if [ -z "$deb" ] || ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" ./boot; then
		log "unpacking $deb failed"
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "${CACHE:?}/${pkg:?}"
	mv "$tmp/x/boot" "$CACHE/$pkg"
	rm -rf "$tmp"
}

# find_kernel: sets KERNEL (a bzImage) and KNAME, or says why not and skips.
find_kernel() {
	local pkg cached
	if [ -n "${EGVM_KERNEL:-}" ]; then
		[ -f "$EGVM_KERNEL" ] || all FAIL "EGVM_KERNEL=$EGVM_KERNEL: no such file"
		KERNEL=$EGVM_KERNEL
		KNAME=$(basename "$EGVM_KERNEL")
		return
	fi
	command -v apt-get > /dev/null && command -v dpkg-deb > /dev/null ||
		all SKIP "no apt-get/dpkg-deb to fetch Debian's kernel (or set EGVM_KERNEL)"
	mkdir -p "$CACHE" || all SKIP "cannot create the kernel cache $CACHE (set EGVM_CACHE)"
	exec 9> "$CACHE/.lock"
	flock 9	# one download at a time when several runs share the cache
	pkg=$(kernel_pkg)
	cached=$(newest_cached)
	if [ -z "$pkg" ] && [ -z "$cached" ] && [ "$(id -u)" -eq 0 ]; then
		# a fresh machine whose package lists were never fetched
		log "apt-get update (the package lists do not know $META)"
		apt-get update -qq -o DPkg::Lock::Timeout=120 > /dev/null 2>&1
		pkg=$(kernel_pkg)
	fi
	if [ -n "$pkg" ] && [ ! -d "$CACHE/$pkg" ]; then
		if ! fetch "$pkg" && [ -z "$cached" ] && [ "$(id -u)" -eq 0 ]; then
			# stale lists name a package the mirror no longer has
			log "apt-get update, then one more try"
			apt-get update -qq -o DPkg::Lock::Timeout=120 > /dev/null 2>&1
			pkg=$(kernel_pkg)
			[ -z "$pkg" ] || [ -d "$CACHE/$pkg" ] || fetch "$pkg"
		fi
	fi
	if [ -n "$pkg" ] && [ -d "$CACHE/$pkg" ]; then
		cached=$CACHE/$pkg
	elif [ -n "$cached" ]; then
		log "using the cached $(basename "$cached"): ${pkg:-$META unknown to apt} could not be fetched"
	else
		exec 9>&-
		if [ -n "$pkg" ]; then
			all SKIP "could not download $pkg with apt-get (no network?)"
		fi
		all SKIP "apt knows no $META (no apt sources for Debian, or no network for apt-get update?)"
	fi
	exec 9>&-
	KERNEL=$(ls "$cached"/vmlinuz-* 2>/dev/null | head -n 1)
	[ -n "$KERNEL" ] || all FAIL "no vmlinuz in $cached (remove it to download again)"
	KNAME=$(basename "$cached")
}

# --- the initramfs, rebuilt every run (well under a second)
# copy_libs FILE...: the shared libraries and the loader ldd lists, at their paths.
copy_libs() {
	local lib
	ldd "$@" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
		sort -u | while read -r lib; do
		mkdir -p "$ROOT$(dirname "$lib")"
		cp -L "$lib" "$ROOT$lib"
	done
}

build_initramfs() {
	local f bins=()
	ROOT=$VMDIR/root
	rm -rf "$ROOT"
	mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc} \
		"$ROOT"/opt/execgate/{helpers,cases,policy}
	cp "$BUSYBOX" "$ROOT/bin/busybox"
	ln -s busybox "$ROOT/bin/sh"	# /init links the other applets
	cp "$OUT/execgate" "$ROOT/opt/execgate/"
	bins+=("$OUT/execgate")
	for f in "$OUT"/tests/helpers/*; do
		case "$f" in *.d|*.o) continue ;; esac
		[ -f "$f" ] && [ -x "$f" ] || continue
		cp "$f" "$ROOT/opt/execgate/helpers/"
		bins+=("$f")
	done
	copy_libs "${bins[@]}"
	# the kernel's config, where a daemon looks for its preemption model (docs/enforcement.md)
	mkdir -p "$ROOT/boot"
	cp "$(dirname "$KERNEL")"/config-* "$ROOT/boot/" 2>/dev/null || true
	# the 32-bit loader (libc6-i386), for the case that runs it as a command
	if [ -f /lib32/ld-linux.so.2 ]; then
		mkdir -p "$ROOT/lib32"
		cp -L /lib32/ld-linux.so.2 "$ROOT/lib32/"
	fi
	cp tests/vm/init.sh "$ROOT/init"
	cp tests/vm/lib.sh "$ROOT/opt/execgate/lib.sh"
	cp tests/vm/cases/*.sh "$ROOT/opt/execgate/cases/"
	cp policy/*.yaml "$ROOT/opt/execgate/policy/"
	chmod 755 "$ROOT/init"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		> "$ROOT/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOT/etc/group"
	(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -1 > "$VMDIR/initramfs.cpio.gz.tmp" &&
		mv "$VMDIR/initramfs.cpio.gz.tmp" "$VMDIR/initramfs.cpio.gz"
}

mkdir -p "$VMDIR"
t_start=$(date +%s%N)
find_kernel
t_kernel=$(date +%s%N)
build_initramfs || all FAIL "building the initramfs failed"
t_initrd=$(date +%s%N)

# --- boot
sel=$(IFS=,; echo "${cases[*]}")
[ ${#want[@]} -eq 0 ] && sel=""
CONSOLE=$VMDIR/console.log
# shellcheck disable=SC2054 # commas inside qemu options
qemu=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 1G -smp 2 -nographic -no-reboot
      -kernel "$KERNEL" -initrd "$VMDIR/initramfs.cpio.gz"
      -append "$CMDLINE${sel:+ egvm.cases=$sel}")
log "booting $KNAME ($(du -h "$VMDIR/initramfs.cpio.gz" | cut -f1) initramfs), ${#cases[@]} case(s), timeout ${TIMEOUT}s; console: $CONSOLE"
# A guest whose vCPUs have sat in a soft lockup for LOCKUP_S (seen under TCG
# on a loaded host; such a guest never came back) is stopped then, not at
# the timeout, and counts as hung: booted once more below.
LOCKUP_S=${EGVM_LOCKUP_S:-60}
: > "$CONSOLE"
timeout -k 5 "$TIMEOUT" "${qemu[@]}" < /dev/null > "$CONSOLE" 2>&1 &
qpid=$!
tpid=""
if [ "$console" -eq 1 ]; then
	tail -n +1 -f --pid="$qpid" "$CONSOLE" &
	tpid=$!
fi
lockup=0
while kill -0 "$qpid" 2>/dev/null; do
	if tr -d '\r' < "$CONSOLE" | grep -oE 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s' |
		awk -v s="$LOCKUP_S" '{ sub(/s$/, "", $NF); if ($NF + 0 >= s) f = 1 } END { exit !f }'; then
		lockup=1
		kill "$qpid" 2>/dev/null	# timeout passes it on to qemu
		break
	fi
	sleep 2
done
wait "$qpid"
qrc=$?
[ "$lockup" -eq 1 ] && qrc=124
[ -n "$tpid" ] && wait "$tpid" 2>/dev/null
t_end=$(date +%s%N)

# --- results: EGVM:... lines printed by the guest's /init through printk
clean=$VMDIR/console.txt
tr -d '\r' < "$CONSOLE" > "$clean"
guest=$(grep -c 'EGVM:DONE ' "$clean")
case $qrc in
0) how="" ;;
124|137) how="the guest did not finish within ${TIMEOUT}s (hung? EGVM_TIMEOUT raises the limit)"
	[ "$lockup" -eq 1 ] && how="the guest sat in a soft lockup for ${LOCKUP_S}s and was stopped (EGVM_LOCKUP_S)" ;;
*) how="qemu exited with status $qrc" ;;
esac
if [ -z "$how" ] && [ "$guest" -eq 0 ]; then
	if grep -q 'Kernel panic' "$clean"; then
		how="the guest kernel panicked"
	else
		how="the guest stopped before running every case"
	fi
fi

# A guest that hung (no result before the timeout, or a soft lockup: seen
# under TCG on a loaded host, both vCPUs spinning while the daemon started
# or a case exec'd, in a different case each time; the next boot of the
# same build ran every case) is booted again, up to twice, when every case
# that did finish passed: a case that failed is never retried. The last
# hung boot's console is kept, and the last boot's results count.
HUNG_BOOTS_MAX=2
if [ "$retried" -lt "$HUNG_BOOTS_MAX" ] && { [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; } &&
	! grep -q 'EGVM:RESULT [^ ]* FAIL' "$clean"; then
	cp "$CONSOLE" "$VMDIR/console.hung.log"
	log "the guest hung ($(grep -m 1 -o 'watchdog: BUG: soft lockup[^[]*' "$clean" || echo "no result within ${TIMEOUT}s")); booting again (hung console: $VMDIR/console.hung.log)"
	args=()
	for ((i = 0; i <= retried; i++)); do
		args+=(--retried)
	done
	[ "$console" -eq 1 ] && args+=(--console)
	exec bash "$SELF" "${args[@]}" "${want[@]}"
fi

# the case that was running when the guest stopped, if any
running=$(grep -o 'EGVM:BEGIN .*' "$clean" | tail -n 1 | cut -d' ' -f2)
if [ -n "$running" ] && grep -q "EGVM:END $running " "$clean"; then
	running=""
fi

failed=0 missing=0
for c in "${cases[@]}"; do
	line=$(grep -o "EGVM:RESULT $c .*" "$clean" | tail -n 1)
	if [ -z "$line" ]; then
		if [ "$c" = "$running" ]; then
			echo "FAIL vm/$c: no result from the guest: ${how:-the guest stopped}, while running this case"
		else
			echo "FAIL vm/$c: no result from the guest: ${how:-the guest never ran it}"
		fi
		failed=$((failed + 1)) missing=1
		continue
	fi
	# shellcheck disable=SC2086 # split into its words on purpose
	set -- $line
	res=$3 ms=$4
	shift 4
	why="$*"
	case $res in
	PASS) echo "PASS vm/$c ($((ms / 1000)).$((ms % 1000 / 100))s)" ;;
	SKIP) echo "SKIP vm/$c: $why" ;;
	*)    echo "FAIL vm/$c: $why"; failed=$((failed + 1))
	      # what the case printed, for the summary of tests/run.sh
	      sed -n "/EGVM:BEGIN $c\$/,/EGVM:END $c /p" "$clean" | grep -v '^EGVM:' | tail -n 25 |
		      sed 's/^ \{0,4\}/    /' ;;
	esac
	grep -o "EGVM:NOTE $c .*" "$clean" | sed "s/^EGVM:NOTE $c /    vm\/$c: /"
done
if [ "$missing" -eq 1 ]; then
	# from a little before the first oops or panic, else the last lines
	oops=$(grep -n -m 1 -E 'Kernel panic|BUG:|Oops:|general protection fault|watchdog: BUG' "$clean" | cut -d: -f1)
	if [ -n "$oops" ]; then
		echo "    console from the first oops ($CONSOLE):"
		tail -n "+$(( oops > 5 ? oops - 5 : 1 ))" "$clean" | head -n 40 | sed 's/^/    | /'
	else
		echo "    console tail ($CONSOLE):"
		tail -n 30 "$clean" | sed 's/^/    | /'
	fi
fi
ms() { echo "$(( ($2 - $1) / 1000000000 )).$(( ($2 - $1) / 100000000 % 10 ))s"; }
booted=$(grep -o 'EGVM:BOOTED .*' "$clean" | head -n 1)
echo "    vm: $KNAME, ${#cases[@]} case(s) in $(ms "$t_start" "$t_end"): kernel $(ms "$t_start" "$t_kernel"), initramfs $(ms "$t_kernel" "$t_initrd"), qemu $(ms "$t_initrd" "$t_end"); console log $CONSOLE"
[ -n "$booted" ] || [ "$missing" -eq 1 ] || echo "    vm: no boot marker on the console"
[ "$failed" -eq 0 ]
