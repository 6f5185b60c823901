"""capplan from Python: the same commands, results and errors as the CLI.

Each function runs the capplan command in-process (the compiled module
``_capplan``) and returns parsed JSON, so a notebook gets exactly what
``capplan ... --json`` prints. Errors raise :class:`capplan.Error` whose
message is the CLI's one-line message (``str(e)``; the CLI prints it after
``capplan: error: ``) and whose ``exit_code`` is the CLI's exit code.

    import capplan
    s = capplan.simulate("scenarios/kimi-k2.6-kv-fp8.json",
                         {"workload.concurrency": 16, "deployment.kv_cache": "bf16"})
    s["output_throughput"], s["p99_ttft_ms"]
"""
import json
import os
import tempfile

from . import _capplan

__all__ = ["Error", "run", "capacity", "simulate", "sweep", "search", "report", "calibrate"]


class Error(Exception):
    """A capplan error: str(e) is the CLI's one-line message."""

    def __init__(self, message, exit_code, args=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.command = list(args or [])


def run(*args):
    """Runs ``capplan ARGS...`` in-process and returns what it printed."""
    argv = [str(a) for a in args]
    code, out, _err, message = _capplan.run(argv)
    if code != 0:
        raise Error(message, code, argv)
    return out


def _value(v):
    # --set parses its value like JSON; strings and paths pass as written.
    if isinstance(v, (str, os.PathLike)):
        return os.fspath(v)
    return json.dumps(v)


def _sets(overrides, flag="--set"):
    """{"a.b": 1} or ["a.b=1"] -> ["--set", "a.b=1", ...]."""
    if not overrides:
        return []
    items = overrides.items() if isinstance(overrides, dict) else None
    pairs = [f"{k}={_value(v)}" for k, v in items] if items is not None else list(overrides)
    return [x for p in pairs for x in (flag, p)]


def _flags(options):
    """Keyword arguments -> CLI flags: engine_version="x" -> --engine-version x,
    explain=True -> --explain, a list -> the flag repeated."""
    argv = []
    for key, v in options.items():
        if v is None or v is False:
            continue
        flag = "--" + key.replace("_", "-")
        if v is True:
            argv.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                argv += [flag, _value(x)]
        else:
            argv += [flag, _value(v)]
    return argv


def capacity(model=None, gpus=None, **options):
    """``capplan capacity --model MODEL --gpus N [--tp ...] --json`` as a dict
    (a list of rows with table=True, which needs no model). Options are the
    command's flags: tp=8, kv="fp8", weights="int4", engine="sglang",
    hardware="h100-sxm", table=True, ..."""
    return json.loads(run("capacity", *_flags({"model": model, "gpus": gpus, **options}), "--json"))


def simulate(scenario, overrides=None):
    """``capplan simulate SCENARIO --set K=V ... --json``: the summary as a dict.
    overrides: {"workload.concurrency": 8, "deployment.kv_cache": "bf16"} or
    ["workload.concurrency=8", ...]."""
    return json.loads(run("simulate", scenario, *_sets(overrides), "--json"))


def _out_dir(out, prefix):
    return out if out is not None else tempfile.mkdtemp(prefix=prefix)


def sweep(scenario, grid, out=None, overrides=None, jobs=None):
    """``capplan sweep SCENARIO --grid K=v1,v2 ... --out DIR``; returns every
    point's file (DIR/<point_id>.json) as a dict, in grid order: "grid" (the
    point's values), "status" ("ok" or "invalid"), "summary" (the simulate
    summary) or "error". DIR also holds sweep.csv (one row per point); a fresh
    temporary folder when out is None.
    grid: {"workload.concurrency": [1, 8, 64]} or ["workload.concurrency=1,8,64"]."""
    out = _out_dir(out, "capplan-sweep-")
    if isinstance(grid, dict):
        grid = [f"{k}=" + ",".join(_value(x) for x in v) for k, v in grid.items()]
    argv = ["sweep", scenario, *[x for g in grid for x in ("--grid", g)], *_sets(overrides),
            "--out", out]
    if jobs is not None:
        argv += ["--jobs", jobs]
    run(*argv)
    points = []
    with open(os.path.join(out, "manifest.jsonl")) as f:
        for line in f:
            if line.strip():
                with open(os.path.join(out, json.loads(line)["point_id"] + ".json")) as p:
                    points.append(json.load(p))
    return sorted(points, key=lambda p: p.get("index", 0))


def search(scenario, slo, space, out=None, overrides=None, objective=None, pessimistic=False,
           jobs=None):
    """``capplan search SCENARIO --slo ... --space SPACE --out DIR``; returns
    DIR/search.json as a dict. slo: {"ttft_p90_ms": 2000} or ["ttft_p90_ms<=2000"];
    space: a file path or the space as a dict (written into DIR)."""
    out = _out_dir(out, "capplan-search-")
    if isinstance(slo, dict):
        slo = [f"{k}<={_value(v)}" for k, v in slo.items()]
    if isinstance(space, dict):
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "space.json")
        with open(path, "w") as f:
            json.dump(space, f, indent=2)
        space = path
    argv = ["search", scenario, *[x for s in slo for x in ("--slo", s)], "--space", space,
            *_sets(overrides), "--out", out,
            *_flags({"objective": objective, "pessimistic": pessimistic, "jobs": jobs})]
    run(*argv)
    with open(os.path.join(out, "search.json")) as f:
        return json.load(f)


def report(results, out, **options):
    """``capplan report RESULT... --out OUT``; returns OUT. results: summary
    files or result folders (a sweep()/search() out folder). Options are the
    command's flags: format="md", title="...", baseline=[...],
    usd_per_gpu_hour=2.5, interactive=True, scenario=[...], wasm=PATH.
    out="-" returns the report text instead."""
    if isinstance(results, (str, os.PathLike)):
        results = [results]
    text = run("report", *[str(r) for r in results], "--out", out, *_flags(options))
    return text if out == "-" else out


def calibrate(measurements, out, **options):
    """``capplan calibrate MEASUREMENTS --out PROFILE [...]``: fits a hardware
    profile; returns what the command printed. Options are its flags:
    report="fit.md", name="my-gpu", ..."""
    return run("calibrate", measurements, "--out", out, *_flags(options))
