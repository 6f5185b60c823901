"""What aic_records.py copies from AIConfigurator: GPUs, model shapes, the
notes each file carries and one job per output file kind.

A job is a dict: what (file tag), impl, src (table path under the GPU's
folder: <op>/<engine>/<version>/<table>.parquet), title, note, build
(parquet rows -> records), sort_key, archs (None: every GPU) and, where its
rows are selected by one, kernel_source (AIC's name of the kernel). Records
are plain dicts whose key order is the order written.
"""

from aic_format import BLACKWELL, HOPPER, cdiv, sig
from aic_moe import MOE_JOBS

DATA = 'aic-core/src/aiconfigurator_core/systems/data'

H100_SENTENCE = (
    'Measured on an H100 SXM, not an H200: an H100 record informs H200 efficiency only as a fraction of '
    "the H100's own peak (same SM90 generation), never as an absolute H200 time.")


def same_arch(gpu, arch, others):
    return (f"Measured on a {gpu}: a {gpu} record informs {others} efficiency only as a fraction of the "
            f"{gpu}'s own peak (same {arch} generation), never as an absolute time on another GPU.")


# Per GPU: AIC's folder, the file tag, its architecture (a job with `archs`
# runs only there: the same engine picks other kernels on SM100), the
# record's gpu, the HBM datasheet figure (diagnostics only) and the sentence
# every note of that GPU ends with.
GPUS = [
    dict(dir='h200_sxm', tag='h200', arch='sm90', name='H200', hbm=4.8e12, title='H200 SXM', sentence=''),
    dict(dir='h100_sxm', tag='h100', arch='sm90', name='H100', hbm=3.35e12, title='H100 SXM', sentence=H100_SENTENCE),
    dict(dir='b200_sxm', tag='b200', arch='sm100', name='B200', hbm=8e12, title='B200 SXM (HGX)',
         sentence=same_arch('B200', 'SM100', 'GB200')),
    dict(dir='gb200', tag='gb200', arch='sm100', name='GB200', hbm=8e12, title='GB200 (NVL72)',
         sentence=same_arch('GB200', 'SM100', 'B200')),
    dict(dir='b300_sxm', tag='b300', arch='sm103', name='B300', hbm=7.75e12, title='B300 SXM (HGX)',
         sentence=same_arch('B300', 'SM103', 'GB300')),
    dict(dir='gb300', tag='gb300', arch='sm103', name='GB300', hbm=8e12, title='GB300 (NVL72)',
         sentence=same_arch('GB300', 'SM103', 'B300')),
]

TIMING = {
    'mla_decode':
        'Timing (collector/{trtllm,sglang}/collect_mla.py): one MLA decode attention call (absorbed DeepSeek geometry: K 576 = kv_lora 512 + rope 64, V 512, q_len 1) captured in a CUDA graph and replayed (SGLang: 20 replays), mean per replay; the KV stays in HBM but small KV sets are L2-warm across replays.',
    'prefill':
        'Timing (collector/{sglang,vllm,trtllm}/collect_attn.py): one causal context-attention call without prefix (step 0, window 0) captured in a CUDA graph and replayed, mean per replay.',
    'mla_prefill':
        'Timing (collector/trtllm/collect_mla.py): one TRT-LLM MLA context attention call in the MHA geometry (q/k head dim 192 = 128 nope + 64 rope, v head dim 128), causal, no prefix, captured in a CUDA graph and replayed, mean per replay.',
    'gemm_sglang':
        'Timing (collector/sglang/collect_gemm.py): up to 6 copies of the GEMM (separate weights, as many as fit in 45% of memory) run back to back inside one CUDA graph, replayed 6 times after 3 warm-ups; latency = mean per GEMM. The rotating weight copies keep large weights from being L2-resident; weights under ~8 MB may still be L2-assisted.',
    'gemm_vllm':
        'Timing (collector/vllm/collect_gemm.py): BF16 and FP8 per-tensor GEMMs run as 6 copies (separate weights) back to back inside one CUDA graph, replayed 6 times after 3 warm-ups, mean per GEMM; FP8 block GEMMs run ONE copy EAGERLY (no CUDA graph: use_cuda_graph=False), so their small-m times include launch and quantisation-kernel gaps and the single weight is L2-warm across repeats.',
}

