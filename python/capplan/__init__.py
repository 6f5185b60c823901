"""capplan from Python: the same commands, results and errors as the CLI.

Every function that takes a scenario accepts a file path or the scenario
document itself as a dict (what the file would hold); ``overrides`` is a
dict of dotted paths. Results are plain dicts; ``requests_frame``,
``sweep_frame``, ``frontier_frame`` and ``validation_frame`` turn them into
pandas DataFrames.

Each function runs the capplan command in-process (the compiled module
``_capplan``) and returns parsed JSON, so a notebook gets exactly what
``capplan ... --json`` prints. Errors raise :class:`capplan.Error` whose
message is the CLI's one-line message (``str(e)``; the CLI prints it after
``capplan: error: ``) and whose ``exit_code`` is the CLI's exit code.

    >>> import capplan
    >>> s = capplan.simulate("scenarios/kimi-k2.6-kv-fp8.json",
    ...                      {"workload.concurrency": 16, "deployment.kv_cache": "bf16"})
    >>> s["deployment"]["kv_cache"], s["output_throughput"] > 0
    ('bf16', True)
    >>> doc = json.load(open("scenarios/kimi-k2.6-kv-fp8.json"))
    >>> doc["workload"]["concurrency"] = 16
    >>> r = capplan.simulate(doc)
    >>> r["workload"]["concurrency"], r["p99_ttft_ms"] >= r["median_ttft_ms"] > 0
    (16, True)

Each function's docstring shows its own example; every example runs as a
test (tests/python/docstring_examples_test.py).
"""
import contextlib
import csv
import json
import os
import re
import shutil
import tempfile

# An installed package (pip install .) carries the shipped data beside the
# module; a build folder's module reads the source tree it was built from.
# $CAPPLAN_DATA_DIR, when set, wins over both.
_PACKAGE_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if os.path.isdir(_PACKAGE_DATA):
    os.environ.setdefault("CAPPLAN_DATA_DIR", _PACKAGE_DATA)

from . import _capplan  # noqa: E402 (after the data folder is known)

__all__ = ["Error", "run", "capacity", "import_model", "simulate", "sweep", "search", "report",
           "calibrate", "import_run", "calibrate_runs",
           "validate", "requests_frame", "sweep_frame", "frontier_frame", "validation_frame",
           "PandasMissing"]


