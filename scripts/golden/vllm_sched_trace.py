#!/usr/bin/env python3
"""Per-step traces of vLLM's V1 Scheduler, driven on a CPU with a stub executor.

Drives vllm.v1.core.sched.scheduler.Scheduler as vLLM's own tests do
(tests/v1/core/utils.py create_scheduler): a local model config (no
download, no tokenizer), an explicit KV block count, and a fake model
runner that samples one token for every request whose scheduled tokens
reach the end of its known tokens (prompt, or prompt + output when a
preempted request is recomputed). Nothing runs on a GPU: the scheduler and
its KVCacheManager only count blocks.

Writes JSONL (format capplan.golden_sched.v1): a header line (engine,
version, command, config, requests), then one line per schedule() call:
  step       index of the schedule() call, from 0
  sched      the scheduled requests in vLLM's order (running pass, then
             the waiting pass): id for one token, [id, tokens] for more
  new        ids admitted for the first time
  resumed    ids admitted again after a preemption
  preempted  ids preempted in this schedule() (in preemption order)
  first      ids whose first output token this step sampled
  finished   ids that finished at this step
  free_blocks  free KV blocks after update_from_output (the null block is
             never free)

Usage: scripts/golden/README.md.
"""

import argparse
import collections
import dataclasses
import inspect
import json
import os
import shlex
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

FORMAT = "capplan.golden_sched.v1"
BLOCK_SIZE = 16


def cases():
    """The traced runs: config and requests (all arrive before step 0)."""
    out = {}
    # KV-starved: 96 requests of 1024 / 256 tokens at once; the pool holds
    # about a sixth of their total (prompt + output) tokens.
    n = 96
    out["kv_starved"] = {
        "config": {"num_gpu_blocks": 1280, "max_num_batched_tokens": 8192,
                   "max_num_seqs": 256},
        "requests": [(i, 1024, 256) for i in range(n)],
    }
    # Prompt-heavy chunked prefill: 12 prompts of 32K tokens, 128 outputs,
    # an 8192-token budget, a pool of about four prompts.
    out["chunked_prefill"] = {
        "config": {"num_gpu_blocks": 8200, "max_num_batched_tokens": 8192,
                   "max_num_seqs": 256},
        "requests": [(i, 32768, 128) for i in range(12)],
    }
    # Mixed: a spread of lengths (a few long prompts or outputs, many
    # short), moderate pressure.
    reqs = []
    lens = [(6000, 64), (200, 900), (3000, 300), (120, 60), (800, 500),
            (64, 32), (12000, 128), (400, 700), (1500, 40), (90, 1200),
            (2500, 250), (300, 80), (5000, 600), (150, 150), (700, 20),
            (40, 400)]
    for i in range(48):
        p, o = lens[i % len(lens)]
        # Vary lengths off the block boundaries (deterministic).
        p += (i * 37) % 29
        o += (i * 11) % 13
        reqs.append((i, p, o))
    out["mixed"] = {
        "config": {"num_gpu_blocks": 2400, "max_num_batched_tokens": 4096,
                   "max_num_seqs": 32},
        "requests": reqs,
    }
    return out


def _kwargs_for(cls, **kw):
    """The keyword arguments `cls` accepts (APIs differ across versions)."""
    params = inspect.signature(cls).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return kw
    return {k: v for k, v in kw.items() if k in params}


def write_model_dir(path, max_len):
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 1,
        "vocab_size": 1024,
        "max_position_embeddings": max_len,
        "rms_norm_eps": 1e-5,
        "torch_dtype": "float16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f)


def use_cpu_platform():
    """Resolves vLLM's platform to its CPU one before any config reads it.

    A CUDA build on a machine without a GPU resolves to no platform, whose
    config checks raise; the CPU platform's only touch the KV dtype and
    keep block_size 16 (vllm/platforms/cpu.py check_and_update_config).
    """
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform
    platforms._current_platform = CpuPlatform()


