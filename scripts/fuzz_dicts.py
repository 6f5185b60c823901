#!/usr/bin/env python3
"""Writes tests/fuzz/dicts/<target>.dict: libFuzzer dictionaries of each
input format's keys and words, taken from the same shipped files and seeds
the fuzzers start from (scripts/fuzz.sh), plus the tokens of the text
formats. Rerun after a format gains keys: scripts/fuzz_dicts.py"""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JSON_SOURCES = {
    "scenario": ["scenarios/*.json", "tests/sim/sweep/data/small_*.json", "tests/fuzz/seeds/scenario/*"],
    "grid": ["scenarios/*.json", "tests/fuzz/seeds/grid/*"],
    "card": ["models/cards/*.json"],
    "profile": ["calibrate/profiles/*.json"],
    "measurements": ["calibrate/measurements/public/*.json"],
    "version_drift": ["calibrate/measurements/aic-version-drift.json"],
    "peer_predictions": ["validation/peer/*.json", "tests/fuzz/seeds/peer_predictions/*"],
    "intervals": ["validation/intervals.json"],
    "engine_run": ["tests/fuzz/seeds/engine_run/*"],
    "search_space": ["scenarios/search/*.json", "tests/sim/sweep/data/small_space.json"],
    "summary": ["tests/report/data/*.json", "tests/report/data/pd/*.json",
                "tests/report/data/sweep/*.json"],
    "trace_mooncake": ["scenarios/traces/mooncake_sample.jsonl"],
    "import_vllm": ["tests/fuzz/seeds/import_vllm/*"],
    "import_sglang": ["tests/fuzz/seeds/import_sglang/*"],
    "import_guidellm": ["tests/fuzz/seeds/import_guidellm/*"],
    "import_inferencex": ["tests/fuzz/seeds/import_inferencex/*"],
}
# Words of the non-JSON formats and flag syntaxes.
EXTRA = {
    "scenario": ["\n--set ", "=", ".", "inf", "null", "1e309", "-1", "power_limit_w", "usd_per_kwh",
                 "pue", "capex_usd_per_gpu", "amortization_years"],
    "grid": ["\n--grid ", "=", ",", "[", "]", "{", "}", "inf"],
    "slo": ["<=", "<", ">=", ">", "\n", "ttft_p90_ms", "tpot_p90_ms", "p99_e2el_ms",
            "output_throughput", "request_goodput", "cost_usd_per_million_output_tokens",
            "kw_per_node", "joules_per_output_token", "output_tokens_per_s_per_mw",
            "1e309", "inf", "nan", "-0"],
    "trace_azure_2023": ["TIMESTAMP,ContextTokens,GeneratedTokens\n", ",", "\n", "\r\n", "-", ":",
                         ".", " ", "2023-11-16 18:07:11.0094734", "1969-12-31", "9999"],
    "trace_azure_2024": ["TIMESTAMP,ContextTokens,GeneratedTokens\n", ",", "\n", "+00:00",
                         "-08:00", "2024-05-13 23:59:55.057409+00:00", "9999"],
    "trace_burstgpt": ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n",
                       "ChatGPT", "GPT-4", "API log", "Conversation log", ",", "\n", "1e300"],
    "trace_mooncake": ["\n", "1e309", "9223372036854775807", "[]"],
    "lengths": ["#", ",", "\n", "\r", "1e999", "1000000000", "0.5"],
    "import_vllm": ["Infinity", "-Infinity", "NaN", "\n", "inf"],
    "import_sglang": ["Infinity", "-Infinity", "NaN", "\n", "random"],
    "import_guidellm": ["concurrent", "constant", "poisson", "throughput", "synchronous"],
    "import_inferencex": ["true", "false", "vllm", "sglang"],
    "server_log": ["GPU KV cache size: ", " tokens", "Available KV cache memory: ", " GiB",
                   "# GPU blocks: ", "# cuda blocks: ", "vLLM API server version ",
                   "Avg prompt throughput: ", "Avg generation throughput: ", "Running: ",
                   " reqs", "Waiting: ", "GPU KV cache usage: ", "n/a", "%",
                   "max_total_num_tokens=", "KV Cache is allocated. #tokens: ",
                   "mem_fraction_static=", "Prefill batch. ", "Decode batch. ", "#running-req: ",
                   "#queue-req: ", "#token: ", "#full token: ", "#new-token: ", "token usage: ",
                   "gen throughput (token/s): ", ",", "\n", "1e309", "1,234,567"],
    "metrics_scrape": ["vllm:num_requests_running", "vllm:num_requests_waiting",
                       "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                       "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                       "vllm:iteration_tokens_total", "vllm:prompt_tokens_total",
                       "sglang:num_running_reqs", "sglang:token_usage", "sglang:gen_throughput",
                       "_sum", "_count", "_bucket", "{", "}", "=", "\"", "\\", "le=\"+Inf\"",
                       "+Inf", "-Inf", "NaN", "# HELP ", "# TYPE ", "\n", "1e309"],
}


def Keys(value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            Keys(v, out)
    elif isinstance(value, list):
        for v in value:
            Keys(v, out)
    elif isinstance(value, str) and len(value) <= 24:
        out.add(value)


def Docs(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    for part in [text] + text.replace("\n--set ", "\n").replace("\n--grid ", "\n").splitlines():
        try:
            yield json.loads(part)
        except ValueError:
            continue


def Escape(word):
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c)
                   for c in word)


def main():
    os.makedirs(os.path.join(ROOT, "tests/fuzz/dicts"), exist_ok=True)
    for target in sorted(set(JSON_SOURCES) | set(EXTRA)):
        words = set()
        for pattern in JSON_SOURCES.get(target, []):
            for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
                for doc in Docs(path):
                    Keys(doc, words)
        entries = ['"\\"%s\\""' % Escape(w) for w in sorted(words) if w and '"' not in w]
        entries += ['"%s"' % Escape(w) for w in EXTRA.get(target, [])]
        if JSON_SOURCES.get(target):
            entries += ['"%s"' % Escape(w) for w in ["{", "}", "[", "]", ":", ",", "true", "null",
                                                      "1e309", "-1", "9223372036854775807"]]
        with open(os.path.join(ROOT, "tests/fuzz/dicts", target + ".dict"), "w") as f:
            f.write("# Generated by scripts/fuzz_dicts.py from the %s seeds.\n" % target)
            f.write("\n".join(entries) + "\n")


if __name__ == "__main__":
    main()
