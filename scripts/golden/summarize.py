#!/usr/bin/env python3
"""Summarises capplan.golden_sched.v1 traces: steps, preemptions, first tokens.

python3 scripts/golden/summarize.py tests/data/golden/vllm/*.jsonl
(standard library only). TTFT in steps: the index of the step that sampled
a request's first token, plus one (every request arrives before step 0).
"""
import json
import statistics
import sys


def summarize(path):
    with open(path) as f:
        lines = [json.loads(x) for x in f]
    head, steps = lines[0], lines[1:]
    first = {}
    preempt = 0
    preempted_ids = set()
    empty = 0
    max_running = 0
    computed = 0
    for s in steps:
        computed += sum(e[1] if isinstance(e, list) else 1 for e in s["sched"])
        preempt += len(s["preempted"])
        preempted_ids.update(s["preempted"])
        if not s["sched"]:
            empty += 1
        max_running = max(max_running, len(s["sched"]))
        for r in s["first"]:
            first[r] = s["step"] + 1
    ttft = sorted(first.values())
    c = head["config"]
    print(f"{path}: vllm {head['version']}, {len(head['requests'])} requests, "
          f"{c['num_gpu_blocks']} blocks x {c['block_size']}, budget "
          f"{c['max_num_batched_tokens']}, max_num_seqs {c['max_num_seqs']}")
    print(f"  steps {len(steps)} (empty {empty}), preemptions {preempt} "
          f"({len(preempted_ids)} requests), most scheduled in a step {max_running}")
    # Every prompt token once, and every output token but the last.
    ideal = sum(r["prompt_tokens"] + r["output_tokens"] - 1
                for r in head["requests"])
    print(f"  tokens computed {computed} ({computed / ideal:.3f} x the "
          f"{ideal} without preemption)")
    print(f"  TTFT in steps: mean {statistics.mean(ttft):.1f}, median "
          f"{statistics.median(ttft)}, min {ttft[0]}, max {ttft[-1]}")
    print("  first-token step per request (id:step): " +
          " ".join(f"{k}:{v}" for k, v in sorted(first.items())))


for p in sys.argv[1:]:
    summarize(p)
