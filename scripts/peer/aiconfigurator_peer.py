#!/usr/bin/env python3
"""Run NVIDIA AIConfigurator on every public serving row it can express.

Development tool, not part of `make test`. It reads validation/cases/*.json
(class serving), turns each row that AIConfigurator can express into one
`cli_estimate` call (aggregated serving, its silicon database), and writes a
peer file that `capplan validate --public --peer FILE` prints beside capplan's
own error. Rows it cannot express are listed with the reason.

Setup (outside the repository, pinned):
    python3 -m venv /work/venv-aic
    /work/venv-aic/bin/pip install aiconfigurator==0.12.0
    /work/venv-aic/bin/python scripts/peer/aiconfigurator_peer.py \
        --cases validation/cases --out validation/peer/aiconfigurator.json

How a row becomes an AIConfigurator point (AIConfigurator models a steady
in-flight batch, not a client):
  - batch size: a closed loop's concurrency; an open loop's requests in
    flight at most (num_requests, capped by max_concurrency and by
    deployment.max_running_requests when set); where AIConfigurator finds
    that batch's KV beyond GPU memory, the largest batch that fits (as the
    engine admits no more than its pool holds; `batch_size_requested`
    keeps the first);
  - isl / osl: the row's lengths (a client's range ratio r on a fixed L
    gives the mean L (1 + r) / 2 for the InferenceX client);
  - backend version: AIConfigurator answers only at its database's version
    slot (vLLM 0.24.0, SGLang 0.5.14 in 0.12.0); the row's own engine
    version is recorded beside it (`version_match`);
  - parallelism: tp, attention DP (dp_attention's dp), MoE TP x EP = the
    attention group's GPUs;
  - formats: the card's checkpoint dtypes unless the row sets weights,
    weights_per_component or kv_cache.
Metrics: tokens/s -> output_throughput (/ gpus for _per_gpu); x (isl + osl) / osl ->
total_token_throughput (/ gpus for _per_gpu); TTFT -> mean_ttft_ms; TPOT ->
mean_tpot_ms and mean_itl_ms; request latency -> mean_e2el_ms.
"""

import argparse
import contextlib
import copy
import glob
import io
import json
import logging
import os
import sys

FORMAT = "capplan.peer_predictions.v1"

# capplan model card -> the AIConfigurator model config (bundled with
# aiconfigurator-core) of the same architecture.
MODEL = {
    "deepseek-v3": "deepseek-ai/DeepSeek-R1",
    "glm-5.2": "zai-org/GLM-5.2",
    "kimi-k2.6": "moonshotai/Kimi-K2.5",
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
}
# Where AIConfigurator bundles the quantized release itself, its config (the
# checkpoint's layout and quantization) is used.
MODEL_BY_WEIGHTS = {
    ("glm-5.2", "fp8"): "zai-org/GLM-5.2-FP8",
    ("kimi-k2.6", "nvfp4"): "nvidia/Kimi-K2.6-NVFP4",
}
SYSTEM = {"h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm", "b200-sxm": "b200_sxm"}
MOE_MODELS = {"deepseek-v3", "glm-5.2", "kimi-k2.6", "qwen3-30b-a3b", "qwen3-235b-a22b"}
# Block-scaled FP8 releases (DeepSeek, GLM); dense FP8 checkpoints here are
# per-tensor / per-token (Neural Magic, Qwen FP8 dynamic).
BLOCK_FP8 = {"deepseek-v3", "glm-5.2"}
DTYPE_TO_GEMM = {"bf16": "bfloat16", "int4": "int4_wo", "nvfp4": "nvfp4"}
DTYPE_TO_MOE = {"bf16": "bfloat16", "int4": "int4_wo", "nvfp4": "nvfp4"}


class NotExpressible(Exception):
  pass


def set_path(doc, dotted, value):
  keys = dotted.split(".")
  cur = doc
  for k in keys[:-1]:
    cur = cur.setdefault(k, {})
  cur[keys[-1]] = value


def row_scenario(case, row):
  sc = copy.deepcopy(case["scenario"])
  for k, v in (row.get("set") or {}).items():
    set_path(sc, k, v)
  return sc


def card_dtypes(repo, model):
  with open(os.path.join(repo, "models", "cards", model + ".json")) as f:
    ck = json.load(f).get("checkpoint", {})
  return {part: spec.get("dtype", "bf16") for part, spec in ck.items()}