class Error(Exception):
    """A capplan error: str(e) is the CLI's one-line message, e.exit_code the
    CLI's exit code (2 for a bad argument or input), e.command the arguments.

        >>> try:
        ...     capplan.simulate(dict(doc, bogus=1))
        ... except capplan.Error as e:
        ...     print(e.exit_code, e)
        2 scenario: /bogus: unknown field...
    """

    def __init__(self, message, exit_code, args=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.command = list(args or [])


class PandasMissing(Error, ImportError):
    """A DataFrame helper was called without pandas installed (both a
    capplan.Error and an ImportError; install python3-pandas).

        >>> try:
        ...     df = capplan.requests_frame("run1")
        ... except capplan.PandasMissing as e:
        ...     print(e)
        ... else:
        ...     print("pandas is installed")
        pandas is ...
    """


def run(*args):
    """Runs ``capplan ARGS...`` in-process and returns what it printed.

        >>> print(capplan.run("capacity", "--model", "kimi-k2.6", "--gpus", "8"))
        Kimi K2.6 (kimi-k2.6) on 8x h200-sxm ...
    """
    return _run(*args)


def _run(*args):
    # run() under a name validate(), whose argument is called run, can reach.
    argv = [str(a) for a in args]
    code, out, _err, message = _capplan.run(argv)
    if code != 0:
        raise Error(message, code, argv)
    return out


def _absolute_paths(node, base):
    # A scenario's file references ("path" under workload) resolve against
    # the scenario file's folder; a dict's resolve against `base`.
    if isinstance(node, dict):
        return {k: (os.path.join(base, v) if k == "path" and isinstance(v, str) and v
                    and not os.path.isabs(v) else _absolute_paths(v, base))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_absolute_paths(v, base) for v in node]
    return node


@contextlib.contextmanager
def _scenario_files(scenarios):
    """Yields the scenarios as paths: a path as given, a dict written to
    <its name>.json in a private temporary folder removed afterwards. An
    error naming that file names "scenario" instead."""
    tmp = None
    paths = []
    try:
        for sc in scenarios:
            if not isinstance(sc, dict):
                paths.append(os.fspath(sc))
                continue
            if tmp is None:
                tmp = tempfile.mkdtemp(prefix="capplan-scenario-")
            name = re.sub(r"[^A-Za-z0-9._-]", "_", str(sc.get("name") or "scenario"))
            folder = tempfile.mkdtemp(dir=tmp)  # two dicts may share a name
            path = os.path.join(folder, name + ".json")
            with open(path, "w") as f:
                json.dump(_absolute_paths(sc, os.getcwd()), f, indent=2)
            paths.append(path)
        try:
            yield paths
        except Error as e:
            message = str(e)
            for path, sc in zip(paths, scenarios):
                if isinstance(sc, dict):
                    message = message.replace(path, "scenario")
            if message != str(e):
                raise Error(message, e.exit_code, e.command) from None
            raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


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
    hardware="h100-sxm", table=True, ...

        >>> c = capplan.capacity("kimi-k2.6", 8, tp=8, kv="fp8")
        >>> c["kv_capacity_tokens"] > 0
        True
    """
    return json.loads(run("capacity", *_flags({"model": model, "gpus": gpus, **options}), "--json"))


def import_model(path, out=None, name=None):
    """``capplan import-model PATH --out CARD``: the model card written from a
    Hugging Face folder (or its config.json), as a dict; out=FILE also keeps
    the card there. capacity() and simulate() take the folder itself.

        >>> card = capplan.import_model("tests/data/hf/gpt-oss-120b")
        >>> card["num_layers"], capplan.capacity("tests/data/hf/gpt-oss-120b", 1)["gpus"]
        (36, 1)
    """
    extra = ["--name", name] if name is not None else []
    if out is not None:
        run("import-model", path, "--out", out, *extra)
        with open(out) as f:
            return json.load(f)
    with tempfile.TemporaryDirectory(prefix="capplan-import-") as tmp:
        card = os.path.join(tmp, "card.json")
        run("import-model", path, "--out", card, *extra)
        with open(card) as f:
            return json.load(f)


def simulate(scenario, overrides=None, out=None):
    """``capplan simulate SCENARIO --set K=V ... --json``: the summary as a dict.

    scenario: a file path or the scenario document as a dict (relative file
    paths inside a dict resolve against the current folder).
    overrides: {"workload.concurrency": 8, "deployment.kv_cache": "bf16"} or
    ["workload.concurrency=8", ...].
    out: a folder to write summary.json and requests.csv (one row per
    request; requests_frame(out) reads it).

        >>> s = capplan.simulate("scenarios/kimi-k2.6-kv-fp8.json",
        ...                      {"workload.concurrency": 8}, out="run1")
        >>> s["workload"]["concurrency"], sorted(os.listdir("run1"))
        (8, ['requests.csv', 'summary.json'])
    """
    extra = ["--out", out] if out is not None else []
    with _scenario_files([scenario]) as (path,):
        return json.loads(run("simulate", path, *_sets(overrides), *extra, "--json"))


def _out_dir(out, prefix):
    return out if out is not None else tempfile.mkdtemp(prefix=prefix)


def sweep(scenario, grid, out=None, overrides=None, jobs=None):
    """``capplan sweep SCENARIO --grid K=v1,v2 ... --out DIR``; returns every
    point's file (DIR/<point_id>.json) as a dict, in grid order: "grid" (the
    point's values), "status" ("ok" or "invalid"), "summary" (the simulate
    summary) or "error". DIR also holds sweep.csv (one row per point); a fresh
    temporary folder when out is None.
    scenario: a file path or the scenario as a dict.
    grid: {"workload.concurrency": [1, 8, 64]} or ["workload.concurrency=1,8,64"].

        >>> pts = capplan.sweep("scenarios/kimi-k2.6-kv-fp8.json",
        ...                     {"workload.concurrency": [1, 8]}, out="sw")
        >>> [(p["status"], p["summary"]["workload"]["concurrency"]) for p in pts]
        [('ok', 1), ('ok', 8)]
    """
    out = _out_dir(out, "capplan-sweep-")
    if isinstance(grid, dict):
        grid = [f"{k}=" + ",".join(_value(x) for x in v) for k, v in grid.items()]
    with _scenario_files([scenario]) as (path,):
        argv = ["sweep", path, *[x for g in grid for x in ("--grid", g)], *_sets(overrides),
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
    DIR/search.json as a dict. scenario: a file path or the scenario as a
    dict; slo: {"p90_ttft_ms": 2000} or ["p90_ttft_ms<=2000"];
    space: a file path or the space as a dict (written into DIR).

    The space needs its axes and the request rate to bisect (scenarios/search/
    has complete ones); short runs keep the example quick:

        >>> space = {"axes": {"deployment.replicas": [1, 2]},
        ...          "request_rate": {"path": "workload.request_rate",
        ...                           "min_req_per_s": 0.1, "max_req_per_s": 2}}
        >>> r = capplan.search("scenarios/pd-kimi-k2.6-colocated.json",
        ...                    {"p90_tpot_ms": 50}, space, out="search1",
        ...                    overrides={"workload.num_requests": 30})
        >>> r["winner"]["config"], r["winner"]["p90_tpot_ms"] <= 50
        ({'deployment.replicas': 1}, True)
    """
    out = _out_dir(out, "capplan-search-")
    if isinstance(slo, dict):
        slo = [f"{k}<={_value(v)}" for k, v in slo.items()]
    if isinstance(space, dict):
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "space.json")
        with open(path, "w") as f:
            json.dump(space, f, indent=2)
        space = path
    with _scenario_files([scenario]) as (path,):
        run("search", path, *[x for s in slo for x in ("--slo", s)], "--space", space,
            *_sets(overrides), "--out", out,
            *_flags({"objective": objective, "pessimistic": pessimistic, "jobs": jobs}))
    with open(os.path.join(out, "search.json")) as f:
        return json.load(f)


