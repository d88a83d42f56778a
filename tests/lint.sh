#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The code map as a test (tools/arch.py --check): no circle between rooms or
# between the files of a room, no C file over 1,000 lines. One line for
# tests/run.sh: PASS arch: <the map's summary> | FAIL arch: ..., then the map.
cd "$(dirname "$0")/.."
out=$(python3 tools/arch.py --check 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	echo "PASS arch: $(head -n1 <<<"$out")"
else
	echo "FAIL arch: $(head -n1 <<<"$out")"
	sed 's/^/    /' <<<"$out"
fi
exit $rc