def make_scheduler(model_dir, cfg, max_len, prefix_caching, async_scheduling):
    import torch
    from vllm.config import (CacheConfig, DeviceConfig, ModelConfig,
                             SchedulerConfig, VllmConfig)
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                            KVCacheGroupSpec)
    from vllm.v1.structured_output import StructuredOutputManager

    sched_cfg = SchedulerConfig(**_kwargs_for(
        SchedulerConfig,
        max_num_seqs=cfg["max_num_seqs"],
        max_num_batched_tokens=cfg["max_num_batched_tokens"],
        max_model_len=max_len,
        enable_chunked_prefill=True,
        long_prefill_token_threshold=0,
        async_scheduling=async_scheduling,
        is_encoder_decoder=False,
    ))
    model_cfg = ModelConfig(**_kwargs_for(
        ModelConfig, model=model_dir, tokenizer=model_dir,
        skip_tokenizer_init=True, dtype="float16", seed=0,
        max_model_len=max_len))
    cache_cfg = CacheConfig(**_kwargs_for(
        CacheConfig, block_size=BLOCK_SIZE, gpu_memory_utilization=0.9,
        swap_space=0, cache_dtype="auto",
        enable_prefix_caching=prefix_caching))
    # No accelerator here: the scheduler only counts blocks.
    vllm_cfg = VllmConfig(scheduler_config=sched_cfg, model_config=model_cfg,
                          cache_config=cache_cfg,
                          device_config=DeviceConfig(device="cpu"))
    spec = FullAttentionSpec(**_kwargs_for(
        FullAttentionSpec, block_size=BLOCK_SIZE, num_kv_heads=1,
        head_size=1, dtype=torch.float32, use_mla=False))
    kv_cfg = KVCacheConfig(num_blocks=cfg["num_gpu_blocks"],
                           kv_cache_tensors=[],
                           kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    cache_cfg.num_gpu_blocks = cfg["num_gpu_blocks"]
    cls = AsyncScheduler if async_scheduling else Scheduler
    return cls(**_kwargs_for(
        cls, vllm_config=vllm_cfg, kv_cache_config=kv_cfg,
        block_size=BLOCK_SIZE,
        log_stats=False,
        structured_output_manager=StructuredOutputManager(vllm_cfg)))


def block_hasher(prefix_caching):
    """Block hashes for prefix caching (None when off), as vLLM's tests do."""
    if not prefix_caching:
        return None
    from vllm.v1.core import kv_cache_utils
    try:
        from vllm.utils.hashing import sha256
    except ImportError:  # before 0.11
        from vllm.utils import sha256
    kv_cache_utils.init_none_hash(sha256)
    return kv_cache_utils.get_request_block_hasher(BLOCK_SIZE, sha256)


def make_request(rid, prompt, output, hasher):
    from vllm.sampling_params import SamplingParams
    from vllm.v1.request import Request
    sp = SamplingParams(max_tokens=output, ignore_eos=True)
    # Distinct token ids per request (prefix caching is off anyway).
    toks = [(rid * 7 + k) % 1000 + 3 for k in range(prompt)]
    kw = _kwargs_for(Request, request_id=str(rid), prompt_token_ids=toks,
                     sampling_params=sp, pooling_params=None,
                     eos_token_id=2, arrival_time=0.0,
                     multi_modal_kwargs=None, multi_modal_hashes=None,
                     multi_modal_placeholders=None, mm_features=None,
                     lora_request=None, block_hasher=hasher)
    return Request(**kw)


def make_output(sched_out, sampled):
    """A ModelRunnerOutput: `sampled` maps each scheduled id to its tokens."""
    from vllm.v1.outputs import ModelRunnerOutput
    ids = list(sched_out.num_scheduled_tokens.keys())
    fields = {f.name for f in dataclasses.fields(ModelRunnerOutput)}
    kw = {"req_ids": ids,
          "req_id_to_index": {r: i for i, r in enumerate(ids)},
          "sampled_token_ids": [sampled[r] for r in ids]}
    for name, val in (("spec_token_ids", None), ("logprobs", None),
                      ("prompt_logprobs_dict", {}),
                      ("pooler_output", [])):
        if name in fields:
            kw[name] = val
    out = ModelRunnerOutput(**kw)
    return out


def free_blocks(sched):
    return sched.kv_cache_manager.block_pool.get_num_free_blocks()


def schedule_step(sched, reqs, step, async_scheduling):
    """One schedule(): the step's record and the tokens it will sample."""
    from vllm.v1.request import RequestStatus
    before = {k: (r.status, getattr(r, "num_output_placeholders", 0))
              for k, r in reqs.items() if not r.is_finished()}
    out = sched.schedule()
    sampled = {}
    for rid in out.num_scheduled_tokens:
        r = reqs[rid]
        if async_scheduling:
            # AsyncScheduler._update_after_schedule adds an output
            # placeholder to every request that samples in this step.
            samples = r.num_output_placeholders > before[rid][1]
        else:
            # schedule() advanced num_computed_tokens by the scheduled
            # tokens: a request at the end of its known tokens samples one.
            samples = r.num_computed_tokens >= r.num_tokens
        sampled[rid] = [7] if samples else []
    rec = {"step": step,
           "sched": [int(k) if v == 1 else [int(k), int(v)]
                     for k, v in out.num_scheduled_tokens.items()],
           "new": [], "resumed": [], "preempted": [], "first": [],
           "finished": []}
    for rid in out.num_scheduled_tokens:
        st = before[rid][0]
        if st == RequestStatus.WAITING:
            rec["new"].append(int(rid))
        elif st == RequestStatus.PREEMPTED:
            rec["resumed"].append(int(rid))
    for rid, (st, _) in before.items():
        if st == RequestStatus.RUNNING and reqs[rid].status == RequestStatus.PREEMPTED:
            rec["preempted"].append(int(rid))
    return out, sampled, rec


def update_step(sched, reqs, out, sampled, rec):
    """update_from_output for a scheduled step: its first tokens, finishes."""
    before = {k: r.num_output_tokens for k, r in reqs.items()
              if not r.is_finished()}
    sched.update_from_output(out, make_output(out, sampled))
    for rid, n_out in before.items():
        r = reqs[rid]
        if n_out == 0 and r.num_output_tokens > 0:
            rec["first"].append(int(rid))
        if r.is_finished():
            rec["finished"].append(int(rid))
    rec["free_blocks"] = free_blocks(sched)


def run_case(name, case, version, command, max_steps, prefix_caching,
             async_scheduling):
    cfg = dict(case["config"])
    max_len = max(p + o for _, p, o in case["requests"]) + BLOCK_SIZE
    with tempfile.TemporaryDirectory() as d:
        write_model_dir(d, max_len)
        sched = make_scheduler(d, cfg, max_len, prefix_caching,
                               async_scheduling)
    hasher = block_hasher(prefix_caching)
    reqs = {}
    for rid, p, o in case["requests"]:
        r = make_request(rid, p, o, hasher)
        reqs[r.request_id] = r
        sched.add_request(r)
    header = {
        "format": FORMAT, "engine": "vllm", "version": version,
        "case": name, "command": command,
        "config": dict(cfg, block_size=BLOCK_SIZE, max_model_len=max_len,
                       enable_prefix_caching=prefix_caching,
                       enable_chunked_prefill=True,
                       async_scheduling=async_scheduling,
                       num_lookahead_tokens=0,
                       usable_blocks=free_blocks(sched),
                       # Admission checks the whole prompt's blocks, not
                       # only the first chunk's (a vLLM 0.19 default;
                       # absent before).
                       scheduler_reserve_full_isl=bool(getattr(
                           sched, "scheduler_reserve_full_isl", False)),
                       watermark_blocks=int(getattr(
                           sched.kv_cache_manager, "watermark_blocks", 0))),
        "requests": [{"id": rid, "prompt_tokens": p, "output_tokens": o}
                     for rid, p, o in case["requests"]],
    }
    lines = [header]
    # vLLM's EngineCore.step_with_batch_queue: with asynchronous scheduling
    # two batches are in flight, so schedule() for step n + 1 runs before
    # update_from_output of step n.
    queue_size = 2 if async_scheduling else 1
    alive = sched.has_requests if async_scheduling else sched.has_unfinished_requests
    pending = collections.deque()
    while True:
        if alive():
            if len(lines) > max_steps:
                raise SystemExit(f"{name}: still running after {max_steps} steps")
            out, sampled, rec = schedule_step(sched, reqs, len(lines) - 1,
                                              async_scheduling)
            lines.append(rec)
            pending.appendleft((out, sampled, rec))
            if len(pending) < queue_size and (
                    out.total_num_scheduled_tokens > 0 or alive()):
                continue
        elif not pending:
            break
        out, sampled, rec = pending.pop()
        update_step(sched, reqs, out, sampled, rec)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=sorted(cases()), action="append",
                    help="run only these cases (default: all)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--max-steps", type=int, default=200000)
    ap.add_argument("--async-scheduling", action="store_true",
                    help="AsyncScheduler with EngineCore's two-batch queue "
                         "(vLLM's default where the executor supports it); "
                         "files get an _async suffix")
    ap.add_argument("--prefix-caching", action="store_true",
                    help="vLLM's default automatic prefix caching on (distinct "
                         "prompts: only a preempted request's own blocks hit); "
                         "files get an _apc suffix")
    a = ap.parse_args()
    import vllm
    use_cpu_platform()
    version = vllm.__version__
    command = "python " + " ".join(
        shlex.quote(x) for x in ["scripts/golden/vllm_sched_trace.py"] + sys.argv[1:])
    for name, case in cases().items():
        if a.case and name not in a.case:
            continue
        lines = run_case(name, case, version, command, a.max_steps,
                         a.prefix_caching, a.async_scheduling)
        suffix = ("_apc" if a.prefix_caching else "") + (
            "_async" if a.async_scheduling else "")
        path = os.path.join(a.out_dir, f"{name}{suffix}_{version}.jsonl")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
        print(f"{path}: {len(lines) - 1} steps")


if __name__ == "__main__":
    main()
