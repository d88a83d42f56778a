#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Cost of one policy decision (policy_eval) as the rule count grows.
#
#   tools/bench/policy.sh [policy_bench options...]
#
# 1. Wall time: 10, 100, 1000 and 10000 generated rules (basenames, path
#    globs, args regexes, contexts, uids, cgroups), 100000 mixed requests,
#    median of 5 runs (tools/bench/policy_bench.c). Target: < 2 us a
#    decision at 1000 rules, growing much slower than the rule count.
# 2. Instructions: the 1000-rule case once more under callgrind, counting
#    only inside policy_eval (--toggle-collect), divided by the requests:
#    a figure that does not drift with the machine's load.
#
# Environment: OUTPUT (default .output), RULES (callgrind case, 1000),
# REQUESTS (callgrind case, 100000).
set -euo pipefail

cd "$(dirname "$0")/../.."

OUTPUT=${OUTPUT:-.output}
BENCH=$OUTPUT/bench/policy_bench
RULES=${RULES:-1000}
REQUESTS=${REQUESTS:-100000}

if [ ! -x "$BENCH" ]; then
	make --no-print-directory OUTPUT="$OUTPUT" "$BENCH"
fi

"$BENCH" "$@"

if ! command -v valgrind >/dev/null 2>&1; then
	echo "callgrind: skipped, valgrind is not installed (tools/install-deps.sh bench)"
	exit 0
fi
tmp=$(mktemp -d /tmp/execgate-policy-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.out" \
	--toggle-collect=policy_eval "$BENCH" --rules "$RULES" --requests "$REQUESTS" --once \
	>"$tmp/stdout" 2>"$tmp/stderr"; then
	echo "callgrind: valgrind failed:" >&2
	tail -n 20 "$tmp/stderr" >&2
	exit 1
fi
# "summary:" (or "totals:") is the sum of Ir inside policy_eval and what it calls.
ir=$(awk '$1 == "summary:" || $1 == "totals:" { v = $2 } END { print v + 0 }' "$tmp/callgrind.out")
if [ "$ir" -le 0 ]; then
	echo "callgrind: no instructions counted (was policy_eval inlined away?)" >&2
	exit 1
fi
echo "callgrind: $RULES rules, $REQUESTS requests: $((ir / REQUESTS)) instructions per decision ($(cat "$tmp/stdout"))"
