#!/usr/bin/env python3
"""The what-if page (capplan report --interactive) in headless Chromium.

Sets the page's controls through its URL (#scenario=...&dotted.path=value,
which the page applies with the same code a person's change runs), lets the
simulator's WebAssembly module run in the page, reads the record the page
writes (<pre id="capplan-whatif">: the --set overrides it used and the
summary text the module printed) and compares it with
`capplan simulate SCENARIO --set ... --json` run on this machine:
  * the summary text is identical byte for byte (so every number is the same
    double), for a co-located and a PD scenario;
  * an invalid choice shows the CLI's one-line error and exit code;
  * a 1280-px screenshot of the page is a PNG of that width, kept in the
    build folder (whatif-1280.png) for a person to look at.
The CLI runs with CAPPLAN_DATA_DIR=. from the source tree, the way the page's
module finds its embedded data, so paths in both summaries read "./...".
Usage: whatif_browser_test.py CAPPLAN_BIN SOURCE_DIR OUT_DIR
Exit 77 (ctest: skipped) without Chromium.
"""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest

CAPPLAN, SRC, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
WORK = os.path.join(OUT, "work")
PAGE = os.path.join(WORK, "whatif.html")
KIMI = "scenarios/kimi-k2.6-kv-fp8.json"
PD = "scenarios/pd-kimi-k2.6.json"


def cli(*args, env_data_dir=True):
    env = dict(os.environ)
    if env_data_dir:
        env["CAPPLAN_DATA_DIR"] = "."
    return subprocess.run([CAPPLAN, *args], cwd=SRC, env=env, capture_output=True, text=True)


def chromium(mode, fragment, width=1280, height=1000, name="run"):
    profile = os.path.join(WORK, "profile-" + name)
    shutil.rmtree(profile, ignore_errors=True)
    # Virtual time lets the page finish its asynchronous WebAssembly start
    # and first simulation before the DOM is dumped; the network flags keep
    # Chromium from dialling out.
    cmd = ["timeout", "240", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=120000", f"--user-data-dir={profile}",
           f"--window-size={width},{height}", *mode, f"file://{PAGE}#{fragment}"]
    return subprocess.run(cmd, cwd=WORK, capture_output=True, text=True)


def page_record(fragment, name):
    r = chromium(["--dump-dom"], fragment, name=name)
    assert r.returncode == 0, r.stderr[-3000:]
    m = re.search(r'<pre id="capplan-whatif">(.*?)</pre>', r.stdout, re.S)
    assert m and m.group(1).strip(), "page wrote no record; console:\n" + r.stderr[-3000:]
    return json.loads(html.unescape(m.group(1)))


def fragment(scenario, controls):
    from urllib.parse import quote
    return "&".join([f"scenario={quote(scenario)}"] + [f"{k}={quote(str(v))}" for k, v in controls.items()])


class WhatIfPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        r = cli("report", "--interactive", "--scenario", KIMI, "--scenario", PD, "--out", PAGE,
                env_data_dir=False)
        assert r.returncode == 0, r.stderr

    def compare_with_cli(self, scenario, controls, name):
        rec = page_record(fragment(scenario, controls), name)
        self.assertEqual(rec["scenario"], scenario)
        # Every control the test set is among the page's overrides.
        for k, v in controls.items():
            self.assertIn(f"{k}={v}", rec["sets"])
        self.assertNotIn("error", rec, rec)
        sets = [x for s in rec["sets"] for x in ("--set", s)]
        r = cli("simulate", scenario, *sets, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(rec["summary_text"] + "\n", r.stdout,
                         "page and CLI summaries differ for " + " ".join(rec["sets"]))
        # The comparison can fail: the controls changed the result.
        base = cli("simulate", scenario, "--json")
        self.assertNotEqual(base.stdout, r.stdout)
        return json.loads(r.stdout)

    def test_colocated_numbers_equal_cli(self):
        s = self.compare_with_cli(KIMI, {"workload.concurrency": 24, "deployment.kv_cache": "bf16",
                                         "cost.usd_per_gpu_hour": 3.1, "slo.tpot_ms": 40}, "kimi")
        self.assertEqual(s["usd_per_gpu_hour"], 3.1)
        self.assertEqual(s["workload"]["concurrency"], 24)

    def test_pd_numbers_equal_cli(self):
        self.compare_with_cli(PD, {"pd.decode.replicas": 2, "workload.request_rate": 1.5}, "pd")

    def test_invalid_choice_shows_cli_error(self):
        rec = page_record(fragment(KIMI, {"deployment.tp": 3}), "invalid")
        r = cli("simulate", KIMI, *[x for s in rec["sets"] for x in ("--set", s)], "--json")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(rec.get("error"), r.stderr.strip().splitlines()[-1])
        self.assertEqual(rec.get("exit_code"), r.returncode)

    def test_screenshot_1280(self):
        shot = os.path.join(OUT, "whatif-1280.png")
        if os.path.exists(shot):
            os.remove(shot)
        r = chromium([f"--screenshot={shot}"], fragment(KIMI, {"workload.concurrency": 32}),
                     1280, 1400, "shot")
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
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
