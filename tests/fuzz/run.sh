#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Builds the libFuzzer targets (make fuzz-build) and runs each for a share
# of a fixed time budget on a copy of its seed corpus (which libFuzzer
# replays first), with ASan, UBSan and LeakSanitizer. `make test` runs this
# with the default budget; `make fuzz` with a long one (FUZZ_SECONDS=600). One line a target, for tests/run.sh:
#   PASS fuzz_policy (N runs) | FAIL fuzz_policy: why | SKIP fuzz_policy: why
# followed, on failure, by the tail of the fuzzer's output (indented).
#
# Environment: OUTPUT (default .output), FUZZ_SECONDS (total budget for all
# targets, default 15), FUZZ_RSS_MB (default 2048).
# Corpus: tests/fuzz/corpus/<name>/ for tests/fuzz/fuzz_<name>.c, and the
# dictionary tests/fuzz/fuzz_<name>.dict when there is one. A crashing
# input is kept as tests/fuzz/crash-<name>-* (ignored by git) to reproduce:
#   $OUTPUT/fuzz/fuzz_<name> tests/fuzz/crash-<name>-...
set -u
cd "$(dirname "$0")/../.."

OUT=${OUTPUT:-.output}
BUDGET=${FUZZ_SECONDS:-15}
RSS_MB=${FUZZ_RSS_MB:-2048}

targets=()
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	targets+=("$(basename "$src" .c)")
done
[ ${#targets[@]} -gt 0 ] || exit 0

tmp=$(mktemp -d /tmp/execgate-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if ! command -v "${CLANG:-clang}" >/dev/null 2>&1; then
	for t in "${targets[@]}"; do
		echo "SKIP $t: clang is not installed (tools/install-deps.sh)"
	done
	exit 0
fi
if ! make --no-print-directory OUTPUT="$OUT" fuzz-build >"$tmp/build.log" 2>&1; then
	for t in "${targets[@]}"; do
		echo "FAIL $t: 'make OUTPUT=$OUT fuzz-build' failed"
	done
	tail -n 20 "$tmp/build.log" | sed 's/^/    /'
	exit 1
fi

# Whole seconds each, at least one.
share=$((BUDGET / ${#targets[@]}))
[ "$share" -ge 1 ] || share=1
rc=0
for t in "${targets[@]}"; do
	name=${t#fuzz_}
	bin=$OUT/fuzz/$t
	corpus=$tmp/corpus-$name
	mkdir -p "$corpus" "$tmp/artifacts-$name"
	if [ -d "tests/fuzz/corpus/$name" ]; then
		cp -r "tests/fuzz/corpus/$name/." "$corpus/"
	fi
	log=$tmp/$t.log
	dict=()
	[ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
	"$bin" -max_total_time="$share" -rss_limit_mb="$RSS_MB" -detect_leaks=1 -timeout=20 \
		-print_final_stats=1 -artifact_prefix="$tmp/artifacts-$name/" "${dict[@]}" "$corpus" >"$log" 2>&1
	status=$?
	runs=$(sed -n 's/^Done \([0-9][0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
	if [ "$status" -eq 0 ] && [ -n "$runs" ]; then
		echo "PASS $t ($runs runs)"
		continue
	fi
	why=$(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY:|runtime error:|ERROR: libFuzzer' "$log" | sed 's/^==[0-9]*==//')
	echo "FAIL $t: ${why:-the fuzzer exited with status $status}"
	for a in "$tmp/artifacts-$name"/*; do
		[ -e "$a" ] || continue
		keep=tests/fuzz/$(basename "$a" | sed "s/^\([a-z]*\)-/\1-$name-/")
		cp "$a" "$keep" && echo "    input kept as $keep"
	done
	tail -n 30 "$log" | sed 's/^/    /'
	rc=1
done
exit "$rc"