def report(results, out, **options):
    """``capplan report RESULT... --out OUT``; returns OUT. results: summary
    files or result folders (a sweep()/search() out folder). Options are the
    command's flags: format="md", title="...", baseline=[...],
    usd_per_gpu_hour=2.5, interactive=True, scenario=[...], wasm=PATH.
    out="-" returns the report text instead. scenario=[...] takes paths or
    scenario dicts.

        >>> capplan.report(["sw"], "sweep.md")
        'sweep.md'
        >>> print(capplan.report("sw", "-", format="brief"))
        kimi-k2.6-kv-fp8...
    """
    if isinstance(results, (str, os.PathLike)):
        results = [results]
    scenarios = options.pop("scenario", None)
    if isinstance(scenarios, (str, os.PathLike, dict)):
        scenarios = [scenarios]
    with _scenario_files(scenarios or []) as paths:
        text = run("report", *[str(r) for r in results], "--out", out,
                   *_flags(dict(options, scenario=paths or None)))
    return text if out == "-" else out


def calibrate(measurements, out, **options):
    """``capplan calibrate MEASUREMENTS --out PROFILE [...]``: fits a hardware
    profile; returns what the command printed. Options are its flags:
    report="fit.md", name="my-gpu", ...

        >>> m = "calibrate/measurements/public/aic-h200-sglang-deepgemm-fp8-block-gemm.json"
        >>> text = capplan.calibrate(m, "my-gpu.json", report="fit.md")
        >>> os.path.exists("my-gpu.json"), os.path.exists("fit.md")
        (True, True)
    """
    return run("calibrate", measurements, "--out", out, *_flags(options))


def import_run(file, out, scenario=None, **options):
    """``capplan import-run FILE --out CASE [...]``: a benchmark result of your
    own GPUs (vllm bench serve --save-result JSON, sglang bench_serving JSONL,
    GuideLLM benchmarks.json, InferenceX agg JSON) as a validation case,
    returned as a dict and written to ``out``. The deployment comes from
    ``scenario`` (a file path or dict) or from options: model="llama-3.1-8b",
    gpu="h100-sxm", engine="vllm", tp=1, log="server.log", metrics="m.txt".

        >>> case = capplan.import_run("tests/data/runs/vllm-bench-serve.json", "run.json",
        ...     scenario="tests/data/runs/scenario-llama-3.1-8b-h100-vllm.json")
        >>> case["format"], case["rows"][0]["measured"]["mean_ttft_ms"] > 0
        ('capplan.validation_case.v1', True)
    """
    with _scenario_files([scenario] if scenario is not None else []) as paths:
        extra = ["--scenario", paths[0]] if paths else []
        run("import-run", file, "--out", out, *extra, *_flags(options))
    with open(out) as f:
        return json.load(f)


def calibrate_runs(cases, out=None, rows=None, hold=None):
    """``capplan calibrate --runs CASE... --json``: fits the deployment terms
    your runs can tell (host time per step and per running request, a time
    scale per kernel implementation they exercise, the engine's KV capacity)
    and returns the calibration overlay as a dict; out=FILE also writes it, for
    a scenario's ``"calibration"`` key (a path relative to the scenario) or
    simulate(..., {"calibration": os.path.abspath(FILE)}).
    cases: one case file or a list (import_run writes them); rows: fit only
    these row labels, predicting the others; hold: terms kept at their prior.
    Raises capplan.Error when the fit predicts held-out runs worse than the
    shipped priors (the message names the term to hold).

        >>> o = capplan.calibrate_runs("validation/cases/v6-vllm-deepseek-r1-h200-r1bench.json",
        ...                            rows=["TP8 1000/2000", "TP8 30000/100"], out="overlay.json")
        >>> o["format"], o["held_out"]["after_pct"] < o["held_out"]["before_pct"]
        ('capplan.calibration_overlay.v1', True)
        >>> [t["term"] for t in o["terms"] if t["moved"]]
        ['kernel_scale.vllm_triton_fused_moe']
    """
    files = [cases] if isinstance(cases, (str, os.PathLike)) else list(cases)
    argv = ["calibrate", "--runs", *files, *_flags({"rows": rows, "hold": hold, "out": out})]
    return json.loads(run(*argv, "--json"))


