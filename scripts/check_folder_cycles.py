#!/usr/bin/env python3
"""Fails when the folders' #include graph has a cycle, at any folder level.

Every folder holding C++ (common, sim, sim/pd, kernels/harness, ...) is a
node; an `#include "a/b/c.h"` in a file of folder F is an edge F -> a/b.
The graph is checked at every depth d: each folder stands for its first d
path parts, so depth 1 is the top-level libraries and programs and the
deepest level is every folder on its own. A cycle between two top-level
libraries, between sibling sub-folders, or between a folder and its own
sub-folder is found at the depth where it shows. Prints the top-level edges
and, on failure, each cycle with a file that makes each of its edges. No
cycle is allowed: a sub-folder either sits below its parent folder (a leaf
it uses) or above it (a layer that uses it), never both.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SKIP = {"tests", "scripts", "scenarios", "notebooks", "validation", "cmake", "examples", "build"}
SOURCES = (".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def source_folders():
    """Folders (relative to ROOT) holding C++ sources, with their files."""
    found = {}
    for top in sorted(os.listdir(ROOT)):
        if top.startswith(".") or top in SKIP or top.startswith("build"):
            continue
        if not os.path.isdir(os.path.join(ROOT, top)):
            continue
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames.sort()
            srcs = sorted(f for f in files if f.endswith(SOURCES))
            if srcs:
                found[os.path.relpath(dirpath, ROOT)] = [os.path.join(dirpath, f) for f in srcs]
    return found


def folder_graph():
    """Edges between folders: {from: {to: first file making the edge}}."""
    folders = source_folders()
    edges = {f: {} for f in folders}
    for folder, paths in folders.items():
        for path in paths:
            with open(path, errors="ignore") as fh:
                for line in fh:
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = os.path.dirname(os.path.normpath(m.group(1)))
                    if target in folders and target != folder:
                        edges[folder].setdefault(target, os.path.relpath(path, ROOT))
    return edges


def at_depth(edges, depth):
    """The graph with every folder cut to its first `depth` path parts."""
    cut = lambda f: "/".join(f.split("/")[:depth])
    out = {}
    for a, targets in edges.items():
        out.setdefault(cut(a), {})
        for b, why in targets.items():
            if cut(a) != cut(b):
                out[cut(a)].setdefault(cut(b), why)
                out.setdefault(cut(b), {})
    return out


def strongly_connected(graph):
    """Tarjan's strongly connected sets of more than one node, sorted."""
    index, low, on_stack, stack, sets = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.add(w)
                if w == v:
                    break
            if len(members) > 1:
                sets.append(frozenset(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(sets, key=sorted)


def one_cycle(graph, members, start):
    """A shortest cycle through `start` inside its strongly connected set."""
    parent, frontier = {start: None}, [start]
    while frontier:  # breadth first: the shortest way back to start
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    back = [v]  # v, its parent, ..., start
                    while parent[back[-1]] is not None:
                        back.append(parent[back[-1]])
                    return back[::-1] + [start]
                if w in members and w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def describe(graph, members):
    cycle = one_cycle(graph, members, min(members))
    lines = ["  " + " -> ".join(cycle)]
    for a, b in zip(cycle, cycle[1:]):
        lines.append(f"    {a} -> {b}: {graph[a][b]}")
    return lines


def main():
    edges = folder_graph()
    top = at_depth(edges, 1)
    for t in sorted(top):
        print(f"{t} -> {', '.join(sorted(top[t])) or '(nothing)'}")
    deepest = max(f.count("/") + 1 for f in edges)
    seen, failures = set(), []
    for depth in range(1, deepest + 1):
        graph = at_depth(edges, depth)
        for members in strongly_connected(graph):
            if members in seen:
                continue
            seen.add(members)
            head = f"folder cycle among {', '.join(sorted(members))}:"
            failures.append([head] + describe(graph, members))
    for lines in failures:
        print("\n".join(lines))
    if failures:
        return 1
    print(f"check_folder_cycles: {len(edges)} folders, every level checked "
          f"(depth 1 to {deepest}); no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
