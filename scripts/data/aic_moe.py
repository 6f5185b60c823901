"""aic_records.py's MoE jobs: the stock MoE tables (balanced routing) and
SGLang's DeepEP tables, with the rule that gives rank 0's rows and touched
experts (documented in aic_records.py's header)."""

import functools
import math

from aic_format import BLACKWELL, SCRIPT, bf16, cdiv, sig

KIMI = dict(key='kimi-k2', label='Kimi-K2/K2.5 (hidden 7168, moe_inter 2048, 384 experts, top-8)', h=7168, inter=2048, E=384, topk=8)
DSV3 = dict(key='dsv3', label='DeepSeek-V3/R1 (hidden 7168, moe_inter 2048, 256 experts, top-8)', h=7168, inter=2048, E=256, topk=8)
GLM5 = dict(key='glm5', label='GLM-5 (hidden 6144, moe_inter 2048, 256 experts, top-8)', h=6144, inter=2048, E=256, topk=8)

# TP/EP configurations kept for the stock MoE tables (each present one).
MOE_PARALLEL = [(1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (1, 64)]
MAX_TOKENS = 16384

TIMING = {
    'moe_sglang':
        'Timing (collector/sglang/collect_moe.py): the whole SGLang FusedMoE layer (TopK routing, sort/align, GEMM1, activation, GEMM2, combine; no shared expert, no EP communication) is called 5 times inside one CUDA graph (5 identical balanced router-logit tensors), the graph is replayed 10 times after 5 warm-ups, and the latency is the mean per call. Consecutive calls read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 (e.g. 1-2 tokens at TP8) are upper bounds on speed.',
    'moe_vllm':
        "Timing (collector/vllm/collect_moe.py): the whole vLLM FusedMoE layer (routing, expert kernels, combine; no shared expert, no EP communication) is captured once in a CUDA graph and replayed 6 times after 3 warm-ups; the latency is the mean per replay. Consecutive replays read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 are upper bounds on speed. vLLM's collector builds the balanced logits with torch's default dtype set to bfloat16, so below ceil(E/topk) tokens the expert ids are rounded (Kimi at 32 tokens: 235 distinct experts, not 256); rows and touched_experts here follow that rounding.",
    'moe_trtllm':
        'Timing (collector/trtllm/collect_moe.py): the whole TRT-LLM MoE module forward (RenormalizeMoeRoutingMethod top-k, CUTLASS grouped GEMMs, finalize; no shared expert, no EP communication) is captured once in a CUDA graph and replayed 6 times after 3 warm-ups; the latency is the mean per replay. Consecutive replays read the same experts, so L2 is warm: rows whose touched weights fit in the ~50 MB L2 are upper bounds on speed.',
    'deepep_masked':
        'Timing (collector/wideep/sglang/collect_deepep_moe.py, decode): DeepEPMoE.run_moe_core on a synthetic masked layout (DeepGEMM masked grouped GEMM x2 plus the masked SiLU-and-quant), FP8 block weights, captured in a CUDA graph and replayed; latency = mean per call. No dispatch/combine communication. L2 is warm across replays.',
    'deepep_contig':
        'Timing (collector/wideep/sglang/collect_deepep_moe.py, prefill): DeepEPMoE.run_moe_core on a synthetic contiguous layout (ep_scatter, DeepGEMM contiguous grouped GEMM x2, SiLU+quant, ep_gather), FP8 block weights, timed EAGERLY per call with CUDA events (no graph), so it includes launch and host gaps; the first 3 iterations are dropped and the rest averaged. No dispatch/combine communication.',
}

MOE_BYTES_NOTE = (
    'shape: tokens = AIC num_tokens (the layer input); inter = inter_size / moe_tp; experts = num_experts / moe_ep (local); rows and touched_experts = the (token, expert) pairs and distinct experts rank 0 computes under AIC balanced routing (the rule is documented in '
    + SCRIPT + '). bytes = touched_experts x W_e + rows x 2 x hidden x 2 (BF16 activation in and out), with W_e the bytes of one local expert (gate+up+down, 3 x hidden x inter weights) incl. scales: INT4 g32 with BF16 scales, symmetric = 3hi/2 + 3(hi/32)x2; FP8 with 128x128 FP32 block scales = 3hi + 3 ceil(h/128) ceil(i/128) x 4; BF16 = 6hi. flops = 2 x rows x 3 x hidden x inter.')

DS_GROUPED = (
    "DeepSeek-V3-shape (256 experts) rows of SGLang and vLLM are NOT in this file: AIC routes them with the model's grouped top-k (8 groups, top-4 groups); the balanced logits tie across groups, so which experts each token gets depends on tie-breaking and is not computable from the balanced rule (on the H200 their TP8 rows at 32-128 tokens imply 5.5-5.7 TB/s if every routed expert were read, above the 4.8 TB/s spec, and their EP8 rows are 3.7-4.8x slower than TRT-LLM's ungrouped ones at 4096-16384 tokens, as if rank 0 drew far more than its share).")

NVFP4_BYTES_NOTE = (
    'NVFP4 experts: W_e = 3 x (hidden x inter / 2 + hidden x inter / 16 + 2 x 4) bytes (E2M1 two per byte, one E4M3 scale per 16 along K, FP32 weight_scale_2 and input_scale per matrix, the ModelOpt / compressed-tensors NVFP4 layout); dtype nvfp4: the layer quantizes its BF16 input to NVFP4 and multiplies at the FP4 tensor-core rate, so each record is priced against that rate.')

MOE_JOBS = []


# ---------------------------------------------------------------- routing

def _expert(t, j, num_tokens, E, stride, arith):
    if num_tokens >= stride:
        return (t + j * stride) % E  # integer tensors: exact
    if arith == 'bf16':
        a = bf16(bf16(t * stride) / bf16(num_tokens))
        b = bf16(a + bf16(j * stride))
        return math.trunc(bf16(b - math.floor(b / E) * E))
    return (math.floor((t * stride) / num_tokens) + j * stride) % E


def balanced_experts(num_tokens, E, topk, arith):
    stride = cdiv(E, topk)
    out = []
    for t in range(num_tokens):
        row = [_expert(t, j, num_tokens, E, stride, arith) for j in range(topk)]
        if len(set(row)) != topk:
            raise ValueError(f'balanced routing repeats an expert: t={t} E={E} topk={topk}')
        out.append(row)
    return out


@functools.lru_cache(maxsize=None)
def rank0_work(num_tokens, E, topk, ep, arith):
    L = E / ep
    rows, touched = 0, set()
    for row in balanced_experts(num_tokens, E, topk, arith):
        for e in row:
            if e < L:
                rows += 1
                touched.add(e)
    return rows, len(touched)


def expert_bytes(wdtype, h, i):
    """Bytes of one local expert (gate, up, down) incl. scales."""
    if wdtype == 'int4':
        return (3 * h * i) / 2 + 3 * (h * i / 32) * 2  # g32, BF16 scales, symmetric
    if wdtype == 'fp8':
        return 3 * h * i + 3 * cdiv(h, 128) * cdiv(i, 128) * 4  # 128x128 FP32 block scales
    if wdtype == 'bf16':
        return 3 * h * i * 2
    if wdtype == 'nvfp4':
        # E2M1 packed two per byte, one E4M3 scale per 16 along K, and the FP32
        # weight_scale_2 and input_scale of each of the three matrices.
        return (3 * h * i) / 2 + 3 * (h * i / 16) + 3 * 2 * 4
    raise ValueError(wdtype)


def moe_record(impl, wdtype, tokens, h, inter, E, topk, tp, ep, rows, touched, ms, dtype='bf16'):
    i = inter / tp
    return dict(
        kernel='moe_layer', op_class='moe', implementation=impl, dtype=dtype, weight_dtype=wdtype,
        shape=dict(tokens=tokens, hidden=h, inter=i, experts=E / ep, topk=topk, moe_tp=tp, moe_ep=ep, rows=rows,
                   touched_experts=touched),
        median_us=sig(ms * 1000),
        bytes=touched * expert_bytes(wdtype, h, i) + rows * 2 * h * 2,
        flops=2 * rows * 3 * h * i)


# ---------------------------------------------------------------- stock tables

def moe_math_dtype(wdtype):
    """The format the experts multiply in, which sets the tensor-core rate a
    record is priced against: FP8 block experts quantize their input per
    128-wide group and run at the FP8 rate in every kernel here, NVFP4
    experts at the FP4 rate, W4A16 experts dequantize to BF16."""
    return wdtype if wdtype in ('fp8', 'nvfp4') else 'bf16'


def moe_stock(fw, ver):
    return f'moe/{fw}/{ver}/moe_perf.parquet'


def _moe_keep(r, kernel_source, moe_dtype, shape):
    if r['kernel_source'] != kernel_source or r['moe_dtype'] != moe_dtype or r['distribution'] != 'balanced':
        return False
    if (r['hidden_size'] != shape['h'] or r['inter_size'] != shape['inter'] or r['num_experts'] != shape['E']
            or r['topk'] != shape['topk']):
        return False
    return (r['moe_tp_size'], r['moe_ep_size']) in MOE_PARALLEL and r['num_tokens'] <= MAX_TOKENS


def add_moe(what, impl, src, kernel_source, moe_dtype, wdtype, shape, timing, title, extra='', archs=None,
            dtype=None):
    dtype = dtype or moe_math_dtype(wdtype)
    arith = 'bf16' if timing == 'moe_vllm' else 'f32'
    parallel = ', '.join(f'EP{e}' if e > 1 else f'TP{t}' for t, e in MOE_PARALLEL)
    note = (f"{TIMING[timing]} Model shape: {shape['label']}, balanced routing only (power_law rows skipped), "
            f"moe_dtype {moe_dtype}, kernel_source {kernel_source}; TP/EP configurations kept: {parallel} where "
            f"present, tokens 1-{MAX_TOKENS}. {MOE_BYTES_NOTE}" + (' ' + extra if extra else ''))

    def build(table):
        out = []
        for r in table:
            if not _moe_keep(r, kernel_source, moe_dtype, shape):
                continue
            rows, touched = rank0_work(r['num_tokens'], shape['E'], shape['topk'], r['moe_ep_size'], arith)
            out.append(moe_record(impl, wdtype, r['num_tokens'], shape['h'], shape['inter'], shape['E'],
                                  shape['topk'], r['moe_tp_size'], r['moe_ep_size'], rows, touched,
                                  r['latency'], dtype))
        return out

    MOE_JOBS.append(dict(what=what, impl=impl, src=src, title=title, archs=archs, note=note, build=build,
                         kernel_source=kernel_source,
                         sort_key=lambda x: (x['shape']['moe_tp'], x['shape']['moe_ep'], x['shape']['tokens'])))


# SGLang 0.5.14 Marlin W4A16 (CompressedTensorsWNA16MoE), Kimi.
add_moe(what='sglang-marlin-moe-kimi-k2', impl='sglang_marlin_moe', src=moe_stock('sglang', '0.5.14'), kernel_source='sglang_marlin_moe', moe_dtype='int4_wo', wdtype='int4', shape=KIMI, timing='moe_sglang',
        title='AIConfigurator SGLang 0.5.14 Marlin W4A16 MoE layer (Kimi-K2.5 INT4 g32)',
        extra='INT4 rows are Kimi-K2.5 geometry with group_size 32 (collector/cases/base_ops/moe.yaml), resolved on SM90 to Marlin MoE (CompressedTensorsWNA16MoE).')
add_moe(what='vllm-marlin-moe-kimi-k2', impl='vllm_marlin_moe', src=moe_stock('vllm', '0.24.0'), kernel_source='vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts', moe_dtype='int4_wo', wdtype='int4', shape=KIMI, timing='moe_vllm',
        title='AIConfigurator vLLM 0.24.0 compressed-tensors WNA16 Marlin MoE layer (Kimi-K2.5 INT4 g32)',
        extra='INT4 rows are Kimi-K2.5 geometry with group_size 32; vLLM 0.24 EP is flattened (TP1 x EPn or TPn x EP1 only).')
for _shape in (KIMI, GLM5):
    _k = _shape['key']
    add_moe(what=f'sglang-triton-fused-moe-fp8-{_k}', impl='sglang_triton_fused_moe', src=moe_stock('sglang', '0.5.14'), kernel_source='sglang_fused_moe_triton', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_sglang',
            title=f'AIConfigurator SGLang 0.5.14 Triton fused MoE layer, FP8 block weights ({_k})',
            extra=f"{DS_GROUPED} These {_k} rows route ungrouped ({'Kimi: one expert group' if _shape is KIMI else 'GLM-5: one expert group'}) through the framework FusedMoE layer, which slices EP properly; none shows caveat 2 of the AIC reading (the collector's raw-Triton EP path, which computes every remote top-k slot as expert 0, would cost 8x the rows at EP8), so no row was dropped. The EP rows do slow down against TRT-LLM CUTLASS as EP grows (at >= 2k tokens about 1.0x at EP4, 1.4x at EP8, 2x at EP16, 3x at EP32, 4-5.5x at EP64, on both GPUs), presumably because the Triton kernel's sorted block grid is sized by all tokens x top-k rather than by rank 0's rows: that is this implementation's cost, so those rows are kept.")
    add_moe(what=f'vllm-flashinfer-cutlass-moe-fp8-{_k}', impl='vllm_flashinfer_cutlass_moe', src=moe_stock('vllm', '0.24.0'), kernel_source='vllm_fp8moe_flashinfer_cutlass_flashinferexperts', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_vllm',
            title=f'AIConfigurator vLLM 0.24.0 FlashInfer CUTLASS MoE layer, FP8 block weights ({_k})',
            extra=f'vLLM 0.24 picks FlashInfer CUTLASS for FP8 block experts only with EP > 1 (TP1 x EPn); its TP rows are Triton (vllm_triton_fused_moe). {DS_GROUPED}')
    add_moe(what=f'vllm-triton-fused-moe-fp8-{_k}', impl='vllm_triton_fused_moe', src=moe_stock('vllm', '0.24.0'), kernel_source='vllm_fp8moe_triton_tritonexperts', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_vllm',
            title=f'AIConfigurator vLLM 0.24.0 Triton fused MoE layer, FP8 block weights ({_k})',
            extra=f'vLLM 0.24 uses Triton experts for FP8 block weights with TP (EP1) only. {DS_GROUPED}')
for _shape in (KIMI, DSV3, GLM5):
    _k = _shape['key']
    add_moe(what=f'trtllm-cutlass-moe-fp8-{_k}', impl='trtllm_cutlass_moe', src=moe_stock('trtllm', '1.3.0rc20'), kernel_source='moe_torch_flow_cutlass', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_trtllm',
            title=f'AIConfigurator TRT-LLM 1.3.0rc20 CUTLASS MoE layer, FP8 block weights ({_k})',
            extra="TRT-LLM's collector routes every model with an ungrouped renormalize top-k, so the balanced rule holds for the DeepSeek shape too.")

# Blackwell FP8 block experts: SGLang and vLLM run FlashInfer's TRT-LLM-gen
# MoE kernels there (the kernel sources AIC's SM100 tables hold for
# fp8_block besides Triton).
for _shape in (KIMI, GLM5):
    _k = _shape['key']
    add_moe(archs=BLACKWELL, what=f'sglang-trtllm-gen-moe-fp8-{_k}', impl='sglang_trtllm_gen_moe', src=moe_stock('sglang', '0.5.14'), kernel_source='sglang_flashinfer_trtllm_moe', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_sglang',
            title=f'AIConfigurator SGLang 0.5.14 FlashInfer TRT-LLM-gen MoE layer, FP8 block weights ({_k})',
            extra=f"SGLang's flashinfer_trtllm MoE runner on SM100 (kernel_source sglang_flashinfer_trtllm_moe). {DS_GROUPED}")
    add_moe(archs=BLACKWELL, what=f'vllm-trtllm-gen-moe-fp8-{_k}', impl='vllm_trtllm_gen_moe', src=moe_stock('vllm', '0.24.0'), kernel_source='vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic', moe_dtype='fp8_block', wdtype='fp8', shape=_shape, timing='moe_vllm',
            title=f'AIConfigurator vLLM 0.24.0 FlashInfer TRT-LLM-gen MoE layer, FP8 block weights ({_k})',
            extra=f"vLLM's FP8 block MoE on SM100 through FlashInfer's TRT-LLM-gen experts (kernel_source vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic). {DS_GROUPED}")

# Blackwell 4-bit experts. NVFP4: vLLM's select_nvfp4_moe_backend
# (vllm/model_executor/layers/fused_moe/oracle/nvfp4.py) tries FlashInfer
# TRT-LLM-gen first and its monolithic experts before the modular ones; AIC's
# vLLM 0.24 collector resolves exactly that for the NVFP4 rows. INT4 W4A16
# group 32 (Kimi): FlashInfer's TRT-LLM-gen MxInt4 MoE, which SGLang runs by
# default on SM100; vLLM calls the same FlashInfer kernel only with
# VLLM_USE_FLASHINFER_MOE_INT4=1, which AIC's collector does not set (its
# vLLM INT4 rows are Marlin), so only SGLang rows time it.
for _shape in (KIMI, GLM5):
    _k = _shape['key']
    add_moe(archs=BLACKWELL, what=f'vllm-trtllm-gen-moe-nvfp4-{_k}', impl='vllm_trtllm_gen_moe_nvfp4', src=moe_stock('vllm', '0.24.0'), kernel_source='vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic', moe_dtype='nvfp4', wdtype='nvfp4', dtype='nvfp4', shape=_shape, timing='moe_vllm',
            title=f'AIConfigurator vLLM 0.24.0 FlashInfer TRT-LLM-gen MoE layer, NVFP4 weights and activations ({_k})',
            extra=f"vLLM's NVFP4 MoE on SM100 through FlashInfer's TRT-LLM-gen NVFP4 experts (kernel_source vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic; ModelOpt NVFP4 checkpoints reach the same backend through the same oracle). {NVFP4_BYTES_NOTE} {DS_GROUPED}")
add_moe(archs=BLACKWELL, what='sglang-trtllm-gen-moe-int4-kimi-k2', impl='sglang_trtllm_gen_moe_int4', src=moe_stock('sglang', '0.5.14'), kernel_source='sglang_flashinfer_trtllm_moe', moe_dtype='int4_wo', wdtype='int4', shape=KIMI, timing='moe_sglang',
        title='AIConfigurator SGLang 0.5.14 FlashInfer TRT-LLM-gen MxInt4 MoE layer (Kimi-K2.5 INT4 g32)',
        extra="INT4 rows are Kimi-K2.5 geometry with group_size 32, resolved on SM100 to SGLang's flashinfer_trtllm MoE runner (kernel_source sglang_flashinfer_trtllm_moe: FlashInfer trtllm_mxint4_block_scale_moe, the default for W4A16 group-32 experts on Blackwell since sgl-project/sglang PR 18136).")


# ---------------------------------------------------------------- DeepEP

def _deepep_work(n, ep, masked):
    """(rows, touched) of rank 0 under the collector's uniform layout, or None
    for a dropped row (contiguous below 2048 tokens per rank)."""
    L = DSV3['E'] / ep
    base = math.floor((n * DSV3['topk'] * ep) / DSV3['E'])
    if masked:
        if base == 0:
            touched = min(L, n * DSV3['topk'])
            return touched, touched
        return L * base, L
    if n < 2048:
        return None
    return L * base, L


def add_deepep(what, impl, table_name, masked):
    """SGLang 0.5.10 DeepEP (DeepSeek-V3 shape, "uniform")."""
    layout = ('masked: base = floor(n x 8 x EP / 256) rows per local expert for n = tokens / EP; base 0 gives n x 8 experts one row each'
              if masked else 'contiguous: every local expert gets floor(n x 8 x EP / 256) rows for n = tokens / EP')
    kept = ('' if masked else 'Rows kept: >= 2048 tokens per rank only, at every EP size. Rows with fewer tokens sit on a ~0.38-0.39 ms eager-timing floor at every EP size and are not kernel times: at EP <= 4 the floor is below the weight-read time, and on the H100 even the EP8 rows at 128-1024 tokens per rank imply 99-109% of the HBM spec if the 32 local experts are read, so EP8 rows below 2048 tokens per rank are dropped too. ')
    note = (f"{TIMING['deepep_masked' if masked else 'deepep_contig']} Model shape: {DSV3['label']}, FP8 128x128 block weights, kernel_source deepepmoe, \"uniform\" distribution only (power_law rows skipped), every EP size present. tokens = AIC num_tokens (global: tokens per rank x EP); rows and touched_experts follow the collector's synthetic uniform layout ({layout}). {kept}bytes = touched_experts x W_e + rows x 2 x hidden x 2 (counted as BF16 activations like the other MoE files, although this path moves FP8 activations), W_e = 3 x 7168 x 2048 + 3 x 56 x 16 x 4 bytes; flops = 2 x rows x 3 x 7168 x 2048.")

    def build(table):
        out = []
        for r in table:
            if r['distribution'] != 'uniform' or r['moe_dtype'] != 'fp8_block' or r['moe_tp_size'] != 1:
                continue
            if (r['hidden_size'] != DSV3['h'] or r['inter_size'] != DSV3['inter'] or r['num_experts'] != DSV3['E']
                    or r['topk'] != DSV3['topk']):
                continue
            ep = r['moe_ep_size']
            if r['num_tokens'] % ep != 0:
                raise ValueError('deepep tokens not a multiple of ep')
            work = _deepep_work(r['num_tokens'] / ep, ep, masked)
            if work is None:
                continue
            out.append(moe_record(impl, 'fp8', r['num_tokens'], DSV3['h'], DSV3['inter'], DSV3['E'], DSV3['topk'],
                                  1, ep, work[0], work[1], r['latency'], moe_math_dtype('fp8')))
        return out

    MOE_JOBS.append(dict(
        what=what, impl=impl, src=f'moe/sglang/0.5.10/{table_name}.parquet', archs=None, note=note, build=build,
        title=f"AIConfigurator SGLang 0.5.10 DeepEP MoE {'masked (decode)' if masked else 'contiguous (prefill)'} expert compute, DeepSeek-V3 FP8 block",
        sort_key=lambda x: (x['shape']['moe_ep'], x['shape']['tokens'])))


add_deepep(what='sglang-deepep-masked-moe-dsv3', impl='sglang_deepep_masked_moe', table_name='wideep_generation_moe_perf', masked=True)
add_deepep(what='sglang-deepep-contiguous-moe-dsv3', impl='sglang_deepep_contiguous_moe', table_name='wideep_context_moe_perf', masked=False)
