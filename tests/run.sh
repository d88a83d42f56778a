#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Runs every test suite and ends with the plain line "N passed, N failed, N skipped".
# Each suite prints one line per test: "PASS name", "FAIL name", "SKIP name: reason".
# A suite that exits non-zero without a FAIL line counts as one failure.
#   tests/run.sh [--unit-only | --integration-only] [--unit-dir DIR]
set -u
cd "$(dirname "$0")/.."
OUT=${OUTPUT:-.output}
unit_dir=$OUT/tests
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--unit-only) only=unit ;;
	--integration-only) only=integration ;;
	--unit-dir) unit_dir=$2; shift ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

passed=0 failed=0 skipped=0 times=""
log=$(mktemp -d /tmp/execgate-tests.XXXXXX)

# run_suite NAME CMD...: runs, shows its lines, adds its counts.
run_suite() {
	local name=$1; shift
	local out=$log/${name//\//_}.out rc p f s start secs
	echo "== $name"
	start=$(date +%s)
	"$@" > "$out" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	times="$times$(printf '%5ds  %s' "$secs" "$name")
"
	if [ ! -f "$out" ]; then
		echo "FAIL $name: no output captured"
		failed=$((failed + 1))
		return
	fi
	grep -E '^(PASS|FAIL|SKIP) |^    ' "$out"
	p=$(grep -c '^PASS ' "$out"); f=$(grep -c '^FAIL ' "$out"); s=$(grep -c '^SKIP ' "$out")
	if { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; } || [ $((p + f + s)) -eq 0 ]; then
		echo "FAIL $name: suite exited with status $rc and $f failures out of $((p + f + s)) tests; its output:"
		tail -n 30 "$out" | sed 's/^/    /'
		f=1
	fi
	echo "$name: $p passed, $f failed, $s skipped ($secs s)"
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

if [ "$only" != integration ]; then
	for t in "$unit_dir"/test_*; do
		[ -x "$t" ] || continue
		run_suite "unit/$(basename "$t")" "$t"
	done
	# the same unit tests built with AddressSanitizer and UBSan (make asan-tests)
	if [ "$unit_dir" = "$OUT/tests" ]; then
		for t in "$OUT"/asan/tests/test_*; do
			[ -x "$t" ] || continue
			run_suite "asan/$(basename "$t")" "$t"
		done
	fi
	if [ -z "$only" ] && [ -x tests/fuzz/run.sh ]; then
		run_suite fuzz tests/fuzz/run.sh
	fi
fi
if [ "$only" != unit ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP integration: needs root (BPF, seccomp, cgroups)"
		skipped=$((skipped + 1))
	else
		run_suite integration python3 tests/integration/run.py
		# the supervised sessions again, against the daemon built with ASan and UBSan
		if [ -z "$only" ] && [ -x "$OUT/asan/execgate" ]; then
			run_suite integration-asan env EG_EXECGATE="$OUT/asan/execgate" EG_ASAN=1 \
				ASAN_OPTIONS=detect_leaks=0 python3 tests/integration/run.py test_sessions
		fi
	fi
	if [ -z "$only" ] && [ -x tests/vm/run.sh ]; then
		run_suite vm tests/vm/run.sh
	fi
fi

echo "logs in $log"
echo "time per suite:"
printf '%s' "$times"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