def quant_modes(repo, model, dep):
  dtypes = card_dtypes(repo, model)
  w = dep.get("weights", "default")
  if w not in (None, "default"):
    dtypes = {part: w for part in dtypes}
  for part, dt in (dep.get("weights_per_component") or {}).items():
    dtypes[part] = dt

  def one(dt, table):
    if dt == "fp8":
      return "fp8_block" if model in BLOCK_FP8 else "fp8"
    if dt not in table:
      raise NotExpressible(f"weight format {dt} has no AIConfigurator quant mode")
    return table[dt]

  gemm_dt = dtypes.get("attention", dtypes.get("dense_ffn", "bf16"))
  q = {"gemm_quant_mode": one(gemm_dt, DTYPE_TO_GEMM)}
  if model in MOE_MODELS:
    q["moe_quant_mode"] = one(dtypes.get("experts", gemm_dt), DTYPE_TO_MOE)
  kv = dep.get("kv_cache", "bf16")
  if kv not in ("bf16", "fp8"):
    raise NotExpressible(f"kv_cache {kv} has no AIConfigurator mode")
  q["kvcache_quant_mode"] = "fp8" if kv == "fp8" else "bfloat16"
  return q


def mean_len(workload, key):
  spec = workload[key]
  if spec.get("dist") not in ("fixed", "uniform"):
    raise NotExpressible(f"workload.{key} dist {spec.get('dist')} is not a fixed length")
  value = spec["value"]
  r = workload.get("range_ratio")
  if workload.get("client") == "inferencex" and r is not None:
    return int(round(value * (1 + r) / 2))
  return int(value)


def batch_size(workload, dep):
  kind = workload["kind"]
  if kind == "closed_loop":
    b = workload["concurrency"]
  elif kind == "open_loop":
    b = workload["num_requests"]
    if workload.get("max_concurrency"):
      b = min(b, workload["max_concurrency"])
  else:
    raise NotExpressible(f"workload kind {kind} has no fixed batch")
  if dep.get("max_running_requests"):
    b = min(b, dep["max_running_requests"])
  return int(b)


def point(repo, sc):
  model = sc["model"]
  if model not in MODEL:
    raise NotExpressible(f"model {model}: no AIConfigurator model config of its architecture")
  if sc["hardware"] not in SYSTEM:
    raise NotExpressible(f"hardware {sc['hardware']}: no AIConfigurator system")
  dep = sc["deployment"]
  if dep["engine"] not in ("vllm", "sglang"):
    raise NotExpressible(f"engine {dep['engine']}")
  if dep.get("replicas", 1) != 1 or dep.get("phase", "both") != "both":
    raise NotExpressible("replicas or disaggregated phase")
  tp = dep["tp"]
  dp = dep.get("dp", tp) if dep.get("dp_attention") else 1
  gpus = dep["gpus"]
  ep = dep.get("ep", 1)
  wl = sc["workload"]
  model_path = MODEL[model]
  w = dep.get("weights", "default")
  if (model, w) in MODEL_BY_WEIGHTS:
    model_path = MODEL_BY_WEIGHTS[(model, w)]
  cfg = {
      "model_path": model_path,
      "system_name": SYSTEM[sc["hardware"]],
      "backend_name": dep["engine"],
      "isl": mean_len(wl, "input_tokens"),
      "osl": mean_len(wl, "output_tokens"),
      "batch_size": batch_size(wl, dep),
      # capplan's tp is the GPUs of one model copy; with DP attention it splits
      # into dp attention ranks of tp / dp.
      "tp_size": tp // dp,
      "attention_dp_size": dp,
  }
  if model in MOE_MODELS:
    cfg["moe_ep_size"] = ep
    cfg["moe_tp_size"] = tp // ep
  cfg.update(quant_modes(repo, model, dep))
  spec = dep.get("speculative")
  if spec:
    if spec.get("method") != "mtp":
      raise NotExpressible(f"speculative method {spec.get('method')}")
    cfg["nextn"] = int(spec["draft_tokens"])
    cfg["nextn_accepted"] = float(spec["mean_accept_length"]) - 1.0
  if dep.get("mem_fraction_static"):
    cfg["free_gpu_memory_fraction"] = dep["mem_fraction_static"]
  return cfg, gpus


