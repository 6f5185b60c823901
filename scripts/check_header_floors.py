#!/usr/bin/env python3
"""Fails when sim/'s files include upward past a stated maximum, or in a circle.

Every C++ file under sim/ belongs to a unit and every unit stands on a floor,
from the explicit order in FLOORS below (lowest first). An `#include "sim/..."`
from a file on a lower floor to a header on a higher floor is an upward
include; more than MAX_UPWARD of them fails, and so does any circle between
units (a unit reaching itself through includes, its .cc files included).

Units:
  * a sub-folder of sim/ is one unit, named "<folder>/" (sim/pd, sim/sweep,
    ...): check_folder_cycles.py already orders the files inside it;
  * a top-level file's unit is its stem (serving_pool.h and serving_pool.cc:
    "serving_pool"); a file whose stem starts with another header's stem and
    "_" is part of that header's unit, the longest such stem winning
    (serving_pool_fast_forward.cc, prepared_run_state.h, scenario_calibration.cc,
    request_csv_writer.h);
  * UNIT_OF names the few files that belong to another unit by what they
    are, not by their name.

A unit missing from FLOORS fails the check: a new file takes its floor here.
`--root DIR` checks another checkout (e.g. an exported older commit);
`--list` prints every unit's floor.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_folder_cycles import strongly_connected  # noqa: E402

# The order, lowest first. A unit may include its own floor and the floors
# below it; what sits on one floor does not depend on the floors above.
FLOORS = [
    ("below",
     "sub-folders sim builds on, which include nothing of sim's top level",
     ["pd/", "prefix_cache/", "speculative/", "workload/"]),
    ("state",
     "per-request and per-pool state, statistics, the event queue, the "
     "requests.csv format, a run's options and result",
     ["event_queue", "kv_pool", "kv_tiers", "metrics", "op_provenance", "request_csv",
      "order_statistics", "request_source", "request_table", "batch_digest", "run_options",
      "sim_state"]),
    ("pricing",
     "what a step costs (cost models, the step pricer) and what the summary "
     "derives from prices and measurements (energy, intervals, the steady-state "
     "check, calibration overlays)",
     ["calibration_overlay", "chunk_price_table", "cost_model", "energy", "kernel_scaled_cost_model",
      "prediction_intervals", "steady_state", "step_pricer"]),
    ("policies",
     "schedulers, routers and each rank's prefix cache, by registry",
     ["rank_cache", "router", "scheduler", "sglang_scheduler", "vllm_scheduler"]),
    ("pool types",
     "one pool's config and result",
     ["sim_config"]),
    ("pool",
     "the serving pool, the event loop and the request log",
     ["event_loop", "request_log", "serving_pool"]),
    ("scenario",
     "the parsed scenario and its parser",
     ["scenario"]),
    ("run",
     "pools prepared from a scenario, the links between them (by registry) "
     "and the run driver",
     ["pd_link", "pool_link", "prepared_run", "run_driver"]),
    ("entry",
     "what commands call: RunScenario, a step's explanation",
     ["simulate", "step_explain"]),
    ("above",
     "sub-folders built on the simulator",
     ["sweep/"]),
]

# Files that are part of another unit: the step pricer's two-micro-batch
# rule is a file of its own for size, but it splits the pricer's StepWork and
# the pricer (step_pricer.cc) calls it, so the two are one unit.
UNIT_OF = {"micro_batch_overlap": "step_pricer"}

# Upward includes allowed inside sim/ (the test fails above this): none
# today; one that cannot be avoided raises it here, with its reason.
MAX_UPWARD = 0

SOURCES = (".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'\s*#\s*include\s+"sim/([^"]+)"')


def sim_files(root):
    """Paths under sim/, relative to it, of every C++ file."""
    out = []
    base = os.path.join(root, "sim")
    for dirpath, dirnames, files in os.walk(base):
        dirnames.sort()
        for f in sorted(files):
            if f.endswith(SOURCES):
                out.append(os.path.relpath(os.path.join(dirpath, f), base))
    return out


def unit_namer(files):
    """A function from a sim/-relative path to its unit."""
    header_stems = {os.path.splitext(f)[0] for f in files if "/" not in f and f.endswith(".h")}

    def unit(path):
        if "/" in path:
            return path.split("/")[0] + "/"
        stem = os.path.splitext(path)[0]
        if stem in UNIT_OF:
            return UNIT_OF[stem]
        owners = [h for h in header_stems if h != stem and stem.startswith(h + "_")]
        return max(owners, key=len) if owners else stem

    return unit


def floor_of():
    floors = {}
    for i, (_, _, units) in enumerate(FLOORS):
        for u in units:
            if u in floors:
                sys.exit(f"check_header_floors: {u} is on two floors")
            floors[u] = i
    return floors


def include_edges(root, files, unit):
    """[(from unit, to unit, file, line)] for includes between units."""
    edges = []
    for f in files:
        with open(os.path.join(root, "sim", f), errors="ignore") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                a, b = unit(f), unit(m.group(1))
                if a != b:
                    edges.append((a, b, f"sim/{f}:{n}", m.group(1)))
    return edges


def circles(edges):
    """Strongly connected sets of more than one unit, each sorted."""
    graph = {}
    for a, b, _, _ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    return [sorted(s) for s in strongly_connected(graph)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--list", action="store_true", help="print every unit's floor")
    args = ap.parse_args()
    root = os.path.normpath(args.root)
    files = sim_files(root)
    unit = unit_namer(files)
    floors = floor_of()
    ok = True
    missing = sorted({unit(f) for f in files} - floors.keys())
    for u in missing:
        print(f"FAIL: sim unit '{u}' has no floor: add it to FLOORS in {__file__}")
        ok = False
    if args.list:
        for i, (name, _, units) in enumerate(FLOORS):
            print(f"{i} {name}: {' '.join(units)}")
    edges = include_edges(root, files, unit)
    upward = [e for e in edges if e[0] in floors and e[1] in floors and floors[e[0]] < floors[e[1]]]
    for a, b, where, target in upward:
        print(f"upward: {where} includes sim/{target} "
              f"({FLOORS[floors[a]][0]} -> {FLOORS[floors[b]][0]})")
    print(f"{len(upward)} upward include(s) inside sim/ (at most {MAX_UPWARD})")
    if len(upward) > MAX_UPWARD:
        ok = False
    for s in circles(edges):
        ok = False
        print("FAIL: circle between sim units " + " <-> ".join(s))
        for a, b, where, target in edges:
            if a in s and b in s:
                print(f"  {where} includes sim/{target}")
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
