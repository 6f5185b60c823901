#!/usr/bin/env python3
"""Fails when the top-level folders' #include graph has a cycle.

Each top-level folder holding C++ (common, hw, models, kernels, engine,
calibrate, sim, report, cli, bench) is one library or program; an
`#include "other/..."` in it is an edge to `other`. Dependencies must point
one way only, so the graph must be acyclic. Prints the edges and, on
failure, one cycle with a file that makes each of its edges.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SKIP = {"tests", "scripts", "scenarios", "notebooks", "validation", "cmake", "examples", "build"}
INCLUDE = re.compile(r'\s*#\s*include\s+"([a-z_0-9]+)/')


def folders():
    for d in sorted(os.listdir(ROOT)):
        if d.startswith(".") or d in SKIP or d.startswith("build"):
            continue
        if os.path.isdir(os.path.join(ROOT, d)):
            yield d


def graph():
    tops = set(folders())
    edges, why = {t: set() for t in tops}, {}
    for t in tops:
        for dirpath, _, files in os.walk(os.path.join(ROOT, t)):
            for f in files:
                if not f.endswith((".h", ".cc", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, errors="ignore") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if m and m.group(1) in tops and m.group(1) != t:
                            edges[t].add(m.group(1))
                            why.setdefault((t, m.group(1)), os.path.relpath(path, ROOT))
    return edges, why


def find_cycle(edges):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    edges, why = graph()
    for t in sorted(edges):
        print(f"{t} -> {', '.join(sorted(edges[t])) or '(nothing)'}")
    cycle = find_cycle(edges)
    if cycle:
        print("folder cycle: " + " -> ".join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            print(f"  {a} -> {b}: {why[(a, b)]}")
        return 1
    print("check_folder_cycles: the folder graph has no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
