"""Version drift of AIConfigurator's kernel tables: the same job (same
kernel source, same row filter, same shapes) run over every engine version
AIC holds for the table, each version's time set against the version the
committed aic-*.json file was copied from.

A table's path is <gpu>/<op>/<engine>/<version>/<table>.parquet; a job names
one version of it. Ratios are t(version) / t(pinned) over the shapes both
versions hold after the job's filter. Older tables name no kernel: AIC
labelled their rows with one generic source per engine and op (LEGACY); where
a version lacks the job's kernel source, its generic rows of the same dtypes
stand in, and the row says so: that ratio is the engine's drift for the op
(whatever kernel it ran then), not one kernel's.
"""

import os
import statistics

from aic_format import dumps
from aic_jobs import DATA, GEMM_IMPLS, GPUS, JOBS

# Job kernel source -> the generic source names older tables used for it.
LEGACY = {
    **{ks: ('vllm_default',) for ks in GEMM_IMPLS['vllm']['sources']},
    **{ks: ('sglang',) for ks in GEMM_IMPLS['sglang']['sources']},
    'vllm_flash_attn_fa3': ('vllm_flash_attn',),
    'fa3': ('flash_attention',),
    'vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts': ('vllm_marlin_int4_moe', 'vllm_marlin_moe'),
    'vllm_fp8moe_triton_tritonexperts': ('vllm_fused_moe',),
    'vllm_fp8moe_flashinfer_cutlass_flashinferexperts': ('vllm_fused_moe',),
    'moe_torch_flow_cutlass': ('moe_torch_flow',),
}
# The columns that say what a row computes in; generic rows must match one
# of the pinned rows' combinations.
DTYPE_COLUMNS = ('gemm_dtype', 'moe_dtype', 'attn_dtype', 'kv_cache_dtype', 'mla_dtype')
# Columns older tables lack, with the value their rows had: no sliding-window
# rows were collected before the column existed.
LEGACY_DEFAULTS = {'window_size': 0}


def _dtypes(row):
    return tuple(row.get(c) for c in DTYPE_COLUMNS)


def stand_in(job, pinned_rows, rows):
    """(rows for the job, the source they came from): the table itself when it
    holds the job's kernel source, else its generic rows relabelled."""
    ks = job.get('kernel_source')
    if not ks or any(r.get('kernel_source') == ks for r in rows):
        return rows, ks or ''
    wanted = {_dtypes(r) for r in pinned_rows if r.get('kernel_source') == ks}
    legacy = LEGACY.get(ks, ())
    out = [{**LEGACY_DEFAULTS, **r, 'kernel_source': ks}
           for r in rows if r.get('kernel_source') in legacy and _dtypes(r) in wanted]
    used = sorted({r['kernel_source'] for r in rows if r.get('kernel_source') in legacy})
    return out, 'generic ' + '+'.join(used) if used else 'kernel source absent'


def _split(src):
    op, engine, version, table = src.split('/')
    return op, engine, version, table


def _version_key(v):
    """Sorts 0.5.6.post2 < 0.5.9 < 0.5.10 and 1.3.0rc5 < 1.3.0rc20."""
    key = []
    for part in v.replace('rc', '.rc.').replace('post', '.post.').replace('dev', '.dev.').split('.'):
        key.append((0, int(part), '') if part.isdigit() else (1, 0, part))
    return key


def _applies(job, gpu):
    return job['archs'] is None or gpu['arch'] in job['archs']


def list_versions(names):
    """The paths among `names` (git ls-tree output) that hold a job's table
    at any version, for a GPU the job runs on."""
    wanted = set()
    for gpu in GPUS:
        for job in JOBS:
            if _applies(job, gpu):
                op, engine, _, table = _split(job['src'])
                wanted.add((f"{DATA}/{gpu['dir']}/{op}/{engine}", table))
    out = []
    for name in names:
        head, _, rest = name.rpartition('/')
        folder, _, _version = head.rpartition('/')
        if (folder, rest) in wanted:
            out.append(name)
    return sorted(out)


def versions_held(root, gpu, src):
    op, engine, _, table = _split(src)
    folder = os.path.join(root, DATA, gpu['dir'], op, engine)
    if not os.path.isdir(folder):
        return []
    return sorted((v for v in os.listdir(folder) if os.path.exists(os.path.join(folder, v, table))),
                  key=_version_key)


def _label(source):
    if source.startswith('generic') or source == 'kernel source absent':
        return source
    return 'same kernel source' if source else 'same table'


def _records(job, rows, merge):
    recs, _ = merge(job['build'](rows))
    return {dumps(r['shape']): r['median_us'] for r in recs}


