#!/usr/bin/env python3
"""`import capplan` (python/, pybind11) against the capplan binary.

Each function must give what the CLI gives: simulate() the summary of
`capplan simulate --json` (equal as parsed JSON, so every number is the same
double), capacity() that of `capplan capacity --json`, errors the CLI's
one-line message and exit code; sweep(), search() and report() write and
return what their commands write.
Usage: capplan_module_test.py CAPPLAN_BIN SOURCE_DIR PYTHON_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CAPPLAN, SRC, PYDIR, OUT = (os.path.abspath(a) for a in sys.argv[1:5])
sys.path.insert(0, PYDIR)
import capplan  # noqa: E402  (the build folder's package)

KIMI = os.path.join(SRC, "scenarios/kimi-k2.6-kv-fp8.json")
SMALL = {"workload.num_requests": 40, "workload.warmup_requests": 4}


def have_pandas():
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def scratch_folders():
    return {d for d in os.listdir(tempfile.gettempdir()) if d.startswith("capplan-scenario-")}


def cli(*args):
    return subprocess.run([CAPPLAN, *map(str, args)], capture_output=True, text=True)


class Module(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(OUT, ignore_errors=True)
        os.makedirs(OUT)

    def test_simulate_equals_cli_json(self):
        over = {"workload.concurrency": 8, "deployment.kv_cache": "bf16", "cost.usd_per_gpu_hour": 2.7}
        s = capplan.simulate(KIMI, over)
        r = cli("simulate", KIMI, *[x for k, v in over.items() for x in ("--set", f"{k}={v}")], "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(s, json.loads(r.stdout))
        self.assertEqual(s["workload"]["concurrency"], 8)
        self.assertEqual(s["usd_per_gpu_hour"], 2.7)
        # The overrides reached the simulator: the default run differs.
        self.assertNotEqual(s["output_throughput"], capplan.simulate(KIMI)["output_throughput"])
        self.assertEqual(capplan.simulate(KIMI, ["workload.concurrency=8", "deployment.kv_cache=bf16",
                                                 "cost.usd_per_gpu_hour=2.7"]), s)

    def test_energy_figures_and_a_power_limit(self):
        over = dict(SMALL, **{"workload.concurrency": 8, "cost.usd_per_kwh": 0.1})
        free = capplan.simulate(KIMI, over)
        # Decode draws about 300 W on an H200: a 250 W limit slows it.
        capped = capplan.simulate(KIMI, dict(over, **{"deployment.power_limit_w": 250}))
        for k in ("joules_per_output_token", "gpu_joules_per_output_token", "avg_kw_per_node",
                  "peak_kw_per_node", "output_tokens_per_s_per_mw",
                  "electricity_usd_per_million_output_tokens"):
            self.assertGreater(free[k], 0, k)
        self.assertEqual(capped["deployment"]["power_limit_w"], 250)
        self.assertLess(capped["provisioned_kw"], free["provisioned_kw"])
        self.assertLess(capped["peak_kw_per_node"], free["peak_kw_per_node"])
        self.assertGreater(capped["median_tpot_ms"], free["median_tpot_ms"])

    def test_errors_carry_the_cli_line_and_exit_code(self):
        with self.assertRaises(capplan.Error) as e:
            capplan.simulate(KIMI, {"deployment.tp": 3})
        r = cli("simulate", KIMI, "--set", "deployment.tp=3", "--json")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual("capplan: error: " + str(e.exception), r.stderr.strip().splitlines()[-1])
        self.assertEqual(e.exception.exit_code, r.returncode)
        with self.assertRaises(capplan.Error) as e:
            capplan.simulate(KIMI, {"workload.concurency": 8})
        self.assertIn("did you mean", str(e.exception))
        with self.assertRaises(capplan.Error) as e:
            capplan.capacity("no-such-model", 8)
        self.assertEqual(e.exception.exit_code, cli("capacity", "--model", "no-such-model", "--gpus", 8).returncode)

    def test_dict_scenario_equals_its_file(self):
        with open(KIMI) as f:
            doc = json.load(f)
        before = scratch_folders()
        self.assertEqual(capplan.simulate(doc, SMALL), capplan.simulate(KIMI, SMALL))
        self.assertEqual(scratch_folders(), before)  # the temporary file is gone
        # The dict itself is not changed.
        with open(KIMI) as f:
            self.assertEqual(doc, json.load(f))

    def test_bad_dict_scenario_names_the_json_path(self):
        with open(KIMI) as f:
            doc = json.load(f)
        doc["deployment"]["tpp"] = 3
        before = scratch_folders()
        with self.assertRaises(capplan.Error) as e:
            capplan.simulate(doc)
        self.assertEqual(scratch_folders(), before)
        self.assertIn("/deployment/tpp", str(e.exception))
        self.assertNotIn(tempfile.gettempdir(), str(e.exception))
        bad = os.path.join(OUT, "bad.json")
        with open(bad, "w") as f:
            json.dump(doc, f)
        r = cli("simulate", bad, "--json")
        self.assertEqual(e.exception.exit_code, r.returncode)
        self.assertEqual(e.exception.exit_code, 2)
        self.assertEqual(str(e.exception), r.stderr.strip().splitlines()[-1]
                         .replace("capplan: error: ", "").replace(bad, "scenario"))

    def test_frames(self):
        with open(KIMI) as f:
            doc = json.load(f)
        run = os.path.join(OUT, "run")
        s = capplan.simulate(doc, SMALL, out=run)
        sw = os.path.join(OUT, "frames-sweep")
        capplan.sweep(doc, {"workload.concurrency": [2, 4]}, out=sw, overrides=SMALL)
        if not have_pandas():
            with self.assertRaises(capplan.Error) as e:
                capplan.requests_frame(run)
            self.assertIsInstance(e.exception, ImportError)
            self.assertIn("python3-pandas", str(e.exception))
            self.skipTest("pandas is not installed; the DataFrame columns are not checked")
        df = capplan.requests_frame(run)
        for col in ("id", "arrival_ms", "ttft_ms", "tpot_ms", "e2el_ms", "input_tokens",
                    "output_tokens", "status"):
            self.assertIn(col, df.columns)
        self.assertEqual(len(df), SMALL["workload.num_requests"])
        self.assertEqual(int((~df["warmup"].astype(bool)).sum()), s["completed"])
        pts = capplan.sweep_frame(sw)
        self.assertEqual(list(pts["workload.concurrency"]), [2, 4])
        for col in ("point_id", "status", "output_throughput", "p90_ttft_ms"):
            self.assertIn(col, pts.columns)

    def test_validate_and_its_frame(self):
        out = os.path.join(OUT, "validation")
        v = capplan.validate(public=True, out=out)
        r = cli("validate", "--public", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(v, json.loads(r.stdout))
        self.assertIn("serving", v["classes"])
        with self.assertRaises(capplan.Error) as e:
            capplan.validate()
        self.assertEqual(e.exception.exit_code, 2)
        missing = os.path.join(OUT, "no-such-run.json")
        with self.assertRaises(capplan.Error) as e:
            capplan.validate(missing)
        r = cli("validate", missing, "--json")
        self.assertEqual(e.exception.exit_code, r.returncode)
        self.assertEqual("capplan: error: " + str(e.exception), r.stderr.strip().splitlines()[-1])
        if not have_pandas():
            self.skipTest("pandas is not installed; the DataFrame columns are not checked")
        df = capplan.validation_frame(v)
        self.assertEqual(len(df), len(v["rows"]))
        for col in ("case", "class", "row", "metric", "measured", "predicted", "error_pct"):
            self.assertIn(col, df.columns)
        self.assertEqual(len(capplan.validation_frame(out, "comparisons")), len(v["comparisons"]))
        self.assertTrue(capplan.validation_frame(out).equals(df))

    def test_help_shows_an_example_for_every_function(self):
        for name in capplan.__all__:
            doc = getattr(capplan, name).__doc__ or ""
            # An example is a call written out: capplan.simulate(...).
            self.assertRegex(doc, r"capplan\.\w+\(", f"help(capplan.{name}) shows no example")

    def test_capacity_equals_cli_json(self):
        c = capplan.capacity("kimi-k2.6", 8, tp=8, kv="fp8")
        r = cli("capacity", "--model", "kimi-k2.6", "--gpus", 8, "--tp", 8, "--kv", "fp8", "--json")
        self.assertEqual(c, json.loads(r.stdout))
        self.assertGreater(c["kv_capacity_tokens"], 0)

    def test_import_model_writes_the_card_the_cli_writes(self):
        folder = os.path.join(SRC, "tests/data/hf/qwen3-8b")
        kept = os.path.join(OUT, "qwen3-8b.json")
        card = capplan.import_model(folder, out=kept)
        r = cli("import-model", folder, "--out", os.path.join(OUT, "qwen3-8b-cli.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(OUT, "qwen3-8b-cli.json")) as f:
            self.assertEqual(card, json.load(f))
        self.assertEqual(card["num_layers"], 36)
        self.assertEqual(capplan.import_model(folder), card)  # no out: a private temp file
        unknown = os.path.join(OUT, "unknown-arch")
        os.makedirs(unknown, exist_ok=True)
        with open(os.path.join(unknown, "config.json"), "w") as f:
            json.dump({"architectures": ["FooForCausalLM"], "model_type": "foo"}, f)
        with self.assertRaises(capplan.Error) as e:
            capplan.import_model(unknown)
        self.assertIn("unknown architecture 'foo'", str(e.exception))

    def test_sweep_then_report(self):
        out = os.path.join(OUT, "sweep")
        pts = capplan.sweep(KIMI, {"workload.concurrency": [2, 4]}, out=out, overrides=SMALL)
        self.assertEqual([p["status"] for p in pts], ["ok", "ok"])
        self.assertEqual([p["summary"]["workload"]["concurrency"] for p in pts], [2, 4])
        one = capplan.simulate(KIMI, dict(SMALL, **{"workload.concurrency": 4}))
        self.assertEqual(pts[1]["summary"]["output_throughput"], one["output_throughput"])
        self.assertEqual(pts[1]["summary"]["p99_itl_ms"], one["p99_itl_ms"])
        md = capplan.report([out], os.path.join(OUT, "report.md"))
        with open(md) as f:
            self.assertIn("|", f.read())
        self.assertIn("kimi", capplan.report(out, "-", format="brief"))

    def test_search(self):
        out = os.path.join(OUT, "search")
        space = {"axes": {"deployment.replicas": [1, 2]},
                 "request_rate": {"path": "workload.request_rate", "min_req_per_s": 0.1,
                                  "max_req_per_s": 2, "rel_tol": 0.5},
                 "top_n": 2}
        r = capplan.search(os.path.join(SRC, "scenarios/pd-kimi-k2.6-colocated.json"),
                           {"p90_tpot_ms": 50}, space, out=out,
                           overrides={"workload.num_requests": 30, "workload.warmup_requests": 3})
        with open(os.path.join(out, "search.json")) as f:
            self.assertEqual(r, json.load(f))
        self.assertTrue(os.path.exists(os.path.join(out, "space.json")))
        if have_pandas():
            df = capplan.frontier_frame(r)
            self.assertEqual(len(df), len(r["pareto"]))
            for col in ("deployment.replicas", "rank", "gpus", "request_rate_req_per_s",
                        "output_throughput_per_gpu", "p90_tpot_ms"):
                self.assertIn(col, df.columns)
            self.assertEqual(list(capplan.frontier_frame(out).columns), list(df.columns))

    def test_interactive_report(self):
        page = os.path.join(OUT, "whatif.html")
        try:
            capplan.report([], page, interactive=True, scenario=[KIMI])
        except capplan.Error as e:
            self.assertIn("WebAssembly module", str(e))  # built without emscripten
            return
        with open(page) as f:
            text = f.read()
        self.assertIn("CapplanSim", text)
        self.assertIn("kimi-k2.6-kv-fp8.json", text)
        self.assertNotIn(SRC, text)  # no absolute path of this machine


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
