// aic_records.mjs: turn NVIDIA AIConfigurator's (AIC) measured Hopper and
// Blackwell kernel database into capplan public measurement files
// (calibrate/measurements/public/aic-<gpu>-<what>.json, format
// capplan.measurements.v1, one kernel implementation per record; see
// calibrate/MEASUREMENTS.md).
//
// The build and the tests never run this script; it documents how the
// committed aic-*.json files were made and regenerates them byte for byte.
//
// How to run (node >= 18; the npm registry is the only thing it needs):
//
//   mkdir -p /tmp/aic-npm && (cd /tmp/aic-npm && npm init -y >/dev/null &&
//       npm install hyparquet hyparquet-compressors)
//   # a clone (or bare mirror) of https://github.com/ai-dynamo/aiconfigurator
//   GIT="git --git-dir=/path/to/aiconfigurator/.git"
//   COMMIT=$($GIT rev-parse HEAD); DATE=$($GIT log -1 --format=%cs $COMMIT)
//   # extract the parquet files named in JOBS below under one folder,
//   # keeping their repository paths:
//   for p in $(node scripts/data/aic_records.mjs --list); do
//     mkdir -p /tmp/aic/$(dirname $p) && $GIT show $COMMIT:$p > /tmp/aic/$p; done
//   node scripts/data/aic_records.mjs /tmp/aic-npm /tmp/aic $COMMIT $DATE \
//       calibrate/measurements/public
//
// Arguments: <npm dir holding node_modules> <folder with the extracted
// files at their repository paths> <AIC commit, 40 hex> <commit date
// YYYY-MM-DD> <output folder>. The output is deterministic: records are
// sorted by a fixed key, numbers are integers or fixed significant digits,
// one record per line.
//
// What a record's fields mean here:
//   median_us  AIC's `latency` column (milliseconds) x 1000, 6 significant
//              digits. AIC times every op with helper.benchmark_with_power:
//              warm-ups, then the op captured in a CUDA graph and the graph
//              replayed N times between two CUDA events (eager only where a
//              file's note says so); the latency is the mean per op.
//   bytes      napkin HBM bytes, flops napkin FLOPs (formulas in each
//              builder below and in each file's source.note).
//
// MoE routing (rows, touched_experts). AIC's "balanced" distribution is
// collector/helper.py balanced_logits(num_tokens, E, topk): with
// stride = ceil(E / topk), token t gets the one-hot experts
//     (t + j*stride) mod E                        if num_tokens >= stride
//     (floor(t*stride/num_tokens) + j*stride) mod E  otherwise
// for j = 0..topk-1 (the torch code divides in float and truncates, which is
// this floor for every shape used here in float32), and the router logits are a softmax
// of those one-hot counts, so an ungrouped top-k (plain, sigmoid with a zero
// correction bias, or grouped with one group) selects exactly these experts.
// With moe_ep_size > 1 AIC measures rank 0, which holds global experts
// [0, E/ep) (linear placement in SGLang, vLLM and TRT-LLM) and receives all
// num_tokens tokens; the framework layers (SGLang FusedMoE, vLLM FusedMoE,
// TRT-LLM create_moe) compute only the (token, expert) pairs whose expert is
// local. So for rank 0:
//     rows            = #{(t, j) : expert(t, j) < E/ep}
//     touched_experts = #{distinct expert(t, j) < E/ep}
// One exception: vLLM's collector (collector/vllm/collect_moe.py) sets
// torch's default dtype to bfloat16 before it calls balanced_logits, so in
// the num_tokens < stride branch the int->float cast, the division, the sum
// and the remainder are each rounded to bfloat16 (8 significant bits) before
// the truncation; for Kimi (E 384, stride 48) at 32 tokens that leaves 235
// distinct experts instead of 256, which vLLM's times confirm (its 32/48-token
// time ratio is 0.62, SGLang's and TRT-LLM's 0.67). The vLLM jobs use that
// rounding (bf16 below); the others float32.
// The script checks that no token draws the same expert twice (the rule
// would then not fix the selection) and stops if one does.
// DeepEP rows (SGLang 0.5.10 wideep collectors, "uniform" distribution)
// follow collector/wideep/sglang/collect_deepep_moe.py instead: with
// n = num_tokens / ep tokens per rank and L = E / ep local experts,
//   masked (decode):   base = floor(n*topk*ep/E); base == 0 -> n*topk experts
//                      get 1 row each; else every local expert gets base rows
//   contiguous (prefill): every local expert gets floor(n*topk*ep/E) rows.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const DATA = 'aic-core/src/aiconfigurator_core/systems/data';
const H100_SENTENCE =
  'Measured on an H100 SXM, not an H200: an H100 record informs H200 efficiency only as a fraction of ' +
  "the H100's own peak (same SM90 generation), never as an absolute H200 time.";
const sameArch = (gpu, arch, others) =>
  `Measured on a ${gpu}: a ${gpu} record informs ${others} efficiency only as a fraction of the ${gpu}'s own peak (same ${arch} generation), never as an absolute time on another GPU.`;
// Per GPU: AIC's folder, the file tag, its architecture (a job with `archs`
// runs only there: the same engine picks other kernels on SM100), the record's gpu, the HBM datasheet
// figure (diagnostics only) and the sentence every note of that GPU ends with.
const GPUS = [
  { dir: 'h200_sxm', tag: 'h200', arch: 'sm90', name: 'H200', hbm: 4.8e12, title: 'H200 SXM', sentence: '' },
  { dir: 'h100_sxm', tag: 'h100', arch: 'sm90', name: 'H100', hbm: 3.35e12, title: 'H100 SXM', sentence: H100_SENTENCE },
  { dir: 'b200_sxm', tag: 'b200', arch: 'sm100', name: 'B200', hbm: 8e12, title: 'B200 SXM (HGX)', sentence: sameArch('B200', 'SM100', 'GB200') },
  { dir: 'gb200', tag: 'gb200', arch: 'sm100', name: 'GB200', hbm: 8e12, title: 'GB200 (NVL72)', sentence: sameArch('GB200', 'SM100', 'B200') },
  { dir: 'b300_sxm', tag: 'b300', arch: 'sm103', name: 'B300', hbm: 7.75e12, title: 'B300 SXM (HGX)', sentence: sameArch('B300', 'SM103', 'GB300') },
  { dir: 'gb300', tag: 'gb300', arch: 'sm103', name: 'GB300', hbm: 8e12, title: 'GB300 (NVL72)', sentence: sameArch('GB300', 'SM103', 'B300') },
];

const HOPPER = ['sm90'];
const BLACKWELL = ['sm100', 'sm103'];

// ---------------------------------------------------------------- helpers

const cdiv = (a, b) => Math.floor((a + b - 1) / b);
const sig = (x) => Number(x.toPrecision(6));

// Round a double to the nearest bfloat16 (ties to even), through float32.
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
function bf16(x) {
  F32[0] = x;
  const u = U32[0];
  U32[0] = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 0) & 0xffff0000;
  return F32[0];
}

function balancedExperts(numTokens, E, topk, arith) {
  const stride = cdiv(E, topk);
  const out = [];
  for (let t = 0; t < numTokens; t++) {
    const row = [];
    for (let j = 0; j < topk; j++) {
      if (numTokens >= stride) {
        row.push((t + j * stride) % E); // integer tensors: exact
      } else if (arith === 'bf16') {
        const a = bf16(bf16(t * stride) / bf16(numTokens));
        const b = bf16(a + bf16(j * stride));
        row.push(Math.trunc(bf16(b - Math.floor(b / E) * E)));
      } else {
        row.push((Math.floor((t * stride) / numTokens) + j * stride) % E);
      }
    }
    if (new Set(row).size !== topk) throw new Error(`balanced routing repeats an expert: t=${t} E=${E} topk=${topk}`);
    out.push(row);
  }
  return out;
}

