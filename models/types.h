// Vocabulary shared by models/, sim/, calibrate/ and engine/: number formats,
// model components, parallel layout and precision choices.
//
// This header is the contract between the model library and its users; keep
// it small and stable.
#ifndef CAPPLAN_MODELS_TYPES_H_
#define CAPPLAN_MODELS_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "hw/formats.h"

namespace capplan::models {

// Storage / compute number formats: a row of the format table
// (hw/formats.json, hw/formats.h), where every fact about a format lives.
using Dtype = hw::FormatId;

const char* DtypeName(Dtype d);  // the row's name: "bf16", "fp8", "nvfp4", ...
Result<Dtype> ParseDtype(const std::string& s);  // a row name or alias ("fp8_e4m3")
// The row a variant is `like` ("int4_g32" -> int4), or the row itself.
Dtype DtypeFamily(Dtype d);

// How a weight tensor is stored in a checkpoint or a deployment. A card
// states the scale layout per component; a re-quantization takes its row's
// (WeightFormatOf).
struct WeightFormat {
  Dtype dtype = Dtype::kBf16;
  // Block scales over `block_rows` x `block_cols` weights (FP8 128x128 for
  // DeepSeek-style checkpoints); 0 with no group either: one per-tensor
  // scale (or one per output channel when the row's scales are per channel).
  int block_rows = 0;
  int block_cols = 0;
  // One scale (and, when asymmetric, one zero point) per `group_size`
  // weights along K: INT4 32 or 128, NVFP4 16, MXFP4 32.
  int group_size = 0;
  bool symmetric = true;
  Dtype scale_dtype = Dtype::kBf16;  // FP8 block scales are fp32, NVFP4's e4m3
};
// The format's own scale layout, as a re-quantization writes it.
WeightFormat WeightFormatOf(Dtype d);

// Weight groups a deployment can quantize separately.
enum class Component {
  kAttention,      // q/kv projections incl. MLA low-rank, o_proj, DSA indexer
  kExperts,        // routed experts
  kSharedExperts,  // shared experts
  kDenseFfn,       // dense-layer FFNs (first_k_dense layers, or all of a dense model)
  kEmbeddings,     // input embedding and LM head
  kRouter,         // MoE gates (always BF16/FP32 in practice)
  kNorms,          // RMSNorm weights
};
const char* ComponentName(Component c);  // "attention", "experts", ...
Result<Component> ParseComponent(const std::string& s);
const std::vector<Component>& AllComponents();

// The largest TP and EP degree a layout may have: the one bound the scenario
// parser and ValidateLayout both apply, so no value passes one and fails the
// other.
inline constexpr int kMaxParallelDegree = 1024;

// How the nodes of one instance reach each other: over RDMA NICs (HGX
// boxes), or inside one NVLink domain that spans them (an NVL72 rack).
enum class NodeLink { kRdma, kNvlink };
// What carries MoE tokens between EP ranks: a plain all-to-all collective,
// or DeepEP's kernels (SGLang --moe-a2a-backend deepep, vLLM
// --all2all-backend deepep_*), priced by models/expert_parallel.h.
enum class MoeAllToAll { kCollective, kDeepEp };
// DeepEP's kernel family (SGLang --deepep-mode): kAuto takes low-latency
// for decode-only steps and normal for steps with prefill.
enum class DeepEpMode { kAuto, kLowLatency, kNormal };

// How experts are placed and loaded over the EP ranks.
struct ExpertPlacement {
  MoeAllToAll all_to_all = MoeAllToAll::kCollective;
  DeepEpMode deepep_mode = DeepEpMode::kAuto;
  // EPLB redundant experts over all EP ranks (SGLang
  // --ep-num-redundant-experts, vLLM num_redundant_experts): the ranks hold
  // routed + redundant physical experts, (E + R) / ep each.
  int redundant_experts = 0;
  // The busiest EP rank's token-rows over the mean (1: balanced routing).
  double hot_expert_factor = 1.0;
  // Measured routed tokens per logical expert (any scale): when given, the
  // hot-expert factor comes from it and the placement (EPLB with redundant
  // experts, else contiguous), models/expert_parallel.h.
  std::vector<double> expert_load;
};

// Parallel layout of one model instance (replica).
struct ParallelLayout {
  int gpus = 1;  // GPUs in the instance
  int tp = 1;    // tensor parallel degree
  int ep = 1;    // expert parallel degree (experts sharded over ep ranks)
  bool dp_attention = false;  // SGLang --enable-dp-attention
  int dp = 1;  // attention data-parallel ranks when dp_attention (default tp)
  // The machines: `nodes` of `gpus_per_node` GPUs each (0: all in one).
  int nodes = 1;
  int gpus_per_node = 0;
  NodeLink node_link = NodeLink::kRdma;  // between nodes, when nodes > 1
  ExpertPlacement expert;
  // The engine keeps the dense FFN layers on each DP rank, sharded over its
  // attention TP group, on the rank's own tokens (vLLM); else they run over
  // the whole TP group on every rank's gathered tokens (SGLang).
  bool dense_ffn_per_dp_rank = false;
  // The LM head on each DP rank's own rows, vocabulary-parallel over its
  // attention TP group (vLLM; SGLang --enable-dp-lm-head); else over the
  // whole TP group on every rank's rows, its logits all-gathered.
  bool lm_head_per_dp_rank = false;
  // Attention TP degree: tp / dp with DP attention, else tp.
  int AttentionTp() const { return dp_attention ? tp / dp : tp; }
  int AttentionRanks() const { return dp_attention ? dp : 1; }
  bool DenseFfnOnAttentionRanks() const { return dense_ffn_per_dp_rank && AttentionRanks() > 1; }
  // The TP degree the dense FFN layers are sharded over.
  int DenseFfnTp() const { return DenseFfnOnAttentionRanks() ? AttentionTp() : tp; }
  bool LmHeadOnAttentionRanks() const { return lm_head_per_dp_rank && AttentionRanks() > 1; }
  // The TP degree the LM head's vocabulary is split over (and its logits
  // all-gathered across), and the attention ranks whose rows each GPU's
  // LM head runs.
  int LmHeadTp() const { return LmHeadOnAttentionRanks() ? AttentionTp() : tp; }
  int LogitRanks() const { return LmHeadOnAttentionRanks() ? 1 : AttentionRanks(); }
  int GpusPerNode() const { return gpus_per_node > 0 ? gpus_per_node : gpus; }
  // GPUs of the instance one NVLink domain joins (ranks are numbered node by
  // node, so a group of consecutive ranks this size shares NVLink).
  int NvlinkGpus() const { return node_link == NodeLink::kNvlink ? gpus : GpusPerNode(); }
  // Physical expert slots on the fullest EP rank: ceil((E + R) / ep), where
  // an engine that splits unevenly gives the first ranks one more.
  int ExpertSlotsPerRank(int routed_experts) const {
    const int e = ep > 0 ? ep : 1;
    return (routed_experts + expert.redundant_experts + e - 1) / e;
  }
};

// The names a deployment's `weights` may take: "default" (the checkpoint as
// shipped) and the formats weights may be re-quantized to (hw/formats.json
// weight_choices; the keys of a card's `quantize`). Empty past "default" when
// the format table does not load.
const std::vector<std::string>& WeightChoiceNames();

// What the deployment asks for. `weights` is "default" (the checkpoint as
// shipped) or a weight choice ("fp8", "int4", "nvfp4", ...) for the card's
// quantizable set;
// `per_component` overrides single components ("experts" -> "int4").
struct PrecisionChoice {
  std::string weights = "default";
  std::map<Component, std::string> per_component;
  Dtype kv_cache = Dtype::kBf16;
};

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_TYPES_H_
