// The layer program: what one GPU of a deployment runs in a forward step,
// written once. For a ShardedModel (card + TP/EP/DP layout + weight and KV
// formats) it lists, in execution order, the ops of the prologue (embedding),
// of every layer, and of the epilogue (final norm, LM head, sampling), each
// with a stable id and its per-rank shapes that do not depend on the batch.
//
// Three walkers read it: the step pricer instantiates it with a batch
// (InstantiateProgram: m = tokens, attention sequences, message bytes,
// FLOPs and bytes), and the CPU and CUDA engine backends execute it op by
// op, dispatching on OpKind/id, so what the simulator prices is what the
// engine times.
//
// Layers: the layer ops are the union of every layer kind's ops in execution
// order; `LayerGroup`s name the kinds (dense or MoE FFN, DSA layers that
// compute a fresh indexer top-k or reuse one under IndexShare, the token
// mixer of a hybrid model: full, window-limited or linear attention), each
// with its layer indices and the subsequence of layer ops its layers run. A
// new per-layer kind (interleaved dense/MoE layers, say) is a new group key,
// not a new walker. Group names: "dense" | "moe", then ".index_fresh" |
// ".index_shared" (DSA), then, for a card whose layers are not all full
// attention (ModelCard::MixerOf), ".full_attention", ".linear_attention",
// ".sliding_window" or ".chunked_local".
//
// Phases: the program holds every form an op can take -- decode and prefill
// attention, MLA prefill expanded (kv_b_proj expands the cached latents, MHA)
// and absorbed (W_UK/W_UV fold into the queries and outputs, MQA over the
// latents) -- each marked with `phase` and `mla_form`. Instantiation picks
// per batch: decode ops when the batch has decode rows, prefill ops when it
// has prefill chunks, and the MLA prefill form by AbsorbedMlaPrefill
// (ops_internal.h: the engine names an absorbed kernel and a chunk has a
// cached prefix, or the engine always runs absorbed). An engine backend runs
// the same choice for the same batch.
//
// Op ids (stable; walkers key on them; spelt once as constants in op_ids.h):
//   prologue: embed_tokens, embed.all_reduce
//   attention GEMMs, in the card's tensor order (weight_tensors.h):
//     MLA: attn.q_a_proj, attn.q_b_proj | attn.q_proj, attn.kv_a_proj_with_mqa,
//          attn.kv_b_proj.absorbed, attn.kv_b_proj.expand,
//          attn.indexer.wq_b, attn.indexer.wk, attn.indexer.weights_proj (DSA)
//     GQA: attn.q_proj, attn.k_proj, attn.v_proj
//   linear attention (Gated DeltaNet layers of a hybrid, linear_attn.*):
//     linear_attn.in_proj_qkvz, linear_attn.in_proj_ba, linear_attn.conv1d,
//     linear_attn.recurrent_update (decode: one state update per token) |
//     linear_attn.chunked_delta_rule (prefill: the chunked scan),
//     linear_attn.norm_gate, linear_attn.out_proj
//   layer: norm.input, <linear attention>, <attention GEMMs>,
//     attn.norm_rope (MLA) | attn.rope (GQA),
//     attn.kv_append, attn.indexer (DSA), attn.mla_decode | attn.decode,
//     attn.mla_prefill (both MLA forms) | attn.prefill,
//     attn.decode.window, attn.prefill.window (window-limited layers), attn.o_proj,
//     attn.all_reduce, dp.all_gather, norm.post_attention,
//     dense.gate_up_proj, dense.silu_and_mul, dense.down_proj,
//     moe.shared.gate_up_proj, moe.shared.silu_and_mul, moe.shared.down_proj,
//     moe.gate, moe.dispatch, moe.experts, moe.combine,
//     dp.reduce_scatter | ffn.all_reduce, norm.residual
//   epilogue: norm.final, lm_head, logits.all_gather, sampling
// Collectives appear only where the layout has more than one participant.
#ifndef CAPPLAN_MODELS_LAYER_PROGRAM_H_
#define CAPPLAN_MODELS_LAYER_PROGRAM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "models/kernel_choice.h"
#include "models/op_ids.h"
#include "models/ops.h"
#include "models/types.h"