function rank0Work(numTokens, E, topk, ep, arith) {
  const L = E / ep;
  let rows = 0;
  const touched = new Set();
  for (const row of balancedExperts(numTokens, E, topk, arith)) {
    for (const e of row) {
      if (e < L) {
        rows++;
        touched.add(e);
      }
    }
  }
  return { rows, touched: touched.size };
}

// Bytes of one local expert (gate, up, down) incl. scales.
function expertBytes(wdtype, h, i) {
  if (wdtype === 'int4') return (3 * h * i) / 2 + 3 * (h * i / 32) * 2; // g32, BF16 scales, symmetric
  if (wdtype === 'fp8') return 3 * h * i + 3 * cdiv(h, 128) * cdiv(i, 128) * 4; // 128x128 FP32 block scales
  if (wdtype === 'bf16') return 3 * h * i * 2;
  // E2M1 packed two per byte, one E4M3 scale per 16 along K, and the FP32
  // weight_scale_2 and input_scale of each of the three matrices.
  if (wdtype === 'nvfp4') return (3 * h * i) / 2 + 3 * (h * i / 16) + 3 * 2 * 4;
  throw new Error(wdtype);
}

function moeRecord(impl, wdtype, tokens, h, inter, E, topk, tp, ep, rows, touched, ms, dtype = 'bf16') {
  const i = inter / tp;
  return {
    kernel: 'moe_layer',
    op_class: 'moe',
    implementation: impl,
    dtype,
    weight_dtype: wdtype,
    shape: { tokens, hidden: h, inter: i, experts: E / ep, topk, moe_tp: tp, moe_ep: ep, rows, touched_experts: touched },
    median_us: sig(ms * 1000),
    bytes: touched * expertBytes(wdtype, h, i) + rows * 2 * h * 2,
    flops: 2 * rows * 3 * h * i,
  };
}

// ---------------------------------------------------------------- shapes

const KIMI = { key: 'kimi-k2', label: 'Kimi-K2/K2.5 (hidden 7168, moe_inter 2048, 384 experts, top-8)', h: 7168, inter: 2048, E: 384, topk: 8 };
const DSV3 = { key: 'dsv3', label: 'DeepSeek-V3/R1 (hidden 7168, moe_inter 2048, 256 experts, top-8)', h: 7168, inter: 2048, E: 256, topk: 8 };
const GLM5 = { key: 'glm5', label: 'GLM-5 (hidden 6144, moe_inter 2048, 256 experts, top-8)', h: 6144, inter: 2048, E: 256, topk: 8 };

// TP/EP configurations kept for the stock MoE tables (each present one).
const MOE_PARALLEL = [
  [1, 1], [2, 1], [4, 1], [8, 1], [1, 2], [1, 4], [1, 8], [1, 16], [1, 32], [1, 64],
];
const MAX_TOKENS = 16384;

// ---------------------------------------------------------------- notes

const TIMING = {
  moe_sglang:
    'Timing (collector/sglang/collect_moe.py): the whole SGLang FusedMoE layer (TopK routing, sort/align, GEMM1, activation, GEMM2, combine; no shared expert, no EP communication) is called 5 times inside one CUDA graph (5 identical balanced router-logit tensors), the graph is replayed 10 times after 5 warm-ups, and the latency is the mean per call. Consecutive calls read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 (e.g. 1-2 tokens at TP8) are upper bounds on speed.',
  moe_vllm:
    'Timing (collector/vllm/collect_moe.py): the whole vLLM FusedMoE layer (routing, expert kernels, combine; no shared expert, no EP communication) is captured once in a CUDA graph and replayed 6 times after 3 warm-ups; the latency is the mean per replay. Consecutive replays read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 are upper bounds on speed. vLLM\'s collector builds the balanced logits with torch\'s default dtype set to bfloat16, so below ceil(E/topk) tokens the expert ids are rounded (Kimi at 32 tokens: 235 distinct experts, not 256); rows and touched_experts here follow that rounding.',
  moe_trtllm:
    'Timing (collector/trtllm/collect_moe.py): the whole TRT-LLM MoE module forward (RenormalizeMoeRoutingMethod top-k, CUTLASS grouped GEMMs, finalize; no shared expert, no EP communication) is captured once in a CUDA graph and replayed 6 times after 3 warm-ups; the latency is the mean per replay. Consecutive replays read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 are upper bounds on speed.',
  deepep_masked:
    'Timing (collector/wideep/sglang/collect_deepep_moe.py, decode): DeepEPMoE.run_moe_core on a synthetic masked layout (DeepGEMM masked grouped GEMM x2 plus the masked SiLU-and-quant), FP8 block weights, captured in a CUDA graph and replayed; latency = mean per call. No dispatch/combine communication. L2 is warm across replays.',
  deepep_contig:
    'Timing (collector/wideep/sglang/collect_deepep_moe.py, prefill): DeepEPMoE.run_moe_core on a synthetic contiguous layout (ep_scatter, DeepGEMM contiguous grouped GEMM x2, SiLU+quant, ep_gather), FP8 block weights, timed EAGERLY per call with CUDA events (no graph), so it includes launch and host gaps; the first 3 iterations are dropped and the rest averaged. No dispatch/combine communication.',
  mla_decode:
    'Timing (collector/{trtllm,sglang}/collect_mla.py): one MLA decode attention call (absorbed DeepSeek geometry: K 576 = kv_lora 512 + rope 64, V 512, q_len 1) captured in a CUDA graph and replayed (SGLang: 20 replays), mean per replay; the KV stays in HBM but small KV sets are L2-warm across replays.',
  prefill:
    'Timing (collector/{sglang,vllm,trtllm}/collect_attn.py): one causal context-attention call without prefix (step 0, window 0) captured in a CUDA graph and replayed, mean per replay.',
  mla_prefill:
    'Timing (collector/trtllm/collect_mla.py): one TRT-LLM MLA context attention call in the MHA geometry (q/k head dim 192 = 128 nope + 64 rope, v head dim 128), causal, no prefix, captured in a CUDA graph and replayed, mean per replay.',
  gemm_sglang:
    'Timing (collector/sglang/collect_gemm.py): up to 6 copies of the GEMM (separate weights, as many as fit in 45% of memory) run back to back inside one CUDA graph, replayed 6 times after 3 warm-ups; latency = mean per GEMM. The rotating weight copies keep large weights from being L2-resident; weights under ~8 MB may still be L2-assisted.',
  gemm_vllm:
    'Timing (collector/vllm/collect_gemm.py): BF16 and FP8 per-tensor GEMMs run as 6 copies (separate weights) back to back inside one CUDA graph, replayed 6 times after 3 warm-ups, mean per GEMM; FP8 block GEMMs run ONE copy EAGERLY (no CUDA graph: use_cuda_graph=False), so their small-m times include launch and quantisation-kernel gaps and the single weight is L2-warm across repeats.',
};

