#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The deepest BPF call chain of each program in an object, counted the way
Linux 6.1's verifier counts it (check_max_stack_depth): every frame rounded
up to 32 bytes, a bpf_loop callback counted as a call from the function that
names it, and no private stacks. Newer kernels round to 16 when JITed and
give big tracing frames a private stack (6.13+), so an object can load on
6.18 and fail on 6.1 with "combined stack size of N calls is M. Too large".

A frame's size here is the deepest r10 offset in the function's code, which
is what the verifier finds on the paths it explores (it can only be less).

  tools/bpf-stack.py .output/bpf/execgate.bpf.o [--limit 512]

Prints "SIZE program: f(32) -> g(96) -> ..." per program. Exits 1 if a
chain exceeds the limit.
"""
import argparse
import functools
import re
import subprocess
import sys


def objdump(*args):
    return subprocess.run(["llvm-objdump", *args], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("obj")
    ap.add_argument("--limit", type=int, default=512)
    a = ap.parse_args()

    funcs = {}  # section -> [(first insn, name)]
    for line in objdump("-t", a.obj):
        m = re.match(r"^([0-9a-f]+) .{7} (\S+)\s+[0-9a-f]+\s+(\S+)$", line)
        if m and " F " in line:
            funcs.setdefault(m.group(2), []).append((int(m.group(1), 16) // 8, m.group(3)))
    for v in funcs.values():
        v.sort()

    def func_at(sec, idx):
        name = None
        for start, n in funcs.get(sec, []):
            if start <= idx:
                name = n
        return (sec, name)

    insns = {}  # section -> [[idx, bytes, text, [relocation symbols]]]
    sec = None
    for line in objdump("-dr", a.obj):
        m = re.match(r"^Disassembly of section (.*):", line)
        if m:
            sec = m.group(1)
            insns[sec] = []
            continue
        m = re.match(r"^\s+(\d+):\s+((?:[0-9a-f]{2} ?){8})\s*(.*)$", line)
        if m and sec:
            insns[sec].append([int(m.group(1)), bytes.fromhex(m.group(2).replace(" ", "")),
                               m.group(3), []])
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+R_BPF_\S+\s+(\S+)", line)
        if m and sec and insns[sec]:
            insns[sec][-1][3].append(m.group(1))

    text_funcs = {n for _, n in funcs.get(".text", [])}
    depth, calls = {}, {}
    for sec, lst in insns.items():
        for idx, b, txt, rel in lst:
            f = func_at(sec, idx)
            depth.setdefault(f, 0)
            calls.setdefault(f, set())
            for m in re.finditer(r"r10 (?:- |\+ -)(0x[0-9a-f]+|\d+)", txt):
                depth[f] = max(depth[f], int(m.group(1), 0))
            code, src = b[0], b[1] >> 4
            imm = int.from_bytes(b[4:8], "little", signed=True)
            if code == 0x85 and src == 1:		# bpf-to-bpf call
                if not rel:
                    calls[f].add(func_at(sec, idx + imm + 1))
                elif rel[0] == ".text":
                    calls[f].add(func_at(".text", imm + 1))
                else:
                    calls[f].add((".text", rel[0]))
            elif code == 0x18 and rel and (rel[0] == ".text" or rel[0] in text_funcs):
                # ld_imm64 of a function: a bpf_loop (or timer) callback
                calls[f].add(func_at(".text", imm // 8) if rel[0] == ".text" else (".text", rel[0]))

    def r32(d):
        return (max(d, 1) + 31) // 32 * 32

    @functools.lru_cache(maxsize=None)
    def worst(f):
        best = (0, ())
        for c in calls.get(f, ()):
            w = worst(c)
            if w[0] > best[0]:
                best = w
        return (r32(depth.get(f, 0)) + best[0], ("%s(%d)" % (f[1], r32(depth.get(f, 0))),) + best[1])

    over = False
    for f in depth:
        if f[0] == ".text" or f[1] is None:
            continue
        size, chain = worst(f)
        mark = "  TOO LARGE for 6.1" if size > a.limit else ""
        over |= size > a.limit
        print("%4d %s: %s%s" % (size, f[1], " -> ".join(chain), mark))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