namespace capplan::models {

enum class ProgramSection { kPrologue, kLayer, kEpilogue };

// The token rows an op's m (GEMMs), elements (elementwise) or message
// (collectives) scale with when the program is instantiated with a batch.
enum class RowSource {
  kNone,             // attention kernels: shaped by the batch's sequences
  kAttnTokens,       // this attention rank's new tokens
  kFfnTokens,        // new tokens of every attention rank (x dp, balanced)
  kFfnTokensPerTp,   // kFfnTokens / tp, at least 1: an EP rank's own tokens
  kLogitRows,        // rows needing logits: decode rows + one per prefill chunk
                     // (x dp, unless the LM head runs on each DP rank)
  kAbsorbedMlaRows,  // decode rows, plus the prefill tokens when the prefill runs absorbed
  kPrefillKvTokens,  // cached + new tokens of the prefill chunks (kv_b expansion)
};

// Which batches run an op.
enum class OpPhase { kAlways, kDecode, kPrefill };
// The MLA prefill form an op belongs to (kAny: both or not MLA).
enum class MlaForm { kAny, kExpanded, kAbsorbed };

// The layer kinds an op runs in (a layer runs an op when it matches every
// condition).
struct LayerFilter {
  enum class Ffn { kAny, kDense, kMoe } ffn = Ffn::kAny;
  bool index_fresh_only = false;  // DSA: layers computing a fresh top-k
  // The token mixer (ModelCard::MixerOf): kSoftmax is full or window-limited
  // attention (projections, RoPE, KV append, o_proj), kFull and kWindow
  // their attention kernels, kLinear the linear-attention ops.
  enum class Mixer { kAny, kSoftmax, kFull, kWindow, kLinear } mixer = Mixer::kAny;
};

// The linear-attention ops whose cost is not per row: the causal conv and
// the delta-rule scan read and write each sequence's state
// (ops_linear_attention.cc prices them).
enum class LinearStateOp { kNone, kConv, kRecurrentUpdate, kChunkedScan };

// One rank's shapes of a Gated DeltaNet layer: key and value heads (split
// over attention TP), their widths, the conv channels and taps.
struct LinearShape {
  int64_t key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0;
  int64_t conv_dim = 0, conv_kernel = 0;
};

struct ProgramOp {
  std::string id;  // stable, e.g. "attn.q_a_proj", "moe.experts"
  // The weight tensors the op reads, by their names in ListWeightTensors
  // (weight_tensors.h): a GEMM's matrix first, then a norm it applies to its
  // output (q_a_proj: the q latent's); a norm op its vector; the delta rule
  // its decay parameters; a tied LM head its embed_tokens. Empty for ops
  // without weights. Biases, sinks, q/k norms and the DSA key norm are not
  // named: no engine backend runs them. The reference engine allocates its
  // weights from these, keyed by (layer, op id).
  std::vector<std::string_view> tensors;
  OpKind kind = OpKind::kGemm;
  OpClass op_class = OpClass::kDenseGemm;
  ProgramSection section = ProgramSection::kLayer;
  OpPhase phase = OpPhase::kAlways;
  MlaForm mla_form = MlaForm::kAny;
  LayerFilter filter;
  RowSource rows = RowSource::kNone;
  int64_t layers = 1;  // layers of the step that run it (1 outside kLayer)

  // GEMMs (kGemm, kRouter, kGroupedGemm): local n (fused copies included:
  // gate+up is one 2f-wide GEMM) x k, the stored format, and the weight
  // bytes (values + scales) of one invocation -- of one expert for kGroupedGemm.
  int64_t n = 0, k = 0;
  int copies = 1;
  WeightFormat format;
  Dtype weight_dtype = Dtype::kBf16;
  Dtype compute_dtype = Dtype::kBf16;  // tensor-core rate (W4A16 -> bf16)
  int group_size = 0;                  // INT4 group (dequant cost), else 0
  double weight_bytes = 0;