const MOE_BYTES_NOTE =
  'shape: tokens = AIC num_tokens (the layer input); inter = inter_size / moe_tp; experts = num_experts / moe_ep (local); rows and touched_experts = the (token, expert) pairs and distinct experts rank 0 computes under AIC balanced routing (the rule is documented in scripts/data/aic_records.mjs). bytes = touched_experts x W_e + rows x 2 x hidden x 2 (BF16 activation in and out), with W_e the bytes of one local expert (gate+up+down, 3 x hidden x inter weights) incl. scales: INT4 g32 with BF16 scales, symmetric = 3hi/2 + 3(hi/32)x2; FP8 with 128x128 FP32 block scales = 3hi + 3 ceil(h/128) ceil(i/128) x 4; BF16 = 6hi. flops = 2 x rows x 3 x hidden x inter.';

// ---------------------------------------------------------------- jobs

const moeStock = (fw, ver) => `moe/${fw}/${ver}/moe_perf.parquet`;

// Each job: one output file per GPU. `rows(table)` returns records.
const JOBS = [];

// `dtype`: the format the experts multiply in, which sets the tensor-core
// rate a record is priced against. FP8 block experts quantize their BF16
// input per 128-wide token group to FP8 and multiply at the FP8 rate in
// every kernel here (Triton fused_moe with use_fp8_w8a8, CUTLASS and
// TRT-LLM-gen block-scaled grouped GEMMs, DeepGEMM's grouped FP8 GEMM), as
// the simulator prices them (hw/formats.json: fp8 activations fp8); NVFP4
// experts quantize to NVFP4 and run at the FP4 rate; W4A16 experts
// dequantize to BF16.
const moeMathDtype = (wdtype) => (wdtype === 'fp8' || wdtype === 'nvfp4' ? wdtype : 'bf16');
function addMoe({ what, impl, src, kernelSource, moeDtype, wdtype, shape, timing, title, extra = '', drop = null, archs, dtype = moeMathDtype(wdtype) }) {
  const arith = timing === 'moe_vllm' ? 'bf16' : 'f32';
  JOBS.push({
    what, src, title, impl, archs,
    note: () => `${TIMING[timing]} Model shape: ${shape.label}, balanced routing only (power_law rows skipped), moe_dtype ${moeDtype}, kernel_source ${kernelSource}; TP/EP configurations kept: ${MOE_PARALLEL.map(([t, e]) => (e > 1 ? `EP${e}` : `TP${t}`)).join(', ')} where present, tokens 1-${MAX_TOKENS}. ${MOE_BYTES_NOTE}${extra ? ' ' + extra : ''}`,
    build: (table) => {
      const out = [];
      for (const r of table) {
        if (r.kernel_source !== kernelSource || r.moe_dtype !== moeDtype || r.distribution !== 'balanced') continue;
        if (r.hidden_size !== shape.h || r.inter_size !== shape.inter || r.num_experts !== shape.E || r.topk !== shape.topk) continue;
        if (!MOE_PARALLEL.some(([t, e]) => t === r.moe_tp_size && e === r.moe_ep_size)) continue;
        if (r.num_tokens > MAX_TOKENS) continue;
        const w = rank0Work(r.num_tokens, shape.E, shape.topk, r.moe_ep_size, arith);
        const rec = moeRecord(impl, wdtype, r.num_tokens, shape.h, shape.inter, shape.E, shape.topk, r.moe_tp_size, r.moe_ep_size, w.rows, w.touched, r.latency, dtype);
        if (drop && drop(rec)) continue;
        out.push(rec);
      }
      return out;
    },
    sortKey: (x) => [x.shape.moe_tp, x.shape.moe_ep, x.shape.tokens],
  });
}

const DS_GROUPED =
  'DeepSeek-V3-shape (256 experts) rows of SGLang and vLLM are NOT in this file: AIC routes them with the model\'s grouped top-k (8 groups, top-4 groups); the balanced logits tie across groups, so which experts each token gets depends on tie-breaking and is not computable from the balanced rule (on the H200 their TP8 rows at 32-128 tokens imply 5.5-5.7 TB/s if every routed expert were read, above the 4.8 TB/s spec, and their EP8 rows are 3.7-4.8x slower than TRT-LLM\'s ungrouped ones at 4096-16384 tokens, as if rank 0 drew far more than its share).';

// SGLang 0.5.14 Marlin W4A16 (CompressedTensorsWNA16MoE), Kimi.
addMoe({ what: 'sglang-marlin-moe-kimi-k2', impl: 'sglang_marlin_moe', src: moeStock('sglang', '0.5.14'), kernelSource: 'sglang_marlin_moe', moeDtype: 'int4_wo', wdtype: 'int4', shape: KIMI, timing: 'moe_sglang',
  title: 'AIConfigurator SGLang 0.5.14 Marlin W4A16 MoE layer (Kimi-K2.5 INT4 g32)',
  extra: 'INT4 rows are Kimi-K2.5 geometry with group_size 32 (collector/cases/base_ops/moe.yaml), resolved on SM90 to Marlin MoE (CompressedTensorsWNA16MoE).' });
addMoe({ what: 'vllm-marlin-moe-kimi-k2', impl: 'vllm_marlin_moe', src: moeStock('vllm', '0.24.0'), kernelSource: 'vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts', moeDtype: 'int4_wo', wdtype: 'int4', shape: KIMI, timing: 'moe_vllm',
  title: 'AIConfigurator vLLM 0.24.0 compressed-tensors WNA16 Marlin MoE layer (Kimi-K2.5 INT4 g32)',
  extra: 'INT4 rows are Kimi-K2.5 geometry with group_size 32; vLLM 0.24 EP is flattened (TP1 x EPn or TPn x EP1 only).' });
for (const shape of [KIMI, GLM5]) {
  addMoe({ what: `sglang-triton-fused-moe-fp8-${shape.key}`, impl: 'sglang_triton_fused_moe', src: moeStock('sglang', '0.5.14'), kernelSource: 'sglang_fused_moe_triton', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_sglang',
    title: `AIConfigurator SGLang 0.5.14 Triton fused MoE layer, FP8 block weights (${shape.key})`,
    extra: `${DS_GROUPED} These ${shape.key} rows route ungrouped (${shape === KIMI ? 'Kimi: one expert group' : 'GLM-5: one expert group'}) through the framework FusedMoE layer, which slices EP properly; none shows caveat 2 of the AIC reading (the collector\'s raw-Triton EP path, which computes every remote top-k slot as expert 0, would cost 8x the rows at EP8), so no row was dropped. The EP rows do slow down against TRT-LLM CUTLASS as EP grows (at >= 2k tokens about 1.0x at EP4, 1.4x at EP8, 2x at EP16, 3x at EP32, 4-5.5x at EP64, on both GPUs), presumably because the Triton kernel\'s sorted block grid is sized by all tokens x top-k rather than by rank 0\'s rows: that is this implementation\'s cost, so those rows are kept.` });
  addMoe({ what: `vllm-flashinfer-cutlass-moe-fp8-${shape.key}`, impl: 'vllm_flashinfer_cutlass_moe', src: moeStock('vllm', '0.24.0'), kernelSource: 'vllm_fp8moe_flashinfer_cutlass_flashinferexperts', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_vllm',
    title: `AIConfigurator vLLM 0.24.0 FlashInfer CUTLASS MoE layer, FP8 block weights (${shape.key})`,
    extra: `vLLM 0.24 picks FlashInfer CUTLASS for FP8 block experts only with EP > 1 (TP1 x EPn); its TP rows are Triton (vllm_triton_fused_moe). ${DS_GROUPED}` });
  addMoe({ what: `vllm-triton-fused-moe-fp8-${shape.key}`, impl: 'vllm_triton_fused_moe', src: moeStock('vllm', '0.24.0'), kernelSource: 'vllm_fp8moe_triton_tritonexperts', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_vllm',
    title: `AIConfigurator vLLM 0.24.0 Triton fused MoE layer, FP8 block weights (${shape.key})`,
    extra: `vLLM 0.24 uses Triton experts for FP8 block weights with TP (EP1) only. ${DS_GROUPED}` });
}
for (const shape of [KIMI, DSV3, GLM5]) {
  addMoe({ what: `trtllm-cutlass-moe-fp8-${shape.key}`, impl: 'trtllm_cutlass_moe', src: moeStock('trtllm', '1.3.0rc20'), kernelSource: 'moe_torch_flow_cutlass', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_trtllm',
    title: `AIConfigurator TRT-LLM 1.3.0rc20 CUTLASS MoE layer, FP8 block weights (${shape.key})`,
    extra: 'TRT-LLM\'s collector routes every model with an ungrouped renormalize top-k, so the balanced rule holds for the DeepSeek shape too.' });
}