def is_oom(e):
  return isinstance(e, RuntimeError) and str(e).startswith("OOM")


def estimate(cli_estimate, cfg):
  """cli_estimate; where the batch's KV does not fit, the largest batch that
  does (an engine admits no more than its KV pool holds)."""
  sink = io.StringIO()
  with contextlib.redirect_stdout(sink):
    try:
      return cli_estimate(**cfg)
    except RuntimeError as e:
      if not is_oom(e) or cfg["batch_size"] <= 1:
        raise
    lo, hi, best = 1, cfg["batch_size"] - 1, None
    while lo <= hi:
      mid = (lo + hi) // 2
      try:
        best = (mid, cli_estimate(**{**cfg, "batch_size": mid}))
        lo = mid + 1
      except RuntimeError as e:
        if not is_oom(e):
          raise
        hi = mid - 1
  if best is None:
    raise NotExpressible("aiconfigurator: OOM even at batch 1")
  cfg["batch_size_requested"] = cfg["batch_size"]
  cfg["batch_size"] = best[0]
  return best[1]


def predict(cli_estimate, cfg, gpus, metrics):
  r = estimate(cli_estimate, cfg)
  out = {}
  tps = r.tokens_per_second
  total = tps * (cfg["isl"] + cfg["osl"]) / cfg["osl"]
  table = {
      "output_throughput": tps,
      "output_throughput_per_gpu": tps / gpus,
      "total_token_throughput": total,
      "total_token_throughput_per_gpu": total / gpus,
      "mean_ttft_ms": r.ttft,
      "mean_tpot_ms": r.tpot,
      "mean_itl_ms": r.tpot,
      "mean_e2el_ms": r.request_latency,
  }
  for m in metrics:
    if m in table and table[m] and table[m] > 0:
      out[m] = round(float(table[m]), 4)
  return out, r


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--cases", default="validation/cases")
  ap.add_argument("--out", default="validation/peer/aiconfigurator.json")
  ap.add_argument("--repo", default=".")
  args = ap.parse_args()

  logging.disable(logging.WARNING)
  from importlib.metadata import version as pkg_version
  from aiconfigurator.cli.api import cli_estimate

  aic_version = pkg_version("aiconfigurator")
  predictions, not_covered = [], []
  for path in sorted(glob.glob(os.path.join(args.cases, "*.json"))):
    with open(path) as f:
      case = json.load(f)
    if case.get("class") != "serving" or case.get("predict") != "simulate":
      continue
    for row in case["rows"]:
      if row.get("skipped"):
        continue
      key = {"case": case["name"], "row": row["label"]}
      try:
        sc = row_scenario(case, row)
        cfg, gpus = point(args.repo, sc)
        pred, r = predict(cli_estimate, cfg, gpus, list(row["measured"]))
        if not pred:
          raise NotExpressible("none of the row's metrics has an AIConfigurator counterpart")
      except NotExpressible as e:
        not_covered.append({**key, "reason": str(e)})
        continue
      except Exception as e:  # AIConfigurator's own refusal (no data, no fit)
        msg = " ".join(str(e).split())[:300]
        not_covered.append({**key, "reason": f"aiconfigurator: {type(e).__name__}: {msg}"})
        continue
      predictions.append({
          **key,
          "predicted": pred,
          "engine_version": sc["deployment"].get("engine_version"),
          "peer_backend_version": r.backend_version,
          "version_match": sc["deployment"].get("engine_version") == r.backend_version,
          "config": cfg,
      })
      print(f"{key['case']} | {key['row']}: {pred}", file=sys.stderr)
  doc = {
      "format": FORMAT,
      "peer": "aiconfigurator",
      "peer_version": aic_version,
      "generated_by": "/work/venv-aic/bin/python scripts/peer/aiconfigurator_peer.py "
                      f"--cases {args.cases} --out {args.out}",
      "mode": "cli_estimate agg, database_mode SILICON",
      "predictions": predictions,
      "not_covered": not_covered,
  }
  tmp = args.out + ".tmp"
  os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
  with open(tmp, "w") as f:
    json.dump(doc, f, indent=1, sort_keys=False)
    f.write("\n")
  os.replace(tmp, args.out)
  print(f"{len(predictions)} rows predicted, {len(not_covered)} not covered -> {args.out}",
        file=sys.stderr)


if __name__ == "__main__":
  main()