  // MoE experts: summed output width of gate, up and down per expert over h
  // (the grouped GEMM's n), routed experts in the model and per EP rank,
  // experts per token, EP degree.
  double expert_width = 0;
  int experts = 0, experts_per_rank = 0, top_k = 0, ep = 1;

  // Attention: per-rank query heads, KV heads, head dim as the kernel sees
  // it (MLA absorbed: lora + rope with one latent "head"; expanded: qk),
  // MLA latent/rope/nope/v widths, the KV format, and this rank's cache
  // bytes per token per layer (main pool; DSA index keys apart).
  int heads = 0, kv_heads = 0, head_dim = 0;
  int kv_lora_rank = 0, rope_dim = 0, nope_dim = 0, v_head_dim = 0;
  int64_t index_topk = 0;  // DSA: keys each query attends to (0: all)
  Dtype kv_dtype = Dtype::kBf16;
  double kv_bytes_per_token = 0;
  double index_bytes_per_token = 0;
  // Window-limited attention kernels: a query sees the last `window` tokens,
  // or with window_chunked the tokens of its own `window`-token chunk;
  // 0: the whole context.
  int64_t window = 0;
  bool window_chunked = false;

  // Linear-attention state ops (kNone for every other op).
  LinearStateOp state_op = LinearStateOp::kNone;
  LinearShape linear;

  // Elementwise (and embedding, KV append, sampling): per row of `rows`,
  // elements read and written (x activation bytes) or bytes, and FLOPs.
  double in_per_row = 0, out_per_row = 0, bytes_per_row = 0, flops_per_row = 0;

  // Collectives: participants and message bytes per row of `rows` (the
  // all-to-all sends (ep - 1) / ep of it).
  int participants = 0;
  double message_bytes_per_row = 0;

  // The format that selects the engine's kernel (weights for GEMMs, KV for
  // attention); KernelImpl resolves the implementation name.
  Dtype kernel_format = Dtype::kBf16;
};

struct LayerGroup {
  std::string name;          // "dense", "moe", "moe.index_fresh", ...
  // The kind the name spells, for walkers that ask a layer's kind.
  bool moe = false;          // an MoE FFN (else dense)
  bool index_fresh = false;  // DSA: computes its own top-k (and holds the indexer)
  LayerMixer mixer = LayerMixer::kFull;
  std::vector<int> layers;   // layer indices, ascending
  std::vector<int> ops;      // indices into LayerProgram::layer_ops, in order
};

struct LayerProgram {
  int num_layers = 0;
  int64_t hidden = 0;
  int64_t act_bytes = 2;  // activations move as BF16 between kernels
  std::vector<ProgramOp> prologue;
  std::vector<ProgramOp> layer_ops;  // every layer kind's ops, execution order
  std::vector<LayerGroup> groups;    // partition of [0, num_layers)
  std::vector<ProgramOp> epilogue;
  // The group layer `layer` belongs to (nullptr outside [0, num_layers)).
  const LayerGroup* GroupOf(int layer) const;
};

// The program of one GPU of `model`'s deployment. ShardModel builds it once
// and keeps it in ShardedModel::program.
Result<LayerProgram> BuildLayerProgram(const ShardedModel& model);

// The kernel implementation `kernels` (an engine profile's choices) names for
// an op; "" when none. MoE experts under EP use the moe_ep choice.
std::string_view KernelImpl(const KernelChoices& kernels, const ProgramOp& op);

// Whether `op` runs in a step of `batch` (its phase has rows, its MLA form is
// the batch's, a kv_b form has rows to map): the rule InstantiateProgram
// applies, for the engine backends that walk the program.
bool OpRunsFor(const ShardedModel& model, const LayerProgram& program, const ProgramOp& op,
               const BatchShape& batch);

// Appends the ops of one forward step of `program` with `batch` to *out
// (cleared first): what BuildStepOps returns.
void InstantiateProgram(const ShardedModel& model, const LayerProgram& program,
                        const BatchShape& batch, std::vector<Op>* out);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_LAYER_PROGRAM_H_
