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

passed=0 failed=0 skipped=0 times="" fails=""
log=$(mktemp -d /tmp/execgate-tests.XXXXXX)

# budget NAME: the seconds a suite may take before it is stopped (SIGTERM, then SIGKILL a
# minute later), several times what it takes on a loaded 2-core machine, so that a hang
# fails the suite, names where (the integration runner fails a test after
# EG_TEST_TIMEOUT and prints its stack) and make test still ends in CI's 90 minutes.
# EG_SUITE_BUDGET=SECONDS sets them all.
budget() {
	[ -n "${EG_SUITE_BUDGET:-}" ] && { echo "$EG_SUITE_BUDGET"; return; }
	case $1 in
	integration) echo 2400 ;;		# about 570 s
	integration-asan|integration-lane2) echo 900 ;;	# about 170 s each
	vm) echo 1500 ;;			# about 130 s; a hung guest is booted once more
	*) echo 600 ;;				# fuzz about 40 s, a unit suite a few
	esac
}

# exec_suite NAME CMD...: runs it, its output, status and seconds into $log.
exec_suite() {
	local name=$1 start secs rc; shift
	local out=$log/${name//\//_}
	secs=$(budget "$name")
	start=$(date +%s)
	# nothing to read (a CI runner may hold a pipe that never ends); --foreground: the suite
	# stays in make's process group, so an interrupt (^C) reaches it, and the budget's
	# SIGTERM goes to the suite's runner, which ends its test and cleans up
	timeout --foreground -k 60 "$secs" "$@" < /dev/null > "$out.out" 2>&1
	rc=$?
	{ [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && echo "FAIL (budget): the suite was stopped after $secs s (tests/run.sh)" >> "$out.out"
	echo $rc > "$out.rc"
	echo $(( $(date +%s) - start )) > "$out.secs"
}

# report_suite NAME: shows its lines, adds its counts.
report_suite() {
	local name=$1 out=$log/${1//\//_} rc p f s secs
	echo "== $name"
	rc=$(cat "$out.rc" 2>/dev/null || echo 1)
	secs=$(cat "$out.secs" 2>/dev/null || echo 0)
	times="$times$(printf '%5ds  %s' "$secs" "$name")
"
	if [ ! -f "$out.out" ]; then
		echo "FAIL $name: no output captured"
		failed=$((failed + 1))
		return
	fi
	grep -E '^(PASS|FAIL|SKIP) |^    ' "$out.out"
	fails="$fails$(grep -E '^FAIL ' "$out.out" | cut -c1-200 | sed "s|^FAIL |  $name: |")"
	[ -n "$fails" ] && fails="$fails
"
	p=$(grep -c '^PASS ' "$out.out"); f=$(grep -c '^FAIL ' "$out.out"); s=$(grep -c '^SKIP ' "$out.out")
	if { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; } || [ $((p + f + s)) -eq 0 ]; then
		echo "FAIL $name: suite exited with status $rc and $f failures out of $((p + f + s)) tests; its output:"
		fails="$fails  $name: exited with status $rc and no FAIL line
"
		tail -n 30 "$out.out" | sed 's/^/    /'
		f=1
	fi
	echo "$name: $p passed, $f failed, $s skipped ($secs s)"
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

run_suite() {
	exec_suite "$@"
	report_suite "$1"
}

# The second lane: suites that share nothing on the host with the integration
# suite (the fuzzers; the sessions under ASan, with their own marker file and
# race directory; the VM suite, in qemu) run beside it, on the second core.
# Their lines come after the integration suite's.
lane=()
lane_modules="test_packaging test_contexts test_judge test_what_runs test_boundary"
if [ -z "$only" ]; then
	[ -x tests/fuzz/run.sh ] && lane+=(fuzz)
	# the unit tests built with AddressSanitizer and UBSan (make asan-tests): here, not before the integration suite
	if [ "$unit_dir" = "$OUT/tests" ]; then
		for t in "$OUT"/asan/tests/test_*; do
			[ -x "$t" ] && lane+=("asan/$(basename "$t")")
		done
	fi
	if [ "$(id -u)" -eq 0 ] && [ -x "$OUT/asan/execgate" ] && [ "$unit_dir" = "$OUT/tests" ]; then
		lane+=(integration-asan)
	fi
	[ "$(id -u)" -eq 0 ] && lane+=(integration-lane2)
	[ "$(id -u)" -eq 0 ] && [ -x tests/vm/run.sh ] && lane+=(vm)
fi
lane_pid=""
if [ ${#lane[@]} -gt 0 ]; then
	(
		for name in "${lane[@]}"; do
			case $name in
			fuzz) exec_suite fuzz tests/fuzz/run.sh ;;
			asan/*) exec_suite "$name" "$OUT/asan/tests/${name#asan/}" ;;
			# the races' tries: ASan looks at the code paths, the plain run at the odds
			integration-asan)
				exec_suite integration-asan env EG_EXECGATE="$OUT/asan/execgate" EG_ASAN=1 \
					ASAN_OPTIONS=detect_leaks=0 EG_LANE=-asan EG_MARKER=/tmp/egmarker-asan \
					EG_RACE_TRIES=${EG_ASAN_RACE_TRIES:-600} python3 tests/integration/run.py test_sessions ;;
			# modules that share nothing with the others (their own marker file), to even the lanes out
			integration-lane2) exec_suite integration-lane2 env EG_LANE=-lane2 EG_MARKER=/tmp/egmarker-lane2 \
				python3 tests/integration/run.py $lane_modules ;;
			# beside the integration suite the emulated guest gets less of the CPU: more time
			vm) exec_suite vm env EGVM_TIMEOUT=${EGVM_TIMEOUT:-600} tests/vm/run.sh ;;
			esac
		done
	) </dev/null &
	lane_pid=$!
	trap '[ -z "$lane_pid" ] || { pkill -TERM -P "$lane_pid"; kill "$lane_pid"; } 2>/dev/null' EXIT
	echo "(beside the others: $(printf '%s\n' "${lane[@]}" | sed 's|^asan/.*|asan units|' | uniq | paste -sd' '))"
fi

if [ "$only" != integration ]; then
	# the code map (tools/arch.py): no circle between rooms or between a room's files, no C file over 1,000 lines
	run_suite lint/arch tests/lint.sh
	for t in "$unit_dir"/test_*; do
		[ -x "$t" ] || continue
		run_suite "unit/$(basename "$t")" "$t"
	done
	# the same unit tests built with AddressSanitizer and UBSan (make asan-tests), when not in the lane
	if [ "$unit_dir" = "$OUT/tests" ] && [[ " ${lane[*]} " != *" asan/"* ]]; then
		for t in "$OUT"/asan/tests/test_*; do
			[ -x "$t" ] || continue
			run_suite "asan/$(basename "$t")" "$t"
		done
	fi
fi
if [ "$only" != unit ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP integration: needs root (BPF, seccomp, cgroups)"
		skipped=$((skipped + 1))
	else
		if [[ " ${lane[*]} " == *" integration-lane2 "* ]]; then
			run_suite integration python3 tests/integration/run.py $(printf -- '--skip %s. ' $lane_modules)
		else
			run_suite integration python3 tests/integration/run.py
		fi
	fi
fi
if [ -n "$lane_pid" ]; then
	wait "$lane_pid"
	lane_pid=""
	for name in "${lane[@]}"; do
		report_suite "$name"
	done
fi

echo "logs in $log"
echo "time per suite:"
printf '%s' "$times"
# the failures once more, last, where a CI log's tail shows them
[ -n "$fails" ] && { echo "failed:"; printf '%s' "$fails" | sed '/^$/d' | head -n 20; }
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