JOBS = list(MOE_JOBS)

# ---------------------------------------------------------------- MLA decode

MLA_DECODE_HEADS = [128, 64, 16, 8]
MLA_DECODE_KV = [256, 1024, 4096, 16384, 32768, 65536, 131072]


def _kv_name(kv):
    return 'bfloat16' if kv == 'bf16' else 'fp8'


def add_mla_decode(what, impl, src, kv, title, extra=None, archs=None, kernel_source=None):
    kvb = 2 if kv == 'bf16' else 1
    note = (f"{TIMING['mla_decode']} Rows kept: kv_cache_dtype {_kv_name(kv)}, local query heads "
            f"{'/'.join(map(str, MLA_DECODE_HEADS))} (128 = DeepSeek TP1, 16 = DeepSeek TP8, 64 = Kimi-K2 TP1, "
            f"8 = Kimi-K2 TP8), KV length {'/'.join(map(str, MLA_DECODE_KV))}, every batch present. shape: batch, "
            f"kv_len = step + 1, q_heads. ctx = batch x kv_len; flops = 2 q_heads (512+64) ctx + 2 q_heads 512 ctx; "
            f"bytes = ctx x 576 x {kvb} (KV) + batch q_heads 576 x 2 (Q) + batch q_heads 512 x 2 (output)."
            + (' ' + extra if extra else ''))

    def build(table):
        out = []
        for r in table:
            if r['kv_cache_dtype'] != _kv_name(kv) or r['isl'] != 1:
                continue
            if kernel_source and r.get('kernel_source') != kernel_source:
                continue
            kv_len = r['step'] + 1
            if r['num_heads'] not in MLA_DECODE_HEADS or kv_len not in MLA_DECODE_KV:
                continue
            b, q = r['batch_size'], r['num_heads']
            ctx = b * kv_len
            out.append(dict(
                kernel='mla_decode', op_class='attention', implementation=impl, dtype='bf16', kv_dtype=kv,
                shape=dict(batch=b, kv_len=kv_len, q_heads=q),
                median_us=sig(r['latency'] * 1000),
                bytes=ctx * 576 * kvb + b * q * 576 * 2 + b * q * 512 * 2,
                flops=2 * q * (512 + 64) * ctx + 2 * q * 512 * ctx))
        return out

    JOBS.append(dict(what=what, impl=impl, src=src, title=title, archs=archs, note=note, build=build,
                     kernel_source=kernel_source,
                     sort_key=lambda x: (x['shape']['q_heads'], x['shape']['batch'], x['shape']['kv_len'])))


