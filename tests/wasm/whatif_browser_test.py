#!/usr/bin/env python3
"""The what-if page (capplan report --interactive) in headless Chromium.

Drives Debian's Chromium over the DevTools protocol (--remote-debugging-pipe,
no network): opens the page, waits until the simulator's WebAssembly module
has run, then changes controls as a person does (sets an input's value and
fires its change event), waits for the re-simulation, and reads the record the
page writes (<pre id="capplan-whatif">: the --set overrides it used and the
summary text the module printed). Checks:
  * the summary text equals `capplan simulate SCENARIO --set ... --json` on
    this machine byte for byte (every number the same double), for a
    co-located, a PD and a sampled (log-normal, Poisson) scenario;
  * an invalid choice shows the CLI's one-line error and exit code;
  * the charts are redrawn (bars, SLO lines, trade-off points);
  * the page is one file: the module inside, nothing fetched, no path of
    this machine;
  * a 1280-px screenshot of the page is a PNG of that width, kept in the
    build folder (whatif-1280.png) for a person to look at.
The CLI runs with CAPPLAN_DATA_DIR=. from the source tree, the way the page's
module finds its embedded data, so paths in both summaries read "./...".
Usage: whatif_browser_test.py CAPPLAN_BIN SOURCE_DIR OUT_DIR
Exit 77 (ctest: skipped) without Chromium.
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import unittest

CAPPLAN, SRC, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
WORK = os.path.join(OUT, "work")
PAGE = os.path.join(WORK, "whatif.html")
KIMI = "scenarios/kimi-k2.6-kv-fp8.json"
PD = "scenarios/pd-kimi-k2.6.json"
# Log-normal lengths and Poisson arrivals: the sampling that calls
# exp/log/sqrt (emscripten's musl in the page, glibc in the CLI).
LLAMA = "scenarios/llama-3.1-70b-tp4.json"
# GQA on vLLM: the one engine with the fp8_per_token_head KV format.
LLAMA_VLLM = "scenarios/llama-3.1-70b-tp4-vllm.json"
GLM = "scenarios/glm-5.2-decode-fp8.json"
with open(os.path.join(SRC, "hw/formats.json")) as f:
    FORMATS = json.load(f)
WEIGHT_NAMES = ["default"] + FORMATS["weight_choices"]["names"]
KV_NAMES = FORMATS["kv_cache"]["names"]


def cli(*args, env_data_dir=True):
    env = dict(os.environ)
    if env_data_dir:
        env["CAPPLAN_DATA_DIR"] = "."
    return subprocess.run([CAPPLAN, *args], cwd=SRC, env=env, capture_output=True, text=True)


class Browser:
    """Headless Chromium on a DevTools pipe (fd 3: commands in, fd 4: replies
    out, NUL-terminated JSON)."""

    def __init__(self, width, height):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        profile = os.path.join(WORK, "profile")
        shutil.rmtree(profile, ignore_errors=True)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, True)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def js(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def record(self, after_runs=0, timeout_s=180):
        """The page's record once it has finished run number after_runs + 1."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            # null until the navigation has replaced the blank page
            t = self.js("(document.getElementById('capplan-whatif') || {}).textContent || ''")
            if t:
                rec = json.loads(t)
                if "page_error" in rec:
                    raise AssertionError("page error: " + rec["page_error"])
                if rec.get("runs", 0) > after_runs:
                    return rec
            time.sleep(0.2)
        raise AssertionError("the page did not finish a simulation in time")

    def open(self, url):
        self.call("Page.navigate", {"url": url}, True)
        return self.record()

    def set_controls(self, scenario, controls):
        """Picks the scenario, then sets each control as a person would; the
        last change's re-simulation is the one returned."""
        runs = self.record()["runs"]
        steps = [("scenario", scenario)] if scenario else []
        steps += [(f'[data-path="{k}"]', v) for k, v in controls.items()]
        for sel, v in steps:
            query = "#scenario" if sel == "scenario" else sel
            self.js(f"(() => {{ const e = document.querySelector({json.dumps(query)});"
                    f" e.value = {json.dumps(str(v))};"
                    f" e.dispatchEvent(new Event('change')); }})()")
            runs += 1
            rec = self.record(after_runs=runs - 1)
        return rec

    def screenshot(self, path):
        shot = self.call("Page.captureScreenshot", {"format": "png"}, True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.to_w)
        os.close(self.from_r)


class WhatIfPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        # Two results of one scenario at different loads and run lengths:
        # presets named apart, each re-running its result exactly.
        cls.results = []
        for conc, n in ((4, 24), (8, 40)):
            out = os.path.join(WORK, f"kimi-c{conc}")
            r = cli("simulate", KIMI, "--set", f"workload.concurrency={conc}",
                    "--set", f"workload.num_requests={n}", "--set", "workload.warmup_requests=4",
                    "--out", out)
            assert r.returncode == 0, r.stderr
            cls.results.append(out)
        r = cli("report", *cls.results, "--interactive", "--scenario", KIMI, "--scenario", PD, "--scenario", LLAMA,
                "--scenario", LLAMA_VLLM, "--scenario", GLM, "--out", PAGE,
                env_data_dir=False)
        assert r.returncode == 0, r.stderr
        with open(PAGE) as f:
            cls.page_text = f.read()
        cls.browser = Browser(1280, 1800)
        cls.first = cls.browser.open("file://" + PAGE + "#scenario=" + KIMI)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()

    def test_page_is_one_file(self):
        self.assertIn("CapplanSim", self.page_text)
        self.assertNotIn(SRC, self.page_text)
        self.assertIsNone(re.search(r"<script[^>]+src=|<link[^>]+href=", self.page_text))
        # The first run (scenario as written) already equals the CLI.
        self.assertEqual(self.first["sets"], [])
        self.assertEqual(self.first["summary_text"] + "\n", cli("simulate", self.first["scenario"], "--json").stdout)

    def compare_with_cli(self, scenario, controls):
        rec = self.browser.set_controls(scenario, controls)
        self.assertEqual(rec["scenario"], scenario)
        for k, v in controls.items():
            self.assertIn(f"{k}={v}", rec["sets"])
        self.assertNotIn("error", rec, rec)
        sets = [x for s in rec["sets"] for x in ("--set", s)]
        r = cli("simulate", scenario, *sets, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(rec["summary_text"] + "\n", r.stdout,
                         "page and CLI summaries differ for " + " ".join(rec["sets"]))
        # The comparison can fail: the controls changed the result.
        self.assertNotEqual(cli("simulate", scenario, "--json").stdout, r.stdout)
        return rec, json.loads(r.stdout)

    def test_colocated_numbers_equal_cli_and_charts_redrawn(self):
        rec, s = self.compare_with_cli(KIMI, {"workload.concurrency": 24, "deployment.kv_cache": "bf16",
                                              "cost.usd_per_gpu_hour": 3.1, "slo.tpot_ms": 40})
        self.assertEqual(s["usd_per_gpu_hour"], 3.1)
        self.assertEqual(s["workload"]["concurrency"], 24)
        # Throughput: 3 bars; TTFT, TPOT, ITL, E2E: p50/p90/p99 each; the
        # two SLOs as lines; one trade-off point per successful run so far.
        self.assertEqual(rec["drawn"]["bars"], 3 + 4 * 3)
        self.assertEqual(rec["drawn"]["slo_lines"], 2)
        self.assertGreaterEqual(rec["drawn"]["points"], 5)

    def test_pd_numbers_equal_cli(self):
        self.compare_with_cli(PD, {"pd.decode.replicas": 2, "workload.request_rate": 1.5})

    def test_sampled_workload_numbers_equal_cli(self):
        self.compare_with_cli(LLAMA, {"workload.request_rate": 5.5, "deployment.replicas": 2})

    def test_invalid_choice_shows_cli_error(self):
        rec = self.browser.set_controls(KIMI, {"deployment.tp": 3})
        r = cli("simulate", KIMI, *[x for s in rec["sets"] for x in ("--set", s)], "--json")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(rec.get("error"), r.stderr.strip().splitlines()[-1])
        self.assertEqual(rec.get("exit_code"), r.returncode)
        shown = self.browser.js("document.getElementById('error').textContent")
        self.assertEqual(shown, rec["error"])

    def pickers(self):
        return self.browser.js("[...document.querySelectorAll('#controls select')].map("
                               "(s) => [s.dataset.path, [...s.options].map((o) => o.value), s.value])")

    def test_pickers_offer_the_formats_of_the_card_and_gpu(self):
        glm = dict((p, o) for p, o, _ in (self.browser.set_controls(GLM, {}) and self.pickers()))
        # H200 is sm90: int4 and its kin run there, mxfp8 (sm100+) does not;
        # no KV-only format among the weights, no weight-only among KV.
        self.assertIn("int4", glm["deployment.weights"])
        self.assertIn("default", glm["deployment.weights"])
        self.assertNotIn("mxfp8", glm["deployment.weights"])
        self.assertTrue(set(glm["deployment.weights"]) <= set(WEIGHT_NAMES), glm)
        self.assertTrue(set(glm["deployment.kv_cache"]) <= set(KV_NAMES), glm)
        # GLM-5.2's sparse attention has no nvfp4 or per-head KV layout.
        self.assertIn("fp8", glm["deployment.kv_cache"])
        self.assertNotIn("nvfp4", glm["deployment.kv_cache"])
        self.assertNotIn("fp8_per_token_head", glm["deployment.kv_cache"])
        vllm = dict((p, o) for p, o, _ in (self.browser.set_controls(LLAMA_VLLM, {}) and self.pickers()))
        self.assertIn("fp8_per_token_head", vllm["deployment.kv_cache"])
        pd = dict((p, o) for p, o, _ in (self.browser.set_controls(PD, {}) and self.pickers()))
        for pool in ("pd.prefill", "pd.decode"):
            self.assertIn("int4", pd[pool + ".weights"])
            self.assertNotIn("fp8_per_token_head", pd[pool + ".kv_cache"])  # MLA on SGLang

    def test_no_picker_lists_an_option_twice(self):
        for scenario in (GLM, PD):
            self.browser.set_controls(scenario, {})
            for path, options, _ in self.pickers():
                self.assertEqual(len(options), len(set(options)), f"{scenario} {path}: {options}")

    def test_every_picker_option_gives_a_result_or_the_cli_error(self):
        # Short runs: the sweep is about every option answering, not speed.
        short = {"workload.num_requests": 16, "workload.warmup_requests": 2}
        tried = 0
        for scenario in (GLM, KIMI, PD, LLAMA_VLLM):
            self.browser.set_controls(scenario, short)
            for path, options, initial in self.pickers():
                for opt in options:
                    rec = self.browser.set_controls(None, {path: opt})
                    self.assertIn(f"{path}={opt}", rec["sets"] + [f"{path}={initial}"])
                    r = cli("simulate", scenario, *[x for s in rec["sets"] for x in ("--set", s)], "--json")
                    where = f"{scenario} {' '.join(rec['sets'])}"
                    if "error" in rec:
                        self.assertNotEqual(r.returncode, 0, where)
                        self.assertEqual(rec["error"], r.stderr.strip().splitlines()[-1], where)
                    else:
                        self.assertEqual(r.returncode, 0, where + ": " + r.stderr)
                        self.assertEqual(rec["summary_text"] + "\n", r.stdout, where)
                    tried += 1
                self.browser.set_controls(None, {path: initial})
        self.assertGreater(tried, 30)

    def test_presets_rerun_their_result_and_are_told_apart(self):
        labels = self.browser.js("[...document.querySelectorAll('#preset option')].map((o) => o.textContent)")
        self.assertEqual(len(labels), 2, labels)
        self.assertEqual(len(labels), len(set(labels)), labels)
        for i, out in enumerate(self.results):
            runs = self.browser.record()["runs"]
            self.browser.js(f"(() => {{ const e = document.getElementById('preset'); e.value = '{i}';"
                            " e.dispatchEvent(new Event('change')); })()")
            rec = self.browser.record(after_runs=runs)
            with open(os.path.join(out, "summary.json")) as f:
                self.assertEqual(rec["summary_text"] + "\n", f.read(), labels[i])

    def test_zz_screenshot_1280(self):
        self.browser.set_controls(KIMI, {"deployment.tp": 8, "workload.concurrency": 32})
        shot = os.path.join(OUT, "whatif-1280.png")
        if os.path.exists(shot):
            os.remove(shot)
        self.browser.screenshot(shot)
        with open(shot, "rb") as f:
            png = f.read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(struct.unpack(">I", png[16:20])[0], 1280)
        self.assertGreater(len(png), 30000)  # a blank page compresses to a few kB


if __name__ == "__main__":
    if CHROMIUM is None:
        print("chromium not installed (make test installs it); skipping the what-if page test")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v"])
