// The layer program's op ids (layer_program.h), spelt once. The builders
// name their ops with these, and every walker that picks an op by id (the
// engine backends, the tests) compares against the same constant, so a
// renamed op fails to compile instead of silently falling through a string
// match. A GEMM's id is also the name of the weight tensor it reads where
// the two coincide (weight_tensors.cc); ProgramOp::tensor says which one.
#ifndef CAPPLAN_MODELS_OP_IDS_H_
#define CAPPLAN_MODELS_OP_IDS_H_

namespace capplan::models::op_ids {

// Prologue.
inline constexpr char kEmbedTokens[] = "embed_tokens";
inline constexpr char kEmbedAllReduce[] = "embed.all_reduce";

// Layer norms and the residual add.
inline constexpr char kNormInput[] = "norm.input";
inline constexpr char kNormPostAttention[] = "norm.post_attention";
inline constexpr char kNormResidual[] = "norm.residual";

// Attention projections (MLA and GQA) and the DSA indexer's.
inline constexpr char kQAProj[] = "attn.q_a_proj";
inline constexpr char kQBProj[] = "attn.q_b_proj";
inline constexpr char kQProj[] = "attn.q_proj";
inline constexpr char kKProj[] = "attn.k_proj";
inline constexpr char kVProj[] = "attn.v_proj";
inline constexpr char kKvAProj[] = "attn.kv_a_proj_with_mqa";
inline constexpr char kKvBProjAbsorbed[] = "attn.kv_b_proj.absorbed";
inline constexpr char kKvBProjExpand[] = "attn.kv_b_proj.expand";
inline constexpr char kIndexerWqB[] = "attn.indexer.wq_b";
inline constexpr char kIndexerWk[] = "attn.indexer.wk";
inline constexpr char kIndexerWeightsProj[] = "attn.indexer.weights_proj";
inline constexpr char kOProj[] = "attn.o_proj";

// Attention elementwise ops and kernels.
inline constexpr char kNormRope[] = "attn.norm_rope";
inline constexpr char kRope[] = "attn.rope";
inline constexpr char kKvAppend[] = "attn.kv_append";
inline constexpr char kIndexer[] = "attn.indexer";
inline constexpr char kMlaDecode[] = "attn.mla_decode";
inline constexpr char kMlaPrefill[] = "attn.mla_prefill";
inline constexpr char kDecode[] = "attn.decode";
inline constexpr char kPrefill[] = "attn.prefill";
inline constexpr char kDecodeWindow[] = "attn.decode.window";
inline constexpr char kPrefillWindow[] = "attn.prefill.window";
inline constexpr char kAttnAllReduce[] = "attn.all_reduce";

// Gated DeltaNet (a hybrid's linear-attention layers).
inline constexpr char kLinearInProjQkvz[] = "linear_attn.in_proj_qkvz";
inline constexpr char kLinearInProjBa[] = "linear_attn.in_proj_ba";
inline constexpr char kLinearConv1d[] = "linear_attn.conv1d";
inline constexpr char kLinearRecurrentUpdate[] = "linear_attn.recurrent_update";
inline constexpr char kLinearChunkedDeltaRule[] = "linear_attn.chunked_delta_rule";
inline constexpr char kLinearNormGate[] = "linear_attn.norm_gate";
inline constexpr char kLinearOutProj[] = "linear_attn.out_proj";

// FFN: dense layers, shared experts, the router and routed experts, and
// the collectives around them.
inline constexpr char kDpAllGather[] = "dp.all_gather";
inline constexpr char kDenseGateUpProj[] = "dense.gate_up_proj";
inline constexpr char kDenseSiluAndMul[] = "dense.silu_and_mul";
inline constexpr char kDenseDownProj[] = "dense.down_proj";
inline constexpr char kSharedGateUpProj[] = "moe.shared.gate_up_proj";
inline constexpr char kSharedSiluAndMul[] = "moe.shared.silu_and_mul";
inline constexpr char kSharedDownProj[] = "moe.shared.down_proj";
inline constexpr char kMoeGate[] = "moe.gate";
inline constexpr char kMoeDispatch[] = "moe.dispatch";
inline constexpr char kMoeExperts[] = "moe.experts";
inline constexpr char kMoeCombine[] = "moe.combine";
inline constexpr char kDpReduceScatter[] = "dp.reduce_scatter";
inline constexpr char kDenseAllReduce[] = "dense.all_reduce";
inline constexpr char kFfnAllReduce[] = "ffn.all_reduce";

// Epilogue.
inline constexpr char kNormFinal[] = "norm.final";
inline constexpr char kLmHead[] = "lm_head";
inline constexpr char kLogitsAllGather[] = "logits.all_gather";
inline constexpr char kSampling[] = "sampling";

}  // namespace capplan::models::op_ids

#endif  // CAPPLAN_MODELS_OP_IDS_H_