// Blackwell FP8 block experts: SGLang and vLLM run FlashInfer's TRT-LLM-gen
// MoE kernels there (kernel sources below, the ones AIC's SM100 tables hold
// for fp8_block besides Triton).
for (const shape of [KIMI, GLM5]) {
  addMoe({ archs: BLACKWELL, what: `sglang-trtllm-gen-moe-fp8-${shape.key}`, impl: 'sglang_trtllm_gen_moe', src: moeStock('sglang', '0.5.14'), kernelSource: 'sglang_flashinfer_trtllm_moe', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_sglang',
    title: `AIConfigurator SGLang 0.5.14 FlashInfer TRT-LLM-gen MoE layer, FP8 block weights (${shape.key})`,
    extra: `SGLang's flashinfer_trtllm MoE runner on SM100 (kernel_source sglang_flashinfer_trtllm_moe). ${DS_GROUPED}` });
  addMoe({ archs: BLACKWELL, what: `vllm-trtllm-gen-moe-fp8-${shape.key}`, impl: 'vllm_trtllm_gen_moe', src: moeStock('vllm', '0.24.0'), kernelSource: 'vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic', moeDtype: 'fp8_block', wdtype: 'fp8', shape, timing: 'moe_vllm',
    title: `AIConfigurator vLLM 0.24.0 FlashInfer TRT-LLM-gen MoE layer, FP8 block weights (${shape.key})`,
    extra: `vLLM's FP8 block MoE on SM100 through FlashInfer's TRT-LLM-gen experts (kernel_source vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic). ${DS_GROUPED}` });
}

// Blackwell 4-bit experts. NVFP4: vLLM's select_nvfp4_moe_backend
// (vllm/model_executor/layers/fused_moe/oracle/nvfp4.py) tries FlashInfer
// TRT-LLM-gen first and its monolithic experts before the modular ones; AIC's
// vLLM 0.24 collector resolves exactly that for the NVFP4 rows. INT4 W4A16
// group 32 (Kimi): FlashInfer's TRT-LLM-gen MxInt4 MoE, which SGLang runs by
// default on SM100; vLLM calls the same FlashInfer kernel only with
// VLLM_USE_FLASHINFER_MOE_INT4=1, which AIC's collector does not set (its
// vLLM INT4 rows are Marlin), so only SGLang rows time it.
const NVFP4_BYTES_NOTE =
  'NVFP4 experts: W_e = 3 x (hidden x inter / 2 + hidden x inter / 16 + 2 x 4) bytes (E2M1 two per byte, one E4M3 scale per 16 along K, FP32 weight_scale_2 and input_scale per matrix, the ModelOpt / compressed-tensors NVFP4 layout); dtype nvfp4: the layer quantizes its BF16 input to NVFP4 and multiplies at the FP4 tensor-core rate, so each record is priced against that rate.';
for (const shape of [KIMI, GLM5]) {
  addMoe({ archs: BLACKWELL, what: `vllm-trtllm-gen-moe-nvfp4-${shape.key}`, impl: 'vllm_trtllm_gen_moe_nvfp4', src: moeStock('vllm', '0.24.0'), kernelSource: 'vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic', moeDtype: 'nvfp4', wdtype: 'nvfp4', dtype: 'nvfp4', shape, timing: 'moe_vllm',
    title: `AIConfigurator vLLM 0.24.0 FlashInfer TRT-LLM-gen MoE layer, NVFP4 weights and activations (${shape.key})`,
    extra: `vLLM's NVFP4 MoE on SM100 through FlashInfer's TRT-LLM-gen NVFP4 experts (kernel_source vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic; ModelOpt NVFP4 checkpoints reach the same backend through the same oracle). ${NVFP4_BYTES_NOTE} ${DS_GROUPED}` });
}
addMoe({ archs: BLACKWELL, what: 'sglang-trtllm-gen-moe-int4-kimi-k2', impl: 'sglang_trtllm_gen_moe_int4', src: moeStock('sglang', '0.5.14'), kernelSource: 'sglang_flashinfer_trtllm_moe', moeDtype: 'int4_wo', wdtype: 'int4', shape: KIMI, timing: 'moe_sglang',
  title: 'AIConfigurator SGLang 0.5.14 FlashInfer TRT-LLM-gen MxInt4 MoE layer (Kimi-K2.5 INT4 g32)',
  extra: 'INT4 rows are Kimi-K2.5 geometry with group_size 32, resolved on SM100 to SGLang\'s flashinfer_trtllm MoE runner (kernel_source sglang_flashinfer_trtllm_moe: FlashInfer trtllm_mxint4_block_scale_moe, the default for W4A16 group-32 experts on Blackwell since sgl-project/sglang PR 18136).' });