def validate(run=None, public=False, cases=None, out=None, profile=None):
    """``capplan validate ... --json`` as a dict. public=True runs the public
    validation cases (validation/cases, or the folder ``cases``): "rows"
    (measured vs predicted per case, row and metric), "comparisons" and
    "classes" (MAPE per class); out=DIR also writes DIR/public-validation.*.
    Otherwise ``run`` is an engine serve-bench run file replayed through the
    step cost model (profile: a hardware profile name or path).

        >>> v = capplan.validate(public=True)
        >>> v["classes"]["serving"]["mape_pct"] >= 0, len(v["rows"]) > 0
        (True, True)
    """
    if run is None and not public:
        raise Error("validate: give run=ENGINE_RUN.json or public=True", 2)
    argv = ["validate", *([run] if run is not None else []),
            *_flags({"public": public, "cases": cases, "out": out, "profile": profile})]
    return json.loads(_run(*argv, "--json"))


def _pandas():
    try:
        import pandas
    except ImportError:
        raise PandasMissing("pandas is not installed; install it (apt install python3-pandas, "
                            "or pip install pandas) to get DataFrames", 1) from None
    return pandas


def _read_csv(path):
    # pandas infers the column types (numbers, booleans) from the text.
    pd = _pandas()
    if not os.path.exists(path):
        raise Error(f"{path}: no such file", 2)
    return pd.read_csv(path)


def requests_frame(out):
    """The per-request table of ``simulate(..., out=DIR)`` (DIR/requests.csv)
    as a pandas DataFrame, one row per request.

        >>> df = capplan.requests_frame("run1")   # simulate(..., out="run1") above
        >>> len(df) > 0, "ttft_ms" in df.columns
        (True, True)
    """
    return _read_csv(os.path.join(os.fspath(out), "requests.csv"))


def sweep_frame(out):
    """A sweep's points (DIR/sweep.csv of ``sweep(..., out=DIR)``) as a pandas
    DataFrame: point_id, one column per grid axis, status, then the summary
    metrics (output_throughput, p90_ttft_ms, ...).

        >>> df = capplan.sweep_frame("sw")   # sweep(..., out="sw") above
        >>> list(df["workload.concurrency"])
        [1, 8]
    """
    return _read_csv(os.path.join(os.fspath(out), "sweep.csv"))


def frontier_frame(result, which="pareto"):
    """A search's Pareto frontier (or its "ranked" configurations with
    which="ranked") as a pandas DataFrame: one row per configuration, its
    config values as columns named by their dotted paths (as in sweep_frame)
    beside rank, gpus,
    request_rate_req_per_s, output_throughput_per_gpu, p90_ttft_ms, ...
    result: what ``search()`` returned, or its out folder.

        >>> r = json.load(open("search1/search.json"))   # search(..., out="search1") above
        >>> list(capplan.frontier_frame(r)["rank"])[:1]
        [1]
    """
    pd = _pandas()
    if not isinstance(result, dict):
        with open(os.path.join(os.fspath(result), "search.json")) as f:
            result = json.load(f)
    rows = []
    for row in result.get(which) or []:
        flat = {k: v for k, v in row.items() if k not in ("config", "summary", "slo_checks")}
        config = row.get("config") or {}
        if isinstance(config, dict):
            flat.update(config)
        rows.append(flat)
    return pd.DataFrame(rows)


def validation_frame(result, which="rows"):
    """Public validation as a pandas DataFrame: one row per case row and
    metric (case, class, row, metric, measured, predicted, error_pct,
    source_url, ...), or with which="comparisons" one per comparison.
    result: what ``validate(public=True)`` returned, or its out folder.

        >>> df = capplan.validation_frame(v)   # v = capplan.validate(public=True) above
        >>> len(df) == len(v["rows"])
        True
    """
    pd = _pandas()
    if not isinstance(result, dict):
        with open(os.path.join(os.fspath(result), "public-validation.json")) as f:
            result = json.load(f)
    return pd.DataFrame(result.get(which) or [])
