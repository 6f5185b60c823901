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

namespace capplan::models {

// Storage / compute number formats. Bits per element and scale layouts are
// facts kept in models/dtypes.json, not literals in code.
enum class Dtype { kBf16, kFp16, kFp32, kFp8E4m3, kInt4 };

const char* DtypeName(Dtype d);  // "bf16", "fp16", "fp32", "fp8", "int4"
Result<Dtype> ParseDtype(const std::string& s);  // accepts "fp8_e4m3" for fp8

// How a weight tensor is stored in a checkpoint or a deployment.
struct WeightFormat {
  Dtype dtype = Dtype::kBf16;
  // FP8: block scales over `block_rows` x `block_cols` weights (128x128 for
  // DeepSeek-style checkpoints); 0 means one per-tensor scale.
  int block_rows = 0;
  int block_cols = 0;
  // INT4: one scale (and, when asymmetric, one zero point) per `group_size`
  // weights along K. 32 or 128.
  int group_size = 0;
  bool symmetric = true;
  Dtype scale_dtype = Dtype::kBf16;  // FP8 block scales are fp32
};

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

// Parallel layout of one model instance (replica).
struct ParallelLayout {
  int gpus = 1;  // GPUs in the instance
  int tp = 1;    // tensor parallel degree
  int ep = 1;    // expert parallel degree (experts sharded over ep ranks)
  bool dp_attention = false;  // SGLang --enable-dp-attention
  int dp = 1;  // attention data-parallel ranks when dp_attention (default tp)
  // Attention TP degree: tp / dp with DP attention, else tp.
  int AttentionTp() const { return dp_attention ? tp / dp : tp; }
  int AttentionRanks() const { return dp_attention ? dp : 1; }
};

// The formats weights may be re-quantized to (models/dtypes.json
// requantize_formats, card `quantize` lists), and the names a deployment's
// `weights` may take: "default" (the checkpoint as shipped) and those.
inline constexpr const char* kRequantizeFormats[] = {"bf16", "fp8", "int4"};
const std::vector<std::string>& WeightChoiceNames();

// What the deployment asks for. `weights` is "default" (the checkpoint as
// shipped), "bf16", "fp8" or "int4" for the card's quantizable set;
// `per_component` overrides single components ("experts" -> "int4").
struct PrecisionChoice {
  std::string weights = "default";
  std::map<Component, std::string> per_component;
  Dtype kv_cache = Dtype::kBf16;
};

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_TYPES_H_
