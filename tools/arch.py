#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The map of the code: rooms (the folders of userspace/ and bpf/), the
arrows between them (a file of one room including a header of another),
the floors those arrows give (a room stands on what it includes), and the
circles: rooms that reach each other, and files of one room that call
each other round (a call graph of the functions each file defines).

  tools/arch.py [--check] [--verbose]

--check exits 1 when there is a circle between rooms or between the files
of a room, or a C file over 1,000 lines (make test runs it)."""
import argparse
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MAX_LINES = 1000
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEF = re.compile(r'^(?!static)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;]*$', re.M)
STATIC_DEF = re.compile(r'^static\s[\w \*]*?\b(\w+)\s*\(', re.M)
CALL = re.compile(r'\b(\w+)\s*\(')
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__", "typeof"}


def sources():
    """(room, path) for every .c and .h of userspace/<room>/ and bpf/."""
    out = []
    for room in sorted(os.listdir(os.path.join(ROOT, "userspace"))):
        d = os.path.join(ROOT, "userspace", room)
        if os.path.isdir(d):
            for f in sorted(os.listdir(d)):
                if f.endswith((".c", ".h")):
                    out.append((room, os.path.join(d, f)))
    for f in sorted(os.listdir(os.path.join(ROOT, "bpf"))):
        if f.endswith((".c", ".h")):
            out.append(("bpf", os.path.join(ROOT, "bpf", f)))
    return out


def room_of_include(inc, own_room):
    if "/" in inc:
        return inc.split("/")[0]
    return "bpf" if own_room == "bpf" else own_room


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node (or a self loop)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def floors(nodes, edges):
    """Each room's floor: 0 for one that includes no other room, else 1 + the highest below it."""
    memo = {}

    def f(v, seen):
        if v in memo:
            return memo[v]
        if v in seen:
            return 0
        seen = seen | {v}
        h = 0
        for w in edges.get(v, ()):
            if w != v:
                h = max(h, 1 + f(w, seen))
        memo[v] = h
        return h
    return {v: f(v, frozenset()) for v in nodes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    o = ap.parse_args()
    files = sources()
    rooms = sorted({r for r, _ in files})
    room_edges = {r: set() for r in rooms}
    arrow_files = {}
    long_files = []
    defs = {}          # function -> file that defines it (not static)
    text = {}
    for room, path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            t = f.read()
        text[path] = (room, strip_comments(t))
        if path.endswith(".c") and t.count("\n") > MAX_LINES:
            long_files.append((t.count("\n"), os.path.relpath(path, ROOT)))
        for inc in INCLUDE.findall(t):
            other = room_of_include(inc, room)
            if other != room and other in room_edges:
                room_edges[room].add(other)
                arrow_files.setdefault((room, other), set()).add(os.path.relpath(path, ROOT))
        if path.endswith(".c"):
            for name in DEF.findall(strip_comments(t)):
                defs.setdefault(name, path)
    # calls between the files of one room (a file calling itself is no arrow)
    file_edges = {}
    for path, (room, t) in text.items():
        if not path.endswith(".c"):
            continue
        statics = set(STATIC_DEF.findall(t))
        for name in set(CALL.findall(t)) - KEYWORDS - statics:
            other = defs.get(name)
            if other and other != path and text[other][0] == room:
                file_edges.setdefault(path, set()).add(other)
    room_circles = sccs(rooms, room_edges)
    file_circles = sccs(sorted(file_edges), file_edges)
    fl = floors(rooms, room_edges)
    arrows = sum(len(v) for v in room_edges.values())
    print("rooms %d, floors %d, arrows %d, circles between rooms %d, circles inside rooms %d, "
          "C files over %d lines %d" % (len(rooms), max(fl.values()) + 1 if fl else 0, arrows,
                                        len(room_circles), len(file_circles), MAX_LINES, len(long_files)))
    for f in sorted(rooms, key=lambda r: (fl[r], r)):
        print("  floor %d  %-10s -> %s" % (fl[f], f, ", ".join(sorted(room_edges[f])) or "-"))
    for c in room_circles:
        print("  circle between rooms: %s" % " <-> ".join(c))
        if o.verbose:
            for a in c:
                for b in c:
                    for p in sorted(arrow_files.get((a, b), ())):
                        print("    %s includes %s/" % (p, b))
    for c in file_circles:
        print("  circle in %s/: %s" % (text[c[0]][0], ", ".join(os.path.basename(p) for p in c)))
    for n, p in sorted(long_files, reverse=True):
        print("  %s: %d lines" % (p, n))
    if o.check and (room_circles or file_circles or long_files):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
