#!/usr/bin/env python3
"""Writes the small synthetic sample traces in this folder.

The rows are invented (seeded pseudo-random values), not copied from the
public traces; only the file formats follow them (see the format table in
sim/workload/README.md, which names each dataset's repository). Rerun with
`python3 scenarios/traces/make_samples.py` from the repository root; the
output is byte-identical for the same Python version.
"""
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261129)


def lengths():
    # Long-tailed prompt lengths, short-ish outputs: shapes typical of chat.
    return max(1, int(rng.lognormvariate(6.5, 1.0))), max(1, int(rng.lognormvariate(4.5, 0.9)))


def azure_2023(path, rows):
    # Naive timestamps, always 7 fractional digits.
    t_us = 0
    with open(path, "w", newline="\n") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for _ in range(rows):
            t_us += int(rng.expovariate(1 / 400000.0))  # ~2.5 req/s
            secs, frac_us = divmod(t_us, 1_000_000)
            frac_100ns = frac_us * 10 + rng.randrange(10)
            mm, ss = divmod(7 * 60 + 11 + secs, 60)
            i, o = lengths()
            f.write(f"2023-11-16 18:{mm:02d}:{ss:02d}.{frac_100ns:07d},{i},{o}\n")


def azure_2024(path, rows):
    # UTC offset always present; fractional part 0-6 digits, as in the
    # 2024 files where whole seconds print without a fraction. Crosses
    # midnight to exercise the date arithmetic.
    t_us = 0
    with open(path, "w", newline="\n") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for k in range(rows):
            t_us += int(rng.expovariate(1 / 300000.0))
            if k % 7 == 3:
                t_us += (1_000_000 - t_us % 1_000_000) % 1_000_000  # whole second
            secs, frac_us = divmod(t_us, 1_000_000)
            total = 23 * 3600 + 59 * 60 + 55 + secs
            day, rem = divmod(total, 86400)
            hh, rem = divmod(rem, 3600)
            mm, ss = divmod(rem, 60)
            frac = f".{frac_us:06d}" if frac_us else ""
            i, o = lengths()
            f.write(f"2024-05-{13 + day:02d} {hh:02d}:{mm:02d}:{ss:02d}{frac}+00:00,{i},{o}\n")


def mooncake(path, rows):
    # timestamp in ms from the start; hash_ids: one id per 512-token block,
    # conversations share their leading blocks (a common system prompt).
    next_id = 0
    system_prompt = []
    t_ms = 0
    with open(path, "w", newline="\n") as f:
        for k in range(rows):
            if k > 0:
                t_ms += int(rng.expovariate(1 / 700.0))
            i, o = lengths()
            i += 1024  # every request carries the 2-block shared prefix
            blocks = math.ceil(i / 512)
            if not system_prompt:
                system_prompt = [0, 1]
                next_id = 2
            ids = list(system_prompt)
            for _ in range(blocks - len(ids)):
                ids.append(next_id)
                next_id += 1
            f.write(json.dumps({"timestamp": t_ms, "input_length": i, "output_length": o,
                                "hash_ids": ids}) + "\n")


def burstgpt(path, rows):
    # Timestamp: whole seconds from day-0 midnight; failed requests have
    # Response tokens 0.
    t = 3
    with open(path, "w", newline="\n") as f:
        f.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
        for k in range(rows):
            t += int(rng.expovariate(1 / 4.0))
            model = "GPT-4" if rng.random() < 0.4 else "ChatGPT"
            log = "API log" if rng.random() < 0.5 else "Conversation log"
            i, o = lengths()
            if k % 9 == 4:
                o = 0
            f.write(f"{t},{model},{i},{o},{i + o},{log}\n")


def lengths_file(path, rows):
    with open(path, "w", newline="\n") as f:
        f.write("# token length, optional weight (sim/workload/README.md)\n")
        for _ in range(rows):
            i, _ = lengths()
            w = rng.choice(["", ",1", ",2", ",0.5"])
            f.write(f"{i}{w}\n")


azure_2023(os.path.join(HERE, "azure_2023_sample.csv"), 40)
azure_2024(os.path.join(HERE, "azure_2024_sample.csv"), 40)
mooncake(os.path.join(HERE, "mooncake_sample.jsonl"), 30)
burstgpt(os.path.join(HERE, "burstgpt_sample.csv"), 36)
lengths_file(os.path.join(HERE, "lengths_sample.txt"), 24)