// SGLang 0.5.10 DeepEP (DeepSeek-V3 shape, "uniform").
function addDeepEP({ what, impl, table, masked }) {
  JOBS.push({
    what, impl, src: `moe/sglang/0.5.10/${table}.parquet`,
    title: `AIConfigurator SGLang 0.5.10 DeepEP MoE ${masked ? 'masked (decode)' : 'contiguous (prefill)'} expert compute, DeepSeek-V3 FP8 block`,
    note: () => `${TIMING[masked ? 'deepep_masked' : 'deepep_contig']} Model shape: ${DSV3.label}, FP8 128x128 block weights, kernel_source deepepmoe, "uniform" distribution only (power_law rows skipped), every EP size present. tokens = AIC num_tokens (global: tokens per rank x EP); rows and touched_experts follow the collector's synthetic uniform layout (${masked ? 'masked: base = floor(n x 8 x EP / 256) rows per local expert for n = tokens / EP; base 0 gives n x 8 experts one row each' : 'contiguous: every local expert gets floor(n x 8 x EP / 256) rows for n = tokens / EP'}). ${masked ? '' : 'Rows kept: >= 2048 tokens per rank only, at every EP size. Rows with fewer tokens sit on a ~0.38-0.39 ms eager-timing floor at every EP size and are not kernel times: at EP <= 4 the floor is below the weight-read time, and on the H100 even the EP8 rows at 128-1024 tokens per rank imply 99-109% of the HBM spec if the 32 local experts are read, so EP8 rows below 2048 tokens per rank are dropped too. '}bytes = touched_experts x W_e + rows x 2 x hidden x 2 (counted as BF16 activations like the other MoE files, although this path moves FP8 activations), W_e = 3 x 7168 x 2048 + 3 x 56 x 16 x 4 bytes; flops = 2 x rows x 3 x 7168 x 2048.`,
    build: (t) => {
      const out = [];
      for (const r of t) {
        if (r.distribution !== 'uniform' || r.moe_dtype !== 'fp8_block' || r.moe_tp_size !== 1) continue;
        if (r.hidden_size !== DSV3.h || r.inter_size !== DSV3.inter || r.num_experts !== DSV3.E || r.topk !== DSV3.topk) continue;
        const ep = r.moe_ep_size, L = DSV3.E / ep;
        if (r.num_tokens % ep !== 0) throw new Error('deepep tokens not a multiple of ep');
        const n = r.num_tokens / ep;
        const base = Math.floor((n * DSV3.topk * ep) / DSV3.E);
        let rows, touched;
        if (masked) {
          if (base === 0) { touched = Math.min(L, n * DSV3.topk); rows = touched; } else { touched = L; rows = L * base; }
        } else {
          if (n < 2048) continue;
          touched = L; rows = L * base;
        }
        out.push(moeRecord(impl, 'fp8', r.num_tokens, DSV3.h, DSV3.inter, DSV3.E, DSV3.topk, 1, ep, rows, touched, r.latency, moeMathDtype('fp8')));
      }
      return out;
    },
    sortKey: (x) => [x.shape.moe_ep, x.shape.tokens],
  });
}
addDeepEP({ what: 'sglang-deepep-masked-moe-dsv3', impl: 'sglang_deepep_masked_moe', table: 'wideep_generation_moe_perf', masked: true });
addDeepEP({ what: 'sglang-deepep-contiguous-moe-dsv3', impl: 'sglang_deepep_contiguous_moe', table: 'wideep_context_moe_perf', masked: false });

