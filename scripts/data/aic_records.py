#!/usr/bin/env python3
"""aic_records.py: turn NVIDIA AIConfigurator's (AIC) measured Hopper and
Blackwell kernel database into capplan public measurement files
(calibrate/measurements/public/aic-<gpu>-<what>.json, format
capplan.measurements.v1, one kernel implementation per record; see
calibrate/MEASUREMENTS.md). The jobs (which table, which rows, which
formulas) are in aic_jobs.py and aic_moe.py beside this file; number
formatting in aic_format.py.

The build and the tests never run this script; it documents how the
committed aic-*.json files were made and regenerates them byte for byte.

How to run (Python >= 3.9 and pyarrow 26.0.1 from PyPI, in a virtual
environment outside the repository):

  python3 -m venv /tmp/venv-aic && /tmp/venv-aic/bin/pip install pyarrow==26.0.1
  # a clone (or bare mirror) of https://github.com/ai-dynamo/aiconfigurator
  GIT="git --git-dir=/path/to/aiconfigurator/.git"
  COMMIT=$($GIT rev-parse HEAD); DATE=$($GIT log -1 --format=%cs $COMMIT)
  # extract the parquet files named in the jobs under one folder, keeping
  # their repository paths:
  for p in $(python3 scripts/data/aic_records.py --list); do
    mkdir -p /tmp/aic/$(dirname $p) && $GIT show $COMMIT:$p > /tmp/aic/$p; done
  /tmp/venv-aic/bin/python scripts/data/aic_records.py /tmp/aic $COMMIT $DATE \\
      calibrate/measurements/public

Arguments: <folder with the extracted files at their repository paths> <AIC
commit, 40 hex> <commit date YYYY-MM-DD> <output folder>. --list needs no
pyarrow. The output is deterministic: records are sorted by a fixed key,
numbers are integers or fixed significant digits, one record per line. Each
file's header names the GPU, engine and engine version its table was
measured on (`gpu`, `engine`, `engine_version`: AIC keeps one table per
<system>/<op>/<engine>/<version>/).

Version drift (scripts/data/README.md shows its output): extract every
version AIC holds of the jobs' tables, then compare each version with the
pinned one (aic_drift.py says how):

  $GIT ls-tree -r --name-only $COMMIT -- aic-core/src/aiconfigurator_core/systems/data |
    python3 scripts/data/aic_records.py --list-versions |
    while read p; do mkdir -p /tmp/aic/$(dirname $p) && $GIT show $COMMIT:$p > /tmp/aic/$p; done
  /tmp/venv-aic/bin/python scripts/data/aic_records.py --drift /tmp/aic $COMMIT $DATE \\
      calibrate/measurements/aic-version-drift.json > /tmp/aic-drift.md

What a record's fields mean here:
  median_us  AIC's `latency` column (milliseconds) x 1000, 6 significant
             digits. AIC times every op with helper.benchmark_with_power:
             warm-ups, then the op captured in a CUDA graph and the graph
             replayed N times between two CUDA events (eager only where a
             file's note says so); the latency is the mean per op.
  bytes      napkin HBM bytes, flops napkin FLOPs (formulas in each job and
             in each file's source.note).

MoE routing (rows, touched_experts). AIC's "balanced" distribution is
collector/helper.py balanced_logits(num_tokens, E, topk): with
stride = ceil(E / topk), token t gets the one-hot experts
    (t + j*stride) mod E                           if num_tokens >= stride
    (floor(t*stride/num_tokens) + j*stride) mod E  otherwise
for j = 0..topk-1 (the torch code divides in float and truncates, which is
this floor for every shape used here in float32), and the router logits are
a softmax of those one-hot counts, so an ungrouped top-k (plain, sigmoid
with a zero correction bias, or grouped with one group) selects exactly
these experts. With moe_ep_size > 1 AIC measures rank 0, which holds global
experts [0, E/ep) (linear placement in SGLang, vLLM and TRT-LLM) and
receives all num_tokens tokens; the framework layers (SGLang FusedMoE, vLLM
FusedMoE, TRT-LLM create_moe) compute only the (token, expert) pairs whose
expert is local. So for rank 0:
    rows            = #{(t, j) : expert(t, j) < E/ep}
    touched_experts = #{distinct expert(t, j) < E/ep}
One exception: vLLM's collector (collector/vllm/collect_moe.py) sets torch's
default dtype to bfloat16 before it calls balanced_logits, so in the
num_tokens < stride branch the int->float cast, the division, the sum and
the remainder are each rounded to bfloat16 (8 significant bits) before the
truncation; for Kimi (E 384, stride 48) at 32 tokens that leaves 235
distinct experts instead of 256, which vLLM's times confirm (its 32/48-token
time ratio is 0.62, SGLang's and TRT-LLM's 0.67). The vLLM jobs use that
rounding (aic_format.bf16); the others float32. The script checks that no
token draws the same expert twice (the rule would then not fix the
selection) and stops if one does.
DeepEP rows (SGLang 0.5.10 wideep collectors, "uniform" distribution)
follow collector/wideep/sglang/collect_deepep_moe.py instead: with
n = num_tokens / ep tokens per rank and L = E / ep local experts,
  masked (decode):   base = floor(n*topk*ep/E); base == 0 -> n*topk experts
                     get 1 row each; else every local expert gets base rows
  contiguous (prefill): every local expert gets floor(n*topk*ep/E) rows.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aic_drift  # noqa: E402
from aic_format import SCRIPT, dumps, sig  # noqa: E402
from aic_jobs import DATA, GPUS, JOBS  # noqa: E402


def job_paths(gpu):
    for job in JOBS:
        if job['archs'] is None or gpu['arch'] in job['archs']:
            yield job, f"{DATA}/{gpu['dir']}/{job['src']}"


def write_file(path, head, records):
    lines = ['{'] + [f'  {dumps(k)}: {dumps(v)},' for k, v in head.items() if k != 'source'] + ['  "source": {']
    src = list(head['source'].items())
    lines += [f"    {dumps(k)}: {dumps(v)}{',' if i + 1 < len(src) else ''}" for i, (k, v) in enumerate(src)]
    lines += ['  },', '  "records": [']
    lines += [f"    {dumps(r)}{',' if i + 1 < len(records) else ''}" for i, r in enumerate(records)]
    lines += ['  ]', '}']
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8', newline='\n') as f:
        f.write('\n'.join(lines) + '\n')
    os.replace(tmp, path)


def merge_copies(built):
    """Some tables hold a shape twice (two collection runs appended): keep
    one record whose time is the median of the copies (mean of two).
    Returns (records, number of extra copies merged)."""
    by_shape = {}
    for r in built:
        by_shape.setdefault(dumps(r['shape']), []).append(r)
    merged, recs = 0, []
    for group in by_shape.values():
        times = sorted(r['median_us'] for r in group)
        mid = len(times) // 2
        med = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
        merged += len(group) - 1
        rec = dict(group[0])
        rec['median_us'] = sig(med)
        recs.append(rec)
    return recs, merged


class Tables:
    """Parquet tables read once each, as lists of row dicts."""

    def __init__(self, root):
        import pyarrow.parquet as pq
        self._pq, self._root, self._cache = pq, root, {}

    def exists(self, rel):
        return os.path.exists(os.path.join(self._root, rel))

    def get(self, rel):
        if rel not in self._cache:
            self._cache[rel] = self._pq.read_table(os.path.join(self._root, rel)).to_pylist()
        return self._cache[rel]


def file_head(gpu, job, rel, commit, date, merged):
    note = (job['note'] + f' Copied by {SCRIPT} from the parquet file at AIC commit {commit} ({date}); '
            'median_us = latency (ms) x 1000, 6 significant digits.')
    if merged > 0:
        note += (f' The table holds {merged} kept shape(s) more than once (appended collection runs); each such '
                 'shape is one record with the median of its copies.')
    if gpu['sentence']:
        note += ' ' + gpu['sentence']
    _, engine, version, _ = job['src'].split('/')
    return dict(format='capplan.measurements.v1', gpu=gpu['name'], engine=engine, engine_version=version,
                source=dict(
        url=f'https://github.com/ai-dynamo/aiconfigurator/blob/{commit}/{rel}',
        date=date,
        title=f"{job['title']}, {gpu['title']}",
        note=note))


def diagnostics(name, recs, gpu):
    """The highest implied rates, to spot rows faster than the hardware."""
    max_bw = max((r['bytes'] / (r['median_us'] * 1e-6) for r in recs), default=0)
    max_fl = max((r['flops'] / (r['median_us'] * 1e-6) for r in recs), default=0)
    return (f'{name}\t{len(recs)}\tmax {max_bw / 1e12:.2f} TB/s ({100 * max_bw / gpu["hbm"]:.0f}% HBM)\t'
            f'max {max_fl / 1e12:.0f} TFLOPS')


def run(root, commit, date, out_dir):
    tables = Tables(root)
    summary = []
    for gpu in GPUS:
        for job, rel in job_paths(gpu):
            if not tables.exists(rel):
                continue
            built = job['build'](tables.get(rel))
            if not built:
                continue
            recs, merged = merge_copies(built)
            recs.sort(key=job['sort_key'])
            name = f"aic-{gpu['tag']}-{job['what']}.json"
            write_file(os.path.join(out_dir, name), file_head(gpu, job, rel, commit, date, merged), recs)
            summary.append(diagnostics(name, recs, gpu))
    print('\n'.join(summary))


USAGE = ('usage: aic_records.py <extracted AIC files root> <commit> <YYYY-MM-DD> <out dir>\n'
         '       aic_records.py --list | --list-versions < ls-tree names\n'
         '       aic_records.py --drift <extracted AIC files root> <commit> <YYYY-MM-DD> <out json>')


def main(argv):
    if argv[:1] == ['--list']:
        print('\n'.join(sorted({rel for gpu in GPUS for _, rel in job_paths(gpu)})))
        return 0
    if argv[:1] == ['--list-versions']:
        print('\n'.join(aic_drift.list_versions(line.strip() for line in sys.stdin)))
        return 0
    if argv[:1] == ['--drift'] and len(argv) == 5:
        _, root, commit, date, out_json = argv
        rows = aic_drift.drift_rows(root, Tables(root), merge_copies)
        aic_drift.write_json(out_json, rows, commit, date)
        print('## Versions AIC holds\n\n' + aic_drift.versions_table(root) + '\n')
        print('## Median t(version) / t(pinned)\n\n' + aic_drift.compact_table(rows) + '\n')
        print('## Every version\n\n' + aic_drift.drift_table(rows))
        return 0
    if len(argv) != 4:
        print(USAGE, file=sys.stderr)
        return 2
    root, commit, date, out_dir = argv
    if not re.fullmatch(r'[0-9a-f]{40}', commit):
        print(f'aic_records.py: commit {commit!r} must be 40 hex digits', file=sys.stderr)
        return 2
    if not re.fullmatch(r'\d{4}-\d{2}-\d{2}', date):
        print(f'aic_records.py: date {date!r} must be YYYY-MM-DD', file=sys.stderr)
        return 2
    run(root, commit, date, out_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
