// The operator list of one forward step on one GPU: what the simulator prices
// and the engine runs. Every op carries its FLOPs and HBM bytes so a cost
// model needs nothing else.
#ifndef CAPPLAN_MODELS_OPS_H_
#define CAPPLAN_MODELS_OPS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/all_to_all.h"
#include "models/card.h"
#include "models/kernel_choice.h"
#include "models/memory.h"
#include "models/types.h"

namespace capplan::models {

enum class OpKind {
  kGemm,              // dense GEMM: m tokens x (n x k) weights
  kGroupedGemm,       // MoE experts: `groups` experts touched, m token-rows in all
  kRouter,            // MoE gate GEMM + top-k
  kAttentionDecode,   // GQA/MHA decode over the paged cache
  kAttentionPrefill,  // GQA/MHA prefill chunk (causal, attends to its cached prefix)
  kMlaDecode,         // MLA absorbed-form decode (latent + rope)
  kMlaPrefill,        // MLA prefill (expanded K/V, MHA)
  kMlaPrefillAbsorbed,  // MLA prefill in the absorbed form (latent K/V, MQA), see ops_attention.cc
  kDsaIndexer,        // DSA indexer: scores every cached token, selects top-k
  kKvAppend,          // write new tokens' K/V (quantize when FP8)
  kKvVerify,          // page-integrity verification batch (added by the simulator)
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,          // EP dispatch/combine
  kElementwise,       // RMSNorm, SiLU-and-mul, RoPE, residual adds
  kEmbedding,         // token embedding gather
  kSampling,          // logits -> tokens
};
const char* OpKindName(OpKind k);
// All-reduce, all-gather, reduce-scatter and all-to-all: priced by the
// profile's collective tables, not by an efficiency class.
bool IsCollective(OpKind k);

// What a user sees in "share of step time per op class".
enum class OpClass { kAttention, kDenseGemm, kMoe, kCommunication, kElementwise, kOverhead };
const char* OpClassName(OpClass c);  // "attention", "dense_gemm", "moe", ...

struct Op {
  OpKind kind = OpKind::kGemm;
  OpClass op_class = OpClass::kDenseGemm;
  std::string name;      // e.g. "attn.q_a_proj", "moe.experts"
  // The kernel implementation the engine runs for it (models/kernel_choice.h;
  // points into the ShardedModel's choices), "" when the engine names none.
  std::string_view impl;
  int64_t count = 1;     // identical invocations in the step (usually layers)
  // Per invocation:
  double flops = 0;      // 2*m*n*k for a GEMM
  double bytes = 0;      // HBM bytes read + written (weights incl. scales, activations, KV)
  Dtype weight_dtype = Dtype::kBf16;   // GEMMs: stored weight format
  Dtype compute_dtype = Dtype::kBf16;  // tensor-core rate used (W4A16 -> bf16)
  int group_size = 0;                  // INT4 group size (dequant cost)
  int64_t m = 0, n = 0, k = 0;         // GEMM shape
  int64_t groups = 0;                  // grouped GEMM: experts touched on this GPU
  // Attention:
  int64_t batch = 0;        // sequences
  int64_t q_tokens = 0;     // query tokens in all sequences
  int64_t kv_tokens = 0;    // cached tokens read in all sequences
  int heads = 0, kv_heads = 0, head_dim = 0;
  Dtype kv_dtype = Dtype::kBf16;
  // Collectives (per GPU):
  int participants = 0;
  double message_bytes = 0;
  AllToAllTraffic a2a;  // EP dispatch/combine by fabric (models/expert_parallel.h)
  // A speculative draft model's op (priced like any other, reported apart).
  bool draft = false;
};

// One scheduler iteration's batch as the model sees it on one attention rank.
struct BatchShape {
  struct Chunk {
    int64_t new_tokens = 0;     // prompt tokens computed this step
    int64_t cached_tokens = 0;  // tokens already in the cache before them
  };
  std::vector<Chunk> prefill;
  std::vector<int64_t> decode_context;  // each decode request's context incl. the new token
  // Query tokens per decode request: 1, or k + 1 when a speculative step
  // verifies k draft tokens (one pass over the weights and the cached KV
  // scores all k + 1 positions; every position needs logits).
  int64_t decode_query_tokens = 1;
  int64_t DecodeTokens() const {
    return static_cast<int64_t>(decode_context.size()) * decode_query_tokens;
  }
  int64_t TotalTokens() const;
};

struct LayerProgram;  // models/layer_program.h

// Bytes one element of a linear-attention layer's per-sequence state takes
// as the engine keeps it: the recurrent (SSM) state and the conv state.
// The engine profile says which (memory.hybrid_pools ssm_state_dtype and
// conv_state_dtype, read by LinearStateFormatOf in models/hybrid_pools.h);
// these defaults are SGLang's (fp32 recurrent state, 16-bit conv state).
struct LinearStateFormat {
  int64_t ssm_bytes = 4;
  int64_t conv_bytes = 2;
};

// A card prepared for one deployment: formats resolved, layout validated.
struct ShardedModel {
  ModelCard card;
  ParallelLayout layout;
  PrecisionChoice choice;
  std::map<Component, WeightFormat> formats;
  KvLayout kv;
  WeightBreakdown weights;
  // The engine's kernel implementations (empty: every op keeps its class).
  // Attached after sharding (they depend on the GPU), so ops resolve their
  // implementation when the program is instantiated.
  KernelChoices kernels;
  // The engine runs every MLA prefill in the absorbed form (the reference
  // engine does), not only batches with a cached prefix.
  bool mla_prefill_always_absorbed = false;
  // Otherwise, when the engine names an absorbed MLA prefill kernel, the
  // prefill batches it runs absorbed (the engine profile's rule).
  MlaAbsorbedPrefix mla_absorbed_prefix;
  // How the engine stores linear-attention state (read when the program is
  // instantiated, like the kernels).
  LinearStateFormat linear_state;
  // The layer program of this deployment, built once by ShardModel; a
  // ShardedModel changed afterwards in card, layout or formats must be
  // sharded again.
  std::shared_ptr<const LayerProgram> program;
};
Result<ShardedModel> ShardModel(const ModelCard& card, const ParallelLayout& layout,
                                const PrecisionChoice& choice);

// Appends the ops of one forward step on one GPU to *out (cleared first).
// With DP attention, `batch` is one attention rank's batch; dense and MoE
// layers after attention see the tokens of all `dp` ranks (balanced); the
// layout's expert parallelism is applied (ApplyExpertParallel), so every
// caller prices the busiest rank's MoE and its DeepEP exchange alike.
void BuildStepOps(const ShardedModel& model, const BatchShape& batch, std::vector<Op>* out);

// Expected distinct experts touched when `tokens` tokens each pick `k` of `n`
// experts uniformly: n * (1 - (1 - k/n)^tokens).
double ExpectedUniqueExperts(double tokens, int k, int n);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_OPS_H_