// MLA decode.
const MLA_DECODE_HEADS = [128, 64, 16, 8];
const MLA_DECODE_KV = [256, 1024, 4096, 16384, 32768, 65536, 131072];
function addMlaDecode({ what, impl, src, kv, title, extra, archs, kernelSource }) {
  JOBS.push({
    what, impl, src, title, archs,
    note: () => `${TIMING.mla_decode} Rows kept: kv_cache_dtype ${kv === 'bf16' ? 'bfloat16' : 'fp8'}, local query heads ${MLA_DECODE_HEADS.join('/')} (128 = DeepSeek TP1, 16 = DeepSeek TP8, 64 = Kimi-K2 TP1, 8 = Kimi-K2 TP8), KV length ${MLA_DECODE_KV.join('/')}, every batch present. shape: batch, kv_len = step + 1, q_heads. ctx = batch x kv_len; flops = 2 q_heads (512+64) ctx + 2 q_heads 512 ctx; bytes = ctx x 576 x ${kv === 'bf16' ? 2 : 1} (KV) + batch q_heads 576 x 2 (Q) + batch q_heads 512 x 2 (output).${extra ? ' ' + extra : ''}`,
    build: (t) => {
      const out = [];
      for (const r of t) {
        if (r.kv_cache_dtype !== (kv === 'bf16' ? 'bfloat16' : 'fp8') || r.isl !== 1) continue;
        if (kernelSource && r.kernel_source !== kernelSource) continue;
        const kvLen = r.step + 1;
        if (!MLA_DECODE_HEADS.includes(r.num_heads) || !MLA_DECODE_KV.includes(kvLen)) continue;
        const b = r.batch_size, q = r.num_heads, ctx = b * kvLen;
        out.push({
          kernel: 'mla_decode', op_class: 'attention', implementation: impl, dtype: 'bf16', kv_dtype: kv,
          shape: { batch: b, kv_len: kvLen, q_heads: q },
          median_us: sig(r.latency * 1000),
          bytes: ctx * 576 * (kv === 'bf16' ? 2 : 1) + b * q * 576 * 2 + b * q * 512 * 2,
          flops: 2 * q * (512 + 64) * ctx + 2 * q * 512 * ctx,
        });
      }
      return out;
    },
    sortKey: (x) => [x.shape.q_heads, x.shape.batch, x.shape.kv_len],
  });
}
addMlaDecode({ archs: HOPPER, what: 'trtllm-mla-decode-bf16kv', impl: 'trtllm_mla_decode_bf16kv', src: 'mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv: 'bf16', title: 'AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, BF16 KV cache', extra: 'TRT-LLM Hopper MLA generation kernels (kernel_source default, page 64).' });
addMlaDecode({ archs: HOPPER, what: 'trtllm-mla-decode-fp8kv', impl: 'trtllm_mla_decode_fp8kv', src: 'mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv: 'fp8', title: 'AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, FP8 KV cache', extra: 'TRT-LLM Hopper MLA generation kernels (kernel_source default, page 64); with 128 heads the FP8-KV rows run faster than BF16 dense math allows at BF16, so the kernel likely computes in FP8.' });
addMlaDecode({ archs: HOPPER, what: 'sglang-fa3-mla-decode-bf16kv', impl: 'sglang_fa3_mla_decode_bf16kv', src: 'mla/sglang/0.5.14/generation_mla_perf.parquet', kv: 'bf16', title: 'AIConfigurator SGLang 0.5.14 FA3 MLA decode attention, BF16 KV cache', extra: 'SGLang FlashAttention-3 MLA backend (kernel_source flash_attention, page size 1).' });
addMlaDecode({ archs: HOPPER, what: 'sglang-fa3-mla-decode-fp8kv', impl: 'sglang_fa3_mla_decode_fp8kv', src: 'mla/sglang/0.5.14/generation_mla_perf.parquet', kv: 'fp8', title: 'AIConfigurator SGLang 0.5.14 FA3 MLA decode attention, FP8 KV cache (full-pool dequant path)', extra: 'PATHOLOGICAL PATH: SGLang 0.5.14 fa3 with an FP8 KV cache dequantises the whole per-layer KV pool every call (sgl-project/sglang issue 35291), so these rows run at ~0.3 TB/s whatever the shape and their time scales with the pool, not with batch x kv_len. They describe only this implementation and must not calibrate any other (in particular not FP8-KV MLA decode in general).' });
for (const kv of ['bf16', 'fp8']) {
  const kvName = kv === 'bf16' ? 'BF16' : 'FP8';
  addMlaDecode({ archs: BLACKWELL, what: `trtllm-mla-decode-${kv}kv`, impl: `trtllm_mla_decode_${kv}kv`, src: 'mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv, title: `AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, ${kvName} KV cache`, extra: 'TRT-LLM Blackwell MLA generation kernels (TRT-LLM-gen, kernel_source default).' });
  addMlaDecode({ archs: BLACKWELL, what: `sglang-trtllm-mla-decode-${kv}kv`, impl: `sglang_trtllm_mla_decode_${kv}kv`, src: 'mla/sglang/0.5.14/generation_mla_perf.parquet', kv, kernelSource: 'trtllm_mla', title: `AIConfigurator SGLang 0.5.14 TRT-LLM-gen MLA decode attention (FlashInfer trtllm_mla backend), ${kvName} KV cache`, extra: 'On SM100 SGLang 0.5.14 runs MLA decode on its trtllm_mla backend (FlashInfer\'s TRT-LLM-gen kernels; kernel_source trtllm_mla, the only source in this table on Blackwell), not on FA3, which is SM90-only.' });
}

// GQA prefill attention.
const GQA_HEADS = [[64, 8], [32, 8], [16, 2], [8, 1]];
const GQA_ISL = [256, 512, 1024, 2048, 4096, 8192, 16384];
function addPrefill({ what, impl, src, kernelSource, attn, kv, title, extra }) {
  JOBS.push({
    what, impl, src, title,
    note: () => `${TIMING.prefill} Rows kept: kernel_source ${kernelSource}, attn_dtype ${attn}, kv_cache_dtype ${kv}, head_dim 128, (q_heads, kv_heads) in ${GQA_HEADS.map(([a, b]) => `${a}/${b}`).join(', ')} (Llama-3-70B TP1/TP4/TP8 and Llama-3-8B TP1), isl ${GQA_ISL.join('/')}, every batch present; window_size 0 only (sliding-window rows skipped); the table has no prefix column (step 0: no cached prefix). shape: batch, chunk = isl, q_heads, kv_heads, head_dim. pairs = batch x isl x (isl+1) / 2 (causal); flops = 4 q_heads head_dim pairs; bytes = batch isl (2 kv_heads head_dim + 2 q_heads head_dim) x 2, i.e. Q, K, V and output counted as BF16 for every variant (prefill attention is compute-bound; bytes matter only at short isl).${extra ? ' ' + extra : ''}`,
    build: (t) => {
      const out = [];
      for (const r of t) {
        if (r.kernel_source !== kernelSource || r.attn_dtype !== attn || r.kv_cache_dtype !== kv) continue;
        if (r.window_size !== 0 || r.step !== 0 || r.head_dim !== 128 || (r.beam_width ?? 1) !== 1) continue;
        if (!GQA_HEADS.some(([a, b]) => a === r.num_heads && b === r.num_key_value_heads) || !GQA_ISL.includes(r.isl)) continue;
        const b = r.batch_size, s = r.isl, q = r.num_heads, k = r.num_key_value_heads, d = r.head_dim;
        const pairs = (b * s * (s + 1)) / 2;
        out.push({
          kernel: 'attention_prefill', op_class: 'attention', implementation: impl,
          dtype: attn === 'fp8' ? 'fp8' : 'bf16', kv_dtype: kv === 'fp8' ? 'fp8' : 'bf16',
          shape: { batch: b, chunk: s, q_heads: q, kv_heads: k, head_dim: d },
          median_us: sig(r.latency * 1000),
          bytes: b * s * (2 * k * d + 2 * q * d) * 2,
          flops: 4 * q * d * pairs,
        });
      }
      return out;
    },
    sortKey: (x) => [-x.shape.q_heads, -x.shape.kv_heads, x.shape.batch, x.shape.chunk],
  });
}
addPrefill({ what: 'sglang-fa3-prefill', impl: 'sglang_fa3_prefill', src: 'attention/sglang/0.5.14/context_attention_perf.parquet', kernelSource: 'fa3', attn: 'bfloat16', kv: 'bfloat16', title: 'AIConfigurator SGLang 0.5.14 FA3 causal prefill attention, BF16' });
addPrefill({ what: 'sglang-fa3-prefill-fp8', impl: 'sglang_fa3_prefill_fp8', src: 'attention/sglang/0.5.14/context_attention_perf.parquet', kernelSource: 'fa3', attn: 'fp8', kv: 'fp8', title: 'AIConfigurator SGLang 0.5.14 FA3 causal prefill attention, FP8 (FP8 attention, FP8 KV)' });
addPrefill({ what: 'vllm-fa3-prefill', impl: 'vllm_fa3_prefill', src: 'attention/vllm/0.24.0/context_attention_perf.parquet', kernelSource: 'vllm_flash_attn_fa3', attn: 'bfloat16', kv: 'bfloat16', title: 'AIConfigurator vLLM 0.24.0 FA3 causal prefill attention, BF16' });
addPrefill({ what: 'vllm-fa3-prefill-fp8kv', impl: 'vllm_fa3_prefill_fp8kv', src: 'attention/vllm/0.24.0/context_attention_perf.parquet', kernelSource: 'vllm_flash_attn_fa3', attn: 'bfloat16', kv: 'fp8', title: 'AIConfigurator vLLM 0.24.0 FA3 causal prefill attention, BF16 attention with an FP8 KV cache', extra: 'vLLM\'s "fp8" here is BF16 attention writing an FP8 KV cache, not FP8 attention.' });
addPrefill({ what: 'trtllm-context-attention', impl: 'trtllm_context_attention', src: 'attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernelSource: 'torch_flow', attn: 'bfloat16', kv: 'bfloat16', title: 'AIConfigurator TRT-LLM 1.3.0rc20 context attention, BF16' });
addPrefill({ what: 'trtllm-context-attention-fp8', impl: 'trtllm_context_attention_fp8', src: 'attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernelSource: 'torch_flow', attn: 'fp8', kv: 'fp8', title: 'AIConfigurator TRT-LLM 1.3.0rc20 context attention, FP8 (FP8 attention, FP8 KV)' });
addPrefill({ what: 'trtllm-context-attention-fp8kv', impl: 'trtllm_context_attention_fp8kv', src: 'attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernelSource: 'torch_flow', attn: 'bfloat16', kv: 'fp8', title: 'AIConfigurator TRT-LLM 1.3.0rc20 context attention, BF16 attn_dtype with an FP8 KV cache', extra: 'The table labels these rows attn_dtype bfloat16 with kv_cache_dtype fp8; they are kept apart from both the BF16 and the FP8/FP8 rows because their times differ from both: at long isl they are the fastest of the three (H200, 64/8 heads, 1 x 16384: 5.55 ms against 6.10 ms FP8/FP8 and 8.41 ms BF16), so TRT-LLM likely runs an FP8 context kernel whenever the KV cache is FP8.' });

// MLA prefill, TRT-LLM only (SGLang's rows use the absorbed geometry).
const MLA_PREFILL_HEADS = [128, 64, 16, 8];
const MLA_PREFILL_MIN_ISL = 256;
function addMlaPrefill({ what, impl, kv, title }) {
  JOBS.push({
    what, impl, src: 'mla/trtllm/1.3.0rc20/context_mla_perf.parquet', title,
    note: () => `${TIMING.mla_prefill} Rows kept: mla_dtype bfloat16, kv_cache_dtype ${kv === 'bf16' ? 'bfloat16' : 'fp8'}, local heads ${MLA_PREFILL_HEADS.join('/')}, isl >= ${MLA_PREFILL_MIN_ISL}, every batch present. SGLang 0.5.14's context_mla rows are not used anywhere: its collector times the absorbed MQA geometry (576/512) instead of the MHA prefill geometry. shape: batch, chunk = isl, q_heads. pairs = batch x isl x (isl+1) / 2; flops = 2 q_heads (192+128) pairs; bytes = 2 x batch isl q_heads (192+128) x 2.${kv === 'fp8' ? ' With an FP8 KV cache the rows at long isl run faster than the BF16 ones (up to ~700 TFLOPS), so TRT-LLM likely runs an FP8 context kernel; dtype stays "bf16" as the table labels it.' : ''}`,
    build: (t) => {
      const out = [];
      for (const r of t) {
        if (r.mla_dtype !== 'bfloat16' || r.kv_cache_dtype !== (kv === 'bf16' ? 'bfloat16' : 'fp8') || r.step !== 0) continue;
        if (!MLA_PREFILL_HEADS.includes(r.num_heads) || r.isl < MLA_PREFILL_MIN_ISL) continue;
        const b = r.batch_size, s = r.isl, q = r.num_heads;
        const pairs = (b * s * (s + 1)) / 2;
        out.push({
          kernel: 'mla_prefill', op_class: 'attention', implementation: impl, dtype: 'bf16', kv_dtype: kv,
          shape: { batch: b, chunk: s, q_heads: q },
          median_us: sig(r.latency * 1000),
          bytes: 2 * b * s * q * (192 + 128) * 2,
          flops: 2 * q * (192 + 128) * pairs,
        });
      }
      return out;
    },
    sortKey: (x) => [-x.shape.q_heads, x.shape.batch, x.shape.chunk],
  });
}
addMlaPrefill({ what: 'trtllm-mla-prefill', impl: 'trtllm_mla_prefill', kv: 'bf16', title: 'AIConfigurator TRT-LLM 1.3.0rc20 MLA context (prefill) attention, BF16' });

// MLA prefill in the absorbed form, SGLang 0.5.14 FA3: its collector times
// the absorbed MQA geometry (K 576 = kv_lora 512 + rope 64, V 512) for
// context MLA, which is what an engine runs when it absorbs the prefill of a
// batch with a cached prefix; priced as capplan's mla_prefill_absorbed op.
function addMlaPrefillAbsorbed({ what, impl, title }) {
  JOBS.push({
    what, impl, src: 'mla/sglang/0.5.14/context_mla_perf.parquet', title,
    note: () => `${TIMING.mla_prefill} Rows kept: kernel_source flash_attention, mla_dtype bfloat16, kv_cache_dtype bfloat16, local heads ${MLA_PREFILL_HEADS.join('/')}, isl >= ${MLA_PREFILL_MIN_ISL}, step 0. SGLang's collector (collector/sglang/collect_mla.py) sets head_dim_total = kv_lora_rank + rope for every backend but trtllm_mla, so these rows time the absorbed geometry (576/512), not the MHA prefill geometry: they calibrate only the absorbed form. shape: batch, chunk = isl, q_heads. pairs = batch x isl x (isl+1) / 2; flops = 2 q_heads (576+512) pairs; bytes = batch isl 576 x 2 (the latents) + batch isl q_heads (576+512) x 2 (Q read, O written).`,
    build: (t) => {
      const out = [];
      for (const r of t) {
        if (r.kernel_source !== 'flash_attention' || r.mla_dtype !== 'bfloat16' || r.kv_cache_dtype !== 'bfloat16' || r.step !== 0) continue;
        if (!MLA_PREFILL_HEADS.includes(r.num_heads) || r.isl < MLA_PREFILL_MIN_ISL) continue;
        const b = r.batch_size, s = r.isl, q = r.num_heads;
        const pairs = (b * s * (s + 1)) / 2;
        out.push({
          kernel: 'mla_prefill_absorbed', op_class: 'attention', implementation: impl, dtype: 'bf16', kv_dtype: 'bf16',
          shape: { batch: b, chunk: s, q_heads: q },
          median_us: sig(r.latency * 1000),
          bytes: b * s * 576 * 2 + b * s * q * (576 + 512) * 2,
          flops: 2 * q * (576 + 512) * pairs,
        });
      }
      return out;
    },
    sortKey: (x) => [-x.shape.q_heads, x.shape.batch, x.shape.chunk],
  });
}
addMlaPrefillAbsorbed({ what: 'sglang-fa3-mla-prefill-absorbed', impl: 'sglang_fa3_mla_prefill_absorbed', title: 'AIConfigurator SGLang 0.5.14 FA3 MLA context attention in the absorbed geometry (576/512), BF16' });
addMlaPrefill({ what: 'trtllm-mla-prefill-fp8', impl: 'trtllm_mla_prefill_fp8', kv: 'fp8', title: 'AIConfigurator TRT-LLM 1.3.0rc20 MLA context (prefill) attention, FP8 KV cache' });

// Dense GEMM. (n, k) pairs of the mission models: n = output features.
const GEMM_NK = [
  [1536, 7168], [4096, 7168], [7168, 2048], [7168, 16384], [7168, 8192], [7168, 1024], [3072, 1536], [12288, 1536], // DeepSeek-V3 / Kimi-K2
  [10240, 8192], [8192, 8192], [8192, 1024], [8192, 3584], // Llama-3-70B (7168x8192 above is also its TP8 gate_up)
  [6144, 4096], [4096, 4096], [4096, 3584], // Llama-3-8B
  [7168, 5120], [5120, 5120], [16384, 5120], [5120, 8192], // Llama-4 / 5120-wide models
];
const GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const GEMM_IMPLS = {
  sglang: {
    src: 'gemm/sglang/0.5.14/gemm_perf.parquet', timing: 'gemm_sglang', engine: 'SGLang 0.5.14',
    sources: {
      sglang_torch_linear: { impl: 'sglang_torch_bf16_gemm', what: 'sglang-torch-bf16-gemm', desc: 'torch BF16 linear (cuBLAS)' },
      sglang_sgl_kernel_fp8_scaled_mm: { impl: 'sglang_fp8_per_tensor_gemm', what: 'sglang-fp8-per-tensor-gemm', desc: 'sgl_kernel fp8_scaled_mm, FP8 per-tensor weight scale' },
      sglang_deepgemm_gemm_nt_f8f8bf16: { impl: 'sglang_deepgemm_fp8_block_gemm', what: 'sglang-deepgemm-fp8-block-gemm', desc: 'DeepGEMM gemm_nt_f8f8bf16, 1x128 activation and 128x128 weight block scales' },
    },
  },
  vllm: {
    src: 'gemm/vllm/0.24.0/gemm_perf.parquet', timing: 'gemm_vllm', engine: 'vLLM 0.24.0',
    sources: {
      'torch.nn.functional.linear': { impl: 'vllm_torch_bf16_gemm', what: 'vllm-torch-bf16-gemm', desc: 'torch.nn.functional.linear BF16 (cuBLAS)' },
      CutlassFP8ScaledMMLinearKernel: { impl: 'vllm_cutlass_fp8_per_tensor_gemm', what: 'vllm-cutlass-fp8-per-tensor-gemm', desc: 'CUTLASS FP8 scaled_mm, FP8 per-tensor weight scale' },
      DeepGemmFp8BlockScaledMMKernel: { impl: 'vllm_deepgemm_fp8_block_gemm', what: 'vllm-deepgemm-fp8-block-gemm', desc: 'DeepGEMM FP8 block-scaled GEMM (vLLM picks it for m >= 32)' },
      FlashInferFp8BlockScaledMMKernel: { impl: 'vllm_flashinfer_fp8_block_gemm', what: 'vllm-flashinfer-fp8-block-gemm', desc: 'FlashInfer swap-AB FP8 block-scaled GEMM (vLLM picks it for m < 32)' },
      FlashInferCuteDslNvFp4LinearKernel: { impl: 'vllm_flashinfer_nvfp4_gemm', what: 'vllm-flashinfer-nvfp4-gemm', desc: 'FlashInfer CuTe-DSL NVFP4 GEMM (BF16 input quantized to NVFP4 inside the linear)',
        extra: ' NVFP4 rows: weights n k / 2 + n k / 16 (E4M3 scale per 16 along K) + 2 x 4 (FP32 weight_scale_2 and input_scale) bytes, the BF16 input m k x 2 bytes (the linear quantizes it itself) and the BF16 output; dtype nvfp4, priced against the FP4 tensor-core rate.' },
    },
  },
};
for (const [, g] of Object.entries(GEMM_IMPLS)) {
  for (const [ks, s] of Object.entries(g.sources)) {
    JOBS.push({
      what: s.what, impl: s.impl, src: g.src,
      title: `AIConfigurator ${g.engine} dense GEMM: ${s.desc}`,
      note: () => `${TIMING[g.timing]} Rows kept: kernel_source ${ks} (${s.desc}); (n, k) pairs of the mission models' projections: ${GEMM_NK.map(([n, k]) => `${n}x${k}`).join(', ')} (DeepSeek-V3/Kimi-K2 7168-wide, Llama-3-70B 8192-wide, Llama-3-8B 4096-wide, 5120-wide models, at TP1/TP4/TP8 slices); m in ${GEMM_M.join('/')} where present. shape: m, n, k (y[m,n] = x[m,k] W[n,k]^T). flops = 2mnk; bytes = weights (n k x bytes per weight + scales: FP8 per-tensor 4 bytes, FP8 block ceil(n/128) ceil(k/128) x 4) + m k x activation bytes (1 for FP8, 2 for BF16) + m n x 2 (BF16 output).${s.extra || ''}`,
      build: (t) => {
        const out = [];
        for (const r of t) {
          if (r.kernel_source !== ks) continue;
          if (!GEMM_NK.some(([n, k]) => n === r.n && k === r.k) || !GEMM_M.includes(r.m)) continue;
          const { m, n, k } = r;
          const dt = r.gemm_dtype;
          let wbytes, abytes, dtype, variant;
          if (dt === 'bfloat16') { wbytes = n * k * 2; abytes = 2; dtype = 'bf16'; variant = undefined; }
          else if (dt === 'fp8') { wbytes = n * k + 4; abytes = 1; dtype = 'fp8'; variant = 'per_tensor'; }
          else if (dt === 'fp8_block') { wbytes = n * k + cdiv(n, 128) * cdiv(k, 128) * 4; abytes = 1; dtype = 'fp8'; variant = 'block_128x128'; }
          else if (dt === 'nvfp4') { wbytes = n * k / 2 + n * k / 16 + 2 * 4; abytes = 2; dtype = 'nvfp4'; variant = undefined; }
          else throw new Error(`gemm dtype ${dt}`);
          const rec = { kernel: 'dense_gemm', op_class: 'dense_gemm' };
          if (variant) rec.variant = variant;
          Object.assign(rec, {
            implementation: s.impl, dtype, weight_dtype: dtype,
            shape: { m, n, k },
            median_us: sig(r.latency * 1000),
            bytes: wbytes + m * k * abytes + m * n * 2,
            flops: 2 * m * n * k,
          });
          out.push(rec);
        }
        return out;
      },
      sortKey: (x) => [x.shape.n, x.shape.k, x.shape.m],
    });
  }
}

// ---------------------------------------------------------------- output

function cmpKeys(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

function writeFile(file, head, records) {
  const lines = ['{'];
  lines.push(`  "format": ${JSON.stringify(head.format)},`);
  lines.push(`  "gpu": ${JSON.stringify(head.gpu)},`);
  lines.push('  "source": {');
  const src = Object.entries(head.source);
  src.forEach(([k, v], i) => lines.push(`    ${JSON.stringify(k)}: ${JSON.stringify(v)}${i + 1 < src.length ? ',' : ''}`));
  lines.push('  },');
  lines.push('  "records": [');
  records.forEach((r, i) => lines.push(`    ${JSON.stringify(r)}${i + 1 < records.length ? ',' : ''}`));
  lines.push('  ]');
  lines.push('}');
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--list') {
    const paths = new Set();
    for (const g of GPUS) for (const j of JOBS) if (!j.archs || j.archs.includes(g.arch)) paths.add(`${DATA}/${g.dir}/${j.src}`);
    console.log([...paths].sort().join('\n'));
    return;
  }
  if (argv.length !== 5) {
    console.error('usage: node aic_records.mjs <npm dir> <extracted AIC files root> <commit> <YYYY-MM-DD> <out dir> | --list');
    process.exit(2);
  }
  const [npmDir, root, commit, date, outDir] = argv;
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error('commit must be 40 hex digits');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error('date must be YYYY-MM-DD');
  const req = createRequire(path.join(path.resolve(npmDir), 'package.json'));
  const { parquetReadObjects } = await import(pathToFileURL(req.resolve('hyparquet')).href);
  const { compressors } = await import(pathToFileURL(req.resolve('hyparquet-compressors')).href);

  const cache = new Map();
  async function table(rel) {
    if (cache.has(rel)) return cache.get(rel);
    const buf = fs.readFileSync(path.join(root, rel));
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    const rows = await parquetReadObjects({ file: ab, compressors });
    for (const r of rows) for (const k of Object.keys(r)) if (typeof r[k] === 'bigint') r[k] = Number(r[k]);
    cache.set(rel, rows);
    return rows;
  }

  const summary = [];
  for (const g of GPUS) {
    for (const job of JOBS) {
      if (job.archs && !job.archs.includes(g.arch)) continue;
      const rel = `${DATA}/${g.dir}/${job.src}`;
      if (!fs.existsSync(path.join(root, rel))) continue;
      const t = await table(rel);
      const built = job.build(t);
      if (built.length === 0) continue;
      // Some tables hold a shape twice (two collection runs appended): keep
      // one record whose time is the median of the copies (mean of two).
      const byShape = new Map();
      for (const r of built) {
        const key = JSON.stringify(r.shape);
        if (!byShape.has(key)) byShape.set(key, []);
        byShape.get(key).push(r);
      }
      let merged = 0;
      const recs = [];
      for (const group of byShape.values()) {
        const times = group.map((r) => r.median_us).sort((a, b) => a - b);
        const mid = times.length >> 1;
        const med = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
        merged += group.length - 1;
        recs.push({ ...group[0], median_us: sig(med) });
      }
      recs.sort((a, b) => cmpKeys(job.sortKey(a), job.sortKey(b)));
      let note = job.note() + ` Copied by scripts/data/aic_records.mjs from the parquet file at AIC commit ${commit} (${date}); median_us = latency (ms) x 1000, 6 significant digits.`;
      if (merged > 0) note += ` The table holds ${merged} kept shape(s) more than once (appended collection runs); each such shape is one record with the median of its copies.`;
      if (g.sentence) note += ' ' + g.sentence;
      const head = {
        format: 'capplan.measurements.v1',
        gpu: g.name,
        source: {
          url: `https://github.com/ai-dynamo/aiconfigurator/blob/${commit}/${rel}`,
          date,
          title: `${job.title}, ${g.title}`,
          note,
        },
      };
      const file = path.join(outDir, `aic-${g.tag}-${job.what}.json`);
      writeFile(file, head, recs);
      // Diagnostics: the highest implied rates, to spot rows faster than the hardware.
      let maxBw = 0, maxFl = 0;
      for (const r of recs) {
        maxBw = Math.max(maxBw, r.bytes / (r.median_us * 1e-6));
        maxFl = Math.max(maxFl, r.flops / (r.median_us * 1e-6));
      }
      summary.push(`${path.basename(file)}\t${recs.length}\tmax ${(maxBw / 1e12).toFixed(2)} TB/s (${((100 * maxBw) / g.hbm).toFixed(0)}% HBM)\tmax ${(maxFl / 1e12).toFixed(0)} TFLOPS`);
    }
  }
  console.log(summary.join('\n'));
}

await main();