def _quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def drift_rows(root, tables, merge):
    """One dict per (GPU, job, other version): shapes in common and the
    median, 10th and 90th percentile of t(version) / t(pinned)."""
    rows = []
    for gpu in GPUS:
        for job in JOBS:
            if not _applies(job, gpu):
                continue
            op, engine, pinned, table = _split(job['src'])
            base_rel = f"{DATA}/{gpu['dir']}/{job['src']}"
            if not tables.exists(base_rel):
                continue
            pinned_rows = tables.get(base_rel)
            base = _records(job, pinned_rows, merge)
            if not base:  # no file for this GPU
                continue
            for v in versions_held(root, gpu, job['src']):
                if v == pinned:
                    continue
                row = dict(gpu=gpu['name'], what=job['what'], engine=engine, pinned=pinned, version=v, n=0)
                try:
                    rows_v, row['source'] = stand_in(
                        job, pinned_rows, tables.get(f"{DATA}/{gpu['dir']}/{op}/{engine}/{v}/{table}"))
                    other = _records(job, rows_v, merge)
                except (KeyError, ValueError) as e:  # a column or rule the older table lacks
                    row['error'] = f'{type(e).__name__}: {e}'
                    rows.append(row)
                    continue
                ratios = [other[k] / base[k] for k in base if k in other]
                row['n'] = len(ratios)
                if ratios:
                    row.update(median=statistics.median(ratios), p10=_quantile(ratios, 0.1),
                               p90=_quantile(ratios, 0.9))
                rows.append(row)
    return rows


def versions_table(root):
    """Markdown: per table (op, engine) and GPU, the versions AIC holds."""
    tables = {}
    for job in JOBS:
        op, engine, _, table = _split(job['src'])
        tables.setdefault((op, engine, table), job['src'])
    lines = ['| table | ' + ' | '.join(g['name'] for g in GPUS) + ' |',
             '|---|' + '---|' * len(GPUS)]
    for (op, engine, table), src in sorted(tables.items()):
        cells = [', '.join(versions_held(root, g, src)) or '-' for g in GPUS]
        lines.append(f'| `{op}/{engine}/*/{table}` | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def drift_table(rows):
    """Markdown: one line per (implementation file, GPU, version)."""
    lines = ['| file | GPU | pinned | version | rows at version | shapes | median t(v)/t(pinned) | p10-p90 |',
             '|---|---|---|---|---|---|---|---|']
    for r in rows:
        if r.get('error'):
            tail = f"0 | ({r['error']}) | |"
        elif r['n'] == 0:
            tail = '0 | (no common shape) | |'
        else:
            tail = f"{r['n']} | {r['median']:.3f} | {r['p10']:.3f}-{r['p90']:.3f} |"
        lines.append(f"| {r['what']} | {r['gpu']} | {r['pinned']} | {r['version']} | {_label(r.get('source', ''))} | {tail}")
    return '\n'.join(lines)


def compact_table(rows):
    """Markdown: per implementation file and GPU, `version: median ratio`
    for each version with shapes in common (* = generic rows stood in)."""
    gpus = [g['name'] for g in GPUS]
    cells = {}
    for r in rows:
        if not r['n']:
            continue
        mark = '*' if r.get('source', '').startswith('generic') else ''
        cells.setdefault((r['what'], r['pinned']), {}).setdefault(r['gpu'], []).append(
            f"{r['version']}{mark} {r['median']:.2f}")
    lines = ['| file (pinned version) | ' + ' | '.join(gpus) + ' |', '|---|' + '---|' * len(gpus)]
    for (what, pinned), by_gpu in cells.items():
        lines.append(f'| {what} ({pinned}) | ' + ' | '.join('; '.join(by_gpu.get(g, ['-'])) for g in gpus) + ' |')
    return '\n'.join(lines)


def write_json(path, rows, commit, date):
    """The drift rows as a deterministic JSON file, one row per line."""
    def ratio(x):
        return float(f'{x:.4f}')

    out = []
    for r in rows:
        o = dict(gpu=r['gpu'], file=r['what'], engine=r['engine'], pinned_version=r['pinned'],
                 version=r['version'], rows_at_version=_label(r.get('source', '')), shapes=r['n'])
        if r['n']:
            o.update(median_ratio=ratio(r['median']), p10_ratio=ratio(r['p10']), p90_ratio=ratio(r['p90']))
        out.append(o)
    head = dict(
        format='capplan.aic_version_drift.v1',
        url=f'https://github.com/ai-dynamo/aiconfigurator/tree/{commit}/{DATA}',
        date=date,
        note=('Per aic-<gpu>-<file>.json job and GPU: each other engine version AIC holds of the same table, '
              'filtered by the same job; median/p10/p90 of t(version) / t(pinned version) over the shapes both '
              'hold. rows_at_version "generic X": the version names no kernel, its rows of AIC source X and the '
              'same dtypes stood in (engine drift for the op, not one kernel\'s). Written by '
              'scripts/data/aic_records.py --drift; capplan calibrate --public reads it for each kernel '
              'table\'s version_drift (calibrate/refit.h TableVersionDrift: same-kernel-source rows only).'))
    lines = ['{'] + [f'  {dumps(k)}: {dumps(v)},' for k, v in head.items()] + ['  "rows": [']
    lines += [f"    {dumps(o)}{',' if i + 1 < len(out) else ''}" for i, o in enumerate(out)]
    lines += ['  ]', '}']
    with open(path, 'w', encoding='utf-8', newline='\n') as f:
        f.write('\n'.join(lines) + '\n')