add_mla_decode(archs=HOPPER, what='trtllm-mla-decode-bf16kv', impl='trtllm_mla_decode_bf16kv', src='mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv='bf16', title='AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, BF16 KV cache', extra='TRT-LLM Hopper MLA generation kernels (kernel_source default, page 64).')
add_mla_decode(archs=HOPPER, what='trtllm-mla-decode-fp8kv', impl='trtllm_mla_decode_fp8kv', src='mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv='fp8', title='AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, FP8 KV cache', extra='TRT-LLM Hopper MLA generation kernels (kernel_source default, page 64); with 128 heads the FP8-KV rows run faster than BF16 dense math allows at BF16, so the kernel likely computes in FP8.')
add_mla_decode(archs=HOPPER, what='sglang-fa3-mla-decode-bf16kv', impl='sglang_fa3_mla_decode_bf16kv', src='mla/sglang/0.5.14/generation_mla_perf.parquet', kv='bf16', title='AIConfigurator SGLang 0.5.14 FA3 MLA decode attention, BF16 KV cache', extra='SGLang FlashAttention-3 MLA backend (kernel_source flash_attention, page size 1).')
add_mla_decode(archs=HOPPER, what='sglang-fa3-mla-decode-fp8kv', impl='sglang_fa3_mla_decode_fp8kv', src='mla/sglang/0.5.14/generation_mla_perf.parquet', kv='fp8', title='AIConfigurator SGLang 0.5.14 FA3 MLA decode attention, FP8 KV cache (full-pool dequant path)', extra='PATHOLOGICAL PATH: SGLang 0.5.14 fa3 with an FP8 KV cache dequantises the whole per-layer KV pool every call (sgl-project/sglang issue 35291), so these rows run at ~0.3 TB/s whatever the shape and their time scales with the pool, not with batch x kv_len. They describe only this implementation and must not calibrate any other (in particular not FP8-KV MLA decode in general).')
for _kv in ('bf16', 'fp8'):
    _kvn = 'BF16' if _kv == 'bf16' else 'FP8'
    add_mla_decode(archs=BLACKWELL, what=f'trtllm-mla-decode-{_kv}kv', impl=f'trtllm_mla_decode_{_kv}kv', src='mla/trtllm/1.3.0rc20/generation_mla_perf.parquet', kv=_kv, title=f'AIConfigurator TRT-LLM 1.3.0rc20 MLA decode attention, {_kvn} KV cache', extra='TRT-LLM Blackwell MLA generation kernels (TRT-LLM-gen, kernel_source default).')
    add_mla_decode(archs=BLACKWELL, what=f'sglang-trtllm-mla-decode-{_kv}kv', impl=f'sglang_trtllm_mla_decode_{_kv}kv', src='mla/sglang/0.5.14/generation_mla_perf.parquet', kv=_kv, kernel_source='trtllm_mla', title=f'AIConfigurator SGLang 0.5.14 TRT-LLM-gen MLA decode attention (FlashInfer trtllm_mla backend), {_kvn} KV cache', extra="On SM100 SGLang 0.5.14 runs MLA decode on its trtllm_mla backend (FlashInfer's TRT-LLM-gen kernels; kernel_source trtllm_mla, the only source in this table on Blackwell), not on FA3, which is SM90-only.")

# ---------------------------------------------------------------- GQA prefill

GQA_HEADS = [(64, 8), (32, 8), (16, 2), (8, 1)]
GQA_ISL = [256, 512, 1024, 2048, 4096, 8192, 16384]


def add_prefill(what, impl, src, kernel_source, attn, kv, title, extra=None):
    note = (f"{TIMING['prefill']} Rows kept: kernel_source {kernel_source}, attn_dtype {attn}, kv_cache_dtype {kv}, "
            f"head_dim 128, (q_heads, kv_heads) in {', '.join(f'{a}/{b}' for a, b in GQA_HEADS)} (Llama-3-70B "
            f"TP1/TP4/TP8 and Llama-3-8B TP1), isl {'/'.join(map(str, GQA_ISL))}, every batch present; window_size 0 "
            "only (sliding-window rows skipped); the table has no prefix column (step 0: no cached prefix). shape: "
            "batch, chunk = isl, q_heads, kv_heads, head_dim. pairs = batch x isl x (isl+1) / 2 (causal); flops = 4 "
            "q_heads head_dim pairs; bytes = batch isl (2 kv_heads head_dim + 2 q_heads head_dim) x 2, i.e. Q, K, V "
            "and output counted as BF16 for every variant (prefill attention is compute-bound; bytes matter only at "
            "short isl)." + (' ' + extra if extra else ''))

    def build(table):
        out = []
        for r in table:
            if r['kernel_source'] != kernel_source or r['attn_dtype'] != attn or r['kv_cache_dtype'] != kv:
                continue
            beam = r.get('beam_width')
            if r['window_size'] != 0 or r['step'] != 0 or r['head_dim'] != 128 or (1 if beam is None else beam) != 1:
                continue
            if (r['num_heads'], r['num_key_value_heads']) not in GQA_HEADS or r['isl'] not in GQA_ISL:
                continue
            b, s, q, k, d = r['batch_size'], r['isl'], r['num_heads'], r['num_key_value_heads'], r['head_dim']
            pairs = (b * s * (s + 1)) / 2
            out.append(dict(
                kernel='attention_prefill', op_class='attention', implementation=impl,
                dtype='fp8' if attn == 'fp8' else 'bf16', kv_dtype='fp8' if kv == 'fp8' else 'bf16',
                shape=dict(batch=b, chunk=s, q_heads=q, kv_heads=k, head_dim=d),
                median_us=sig(r['latency'] * 1000),
                bytes=b * s * (2 * k * d + 2 * q * d) * 2,
                flops=4 * q * d * pairs))
        return out

    JOBS.append(dict(what=what, impl=impl, src=src, title=title, archs=None, note=note, build=build,
                     kernel_source=kernel_source,
                     sort_key=lambda x: (-x['shape']['q_heads'], -x['shape']['kv_heads'], x['shape']['batch'],
                                         x['shape']['chunk'])))


add_prefill(what='sglang-fa3-prefill', impl='sglang_fa3_prefill', src='attention/sglang/0.5.14/context_attention_perf.parquet', kernel_source='fa3', attn='bfloat16', kv='bfloat16', title='AIConfigurator SGLang 0.5.14 FA3 causal prefill attention, BF16')
add_prefill(what='sglang-fa3-prefill-fp8', impl='sglang_fa3_prefill_fp8', src='attention/sglang/0.5.14/context_attention_perf.parquet', kernel_source='fa3', attn='fp8', kv='fp8', title='AIConfigurator SGLang 0.5.14 FA3 causal prefill attention, FP8 (FP8 attention, FP8 KV)')
add_prefill(what='vllm-fa3-prefill', impl='vllm_fa3_prefill', src='attention/vllm/0.24.0/context_attention_perf.parquet', kernel_source='vllm_flash_attn_fa3', attn='bfloat16', kv='bfloat16', title='AIConfigurator vLLM 0.24.0 FA3 causal prefill attention, BF16')
add_prefill(what='vllm-fa3-prefill-fp8kv', impl='vllm_fa3_prefill_fp8kv', src='attention/vllm/0.24.0/context_attention_perf.parquet', kernel_source='vllm_flash_attn_fa3', attn='bfloat16', kv='fp8', title='AIConfigurator vLLM 0.24.0 FA3 causal prefill attention, BF16 attention with an FP8 KV cache', extra='vLLM\'s "fp8" here is BF16 attention writing an FP8 KV cache, not FP8 attention.')
add_prefill(what='trtllm-context-attention', impl='trtllm_context_attention', src='attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernel_source='torch_flow', attn='bfloat16', kv='bfloat16', title='AIConfigurator TRT-LLM 1.3.0rc20 context attention, BF16')
add_prefill(what='trtllm-context-attention-fp8', impl='trtllm_context_attention_fp8', src='attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernel_source='torch_flow', attn='fp8', kv='fp8', title='AIConfigurator TRT-LLM 1.3.0rc20 context attention, FP8 (FP8 attention, FP8 KV)')
add_prefill(what='trtllm-context-attention-fp8kv', impl='trtllm_context_attention_fp8kv', src='attention/trtllm/1.3.0rc20/context_attention_perf.parquet', kernel_source='torch_flow', attn='bfloat16', kv='fp8', title='AIConfigurator TRT-LLM 1.3.0rc20 context attention, BF16 attn_dtype with an FP8 KV cache', extra='The table labels these rows attn_dtype bfloat16 with kv_cache_dtype fp8; they are kept apart from both the BF16 and the FP8/FP8 rows because their times differ from both: at long isl they are the fastest of the three (H200, 64/8 heads, 1 x 16384: 5.55 ms against 6.10 ms FP8/FP8 and 8.41 ms BF16), so TRT-LLM likely runs an FP8 context kernel whenever the KV cache is FP8.')

# ---------------------------------------------------------------- MLA prefill

MLA_PREFILL_HEADS = [128, 64, 16, 8]
MLA_PREFILL_MIN_ISL = 256


def _mla_prefill_rows(table, keep, kernel, impl, kv, bytes_of, head_dims):
    out = []
    for r in table:
        if not keep(r) or r['step'] != 0:
            continue
        if r['num_heads'] not in MLA_PREFILL_HEADS or r['isl'] < MLA_PREFILL_MIN_ISL:
            continue
        b, s, q = r['batch_size'], r['isl'], r['num_heads']
        pairs = (b * s * (s + 1)) / 2
        out.append(dict(
            kernel=kernel, op_class='attention', implementation=impl, dtype='bf16', kv_dtype=kv,
            shape=dict(batch=b, chunk=s, q_heads=q),
            median_us=sig(r['latency'] * 1000),
            bytes=bytes_of(b, s, q),
            flops=2 * q * head_dims * pairs))
    return out


def add_mla_prefill(what, impl, kv, title):
    """MLA prefill, TRT-LLM only (SGLang's rows use the absorbed geometry)."""
    heads = '/'.join(map(str, MLA_PREFILL_HEADS))
    note = (f"{TIMING['mla_prefill']} Rows kept: mla_dtype bfloat16, kv_cache_dtype {_kv_name(kv)}, local heads "
            f"{heads}, isl >= {MLA_PREFILL_MIN_ISL}, every batch present. SGLang 0.5.14's context_mla rows are not used "
            "anywhere: its collector times the absorbed MQA geometry (576/512) instead of the MHA prefill geometry. "
            "shape: batch, chunk = isl, q_heads. pairs = batch x isl x (isl+1) / 2; flops = 2 q_heads (192+128) "
            "pairs; bytes = 2 x batch isl q_heads (192+128) x 2."
            + (' With an FP8 KV cache the rows at long isl run faster than the BF16 ones (up to ~700 TFLOPS), so '
               'TRT-LLM likely runs an FP8 context kernel; dtype stays "bf16" as the table labels it.'
               if kv == 'fp8' else ''))

    def build(table):
        return _mla_prefill_rows(
            table, lambda r: r['mla_dtype'] == 'bfloat16' and r['kv_cache_dtype'] == _kv_name(kv),
            'mla_prefill', impl, kv, lambda b, s, q: 2 * b * s * q * (192 + 128) * 2, 192 + 128)

    JOBS.append(dict(what=what, impl=impl, src='mla/trtllm/1.3.0rc20/context_mla_perf.parquet', title=title,
                     archs=None, note=note, build=build,
                     sort_key=lambda x: (-x['shape']['q_heads'], x['shape']['batch'], x['shape']['chunk'])))


def add_mla_prefill_absorbed(what, impl, title):
    """SGLang 0.5.14 FA3 times the absorbed MQA geometry (K 576 = kv_lora 512
    + rope 64, V 512) for context MLA, which is what an engine runs when it
    absorbs the prefill of a batch with a cached prefix; priced as capplan's
    mla_prefill_absorbed op."""
    heads = '/'.join(map(str, MLA_PREFILL_HEADS))
    note = (f"{TIMING['mla_prefill']} Rows kept: kernel_source flash_attention, mla_dtype bfloat16, kv_cache_dtype "
            f"bfloat16, local heads {heads}, isl >= {MLA_PREFILL_MIN_ISL}, step 0. SGLang's collector "
            "(collector/sglang/collect_mla.py) sets head_dim_total = kv_lora_rank + rope for every backend but "
            "trtllm_mla, so these rows time the absorbed geometry (576/512), not the MHA prefill geometry: they "
            "calibrate only the absorbed form. shape: batch, chunk = isl, q_heads. pairs = batch x isl x (isl+1) / "
            "2; flops = 2 q_heads (576+512) pairs; bytes = batch isl 576 x 2 (the latents) + batch isl q_heads "
            "(576+512) x 2 (Q read, O written).")

    def build(table):
        return _mla_prefill_rows(
            table, lambda r: (r['kernel_source'] == 'flash_attention' and r['mla_dtype'] == 'bfloat16'
                              and r['kv_cache_dtype'] == 'bfloat16'),
            'mla_prefill_absorbed', impl, 'bf16',
            lambda b, s, q: b * s * 576 * 2 + b * s * q * (576 + 512) * 2, 576 + 512)

    JOBS.append(dict(what=what, impl=impl, src='mla/sglang/0.5.14/context_mla_perf.parquet', title=title,
                     archs=None, note=note, build=build, kernel_source='flash_attention',
                     sort_key=lambda x: (-x['shape']['q_heads'], x['shape']['batch'], x['shape']['chunk'])))


add_mla_prefill(what='trtllm-mla-prefill', impl='trtllm_mla_prefill', kv='bf16', title='AIConfigurator TRT-LLM 1.3.0rc20 MLA context (prefill) attention, BF16')
add_mla_prefill_absorbed(what='sglang-fa3-mla-prefill-absorbed', impl='sglang_fa3_mla_prefill_absorbed', title='AIConfigurator SGLang 0.5.14 FA3 MLA context attention in the absorbed geometry (576/512), BF16')
add_mla_prefill(what='trtllm-mla-prefill-fp8', impl='trtllm_mla_prefill_fp8', kv='fp8', title='AIConfigurator TRT-LLM 1.3.0rc20 MLA context (prefill) attention, FP8 KV cache')

# ---------------------------------------------------------------- dense GEMM

# (n, k) pairs of the mission models: n = output features.
GEMM_NK = [
    (1536, 7168), (4096, 7168), (7168, 2048), (7168, 16384), (7168, 8192), (7168, 1024), (3072, 1536), (12288, 1536),  # DeepSeek-V3 / Kimi-K2
    (10240, 8192), (8192, 8192), (8192, 1024), (8192, 3584),  # Llama-3-70B (7168x8192 above is also its TP8 gate_up)
    (6144, 4096), (4096, 4096), (4096, 3584),  # Llama-3-8B
    (7168, 5120), (5120, 5120), (16384, 5120), (5120, 8192),  # Llama-4 / 5120-wide models
]
GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
GEMM_IMPLS = {
    'sglang': dict(
        src='gemm/sglang/0.5.14/gemm_perf.parquet', timing='gemm_sglang', engine='SGLang 0.5.14',
        sources={
            'sglang_torch_linear': dict(impl='sglang_torch_bf16_gemm', what='sglang-torch-bf16-gemm', desc='torch BF16 linear (cuBLAS)'),
            'sglang_sgl_kernel_fp8_scaled_mm': dict(impl='sglang_fp8_per_tensor_gemm', what='sglang-fp8-per-tensor-gemm', desc='sgl_kernel fp8_scaled_mm, FP8 per-tensor weight scale'),
            'sglang_deepgemm_gemm_nt_f8f8bf16': dict(impl='sglang_deepgemm_fp8_block_gemm', what='sglang-deepgemm-fp8-block-gemm', desc='DeepGEMM gemm_nt_f8f8bf16, 1x128 activation and 128x128 weight block scales'),
        }),
    'vllm': dict(
        src='gemm/vllm/0.24.0/gemm_perf.parquet', timing='gemm_vllm', engine='vLLM 0.24.0',
        sources={
            'torch.nn.functional.linear': dict(impl='vllm_torch_bf16_gemm', what='vllm-torch-bf16-gemm', desc='torch.nn.functional.linear BF16 (cuBLAS)'),
            'CutlassFP8ScaledMMLinearKernel': dict(impl='vllm_cutlass_fp8_per_tensor_gemm', what='vllm-cutlass-fp8-per-tensor-gemm', desc='CUTLASS FP8 scaled_mm, FP8 per-tensor weight scale'),
            'DeepGemmFp8BlockScaledMMKernel': dict(impl='vllm_deepgemm_fp8_block_gemm', what='vllm-deepgemm-fp8-block-gemm', desc='DeepGEMM FP8 block-scaled GEMM (vLLM picks it for m >= 32)'),
            'FlashInferFp8BlockScaledMMKernel': dict(impl='vllm_flashinfer_fp8_block_gemm', what='vllm-flashinfer-fp8-block-gemm', desc='FlashInfer swap-AB FP8 block-scaled GEMM (vLLM picks it for m < 32)'),
            'FlashInferCuteDslNvFp4LinearKernel': dict(
                impl='vllm_flashinfer_nvfp4_gemm', what='vllm-flashinfer-nvfp4-gemm', desc='FlashInfer CuTe-DSL NVFP4 GEMM (BF16 input quantized to NVFP4 inside the linear)',
                extra=' NVFP4 rows: weights n k / 2 + n k / 16 (E4M3 scale per 16 along K) + 2 x 4 (FP32 weight_scale_2 and input_scale) bytes, the BF16 input m k x 2 bytes (the linear quantizes it itself) and the BF16 output; dtype nvfp4, priced against the FP4 tensor-core rate.'),
        }),
}


def _gemm_bytes(dt, n, k):
    """(weight bytes, activation bytes per element, dtype, variant)."""
    if dt == 'bfloat16':
        return n * k * 2, 2, 'bf16', None
    if dt == 'fp8':
        return n * k + 4, 1, 'fp8', 'per_tensor'
    if dt == 'fp8_block':
        return n * k + cdiv(n, 128) * cdiv(k, 128) * 4, 1, 'fp8', 'block_128x128'
    if dt == 'nvfp4':
        return n * k / 2 + n * k / 16 + 2 * 4, 2, 'nvfp4', None
    raise ValueError(f'gemm dtype {dt}')


def add_gemm(g, ks, s):
    nk = ', '.join(f'{n}x{k}' for n, k in GEMM_NK)
    note = (f"{TIMING[g['timing']]} Rows kept: kernel_source {ks} ({s['desc']}); (n, k) pairs of the mission models' "
            f"projections: {nk} (DeepSeek-V3/Kimi-K2 7168-wide, Llama-3-70B 8192-wide, Llama-3-8B 4096-wide, "
            f"5120-wide models, at TP1/TP4/TP8 slices); m in {'/'.join(map(str, GEMM_M))} where present. shape: m, n, "
            "k (y[m,n] = x[m,k] W[n,k]^T). flops = 2mnk; bytes = weights (n k x bytes per weight + scales: FP8 "
            "per-tensor 4 bytes, FP8 block ceil(n/128) ceil(k/128) x 4) + m k x activation bytes (1 for FP8, 2 for "
            "BF16) + m n x 2 (BF16 output)." + s.get('extra', ''))

    def build(table):
        out = []
        for r in table:
            if r['kernel_source'] != ks:
                continue
            m, n, k = r['m'], r['n'], r['k']
            if (n, k) not in GEMM_NK or m not in GEMM_M:
                continue
            wbytes, abytes, dtype, variant = _gemm_bytes(r['gemm_dtype'], n, k)
            rec = dict(kernel='dense_gemm', op_class='dense_gemm')
            if variant:
                rec['variant'] = variant
            rec.update(implementation=s['impl'], dtype=dtype, weight_dtype=dtype,
                       shape=dict(m=m, n=n, k=k),
                       median_us=sig(r['latency'] * 1000),
                       bytes=wbytes + m * k * abytes + m * n * 2,
                       flops=2 * m * n * k)
            out.append(rec)
        return out

    JOBS.append(dict(what=s['what'], impl=s['impl'], src=g['src'], archs=None, note=note, build=build,
                     kernel_source=ks,
                     title=f"AIConfigurator {g['engine']} dense GEMM: {s['desc']}",
                     sort_key=lambda x: (x['shape']['n'], x['shape']['k'], x['shape']['m'])))


for _g in GEMM_IMPLS.values():
    for _ks, _s in _g['sources'].items():
        add_gemm(_g, _ks, _s)
