// `capplan engine numerics`: how the storage formats perturb the model
// slice's computation, on synthetic weights.
//
// Two comparisons, each a reference and a variant that differ in one format:
//   kv_fp8_vs_bf16       FP8 (e4m3, 1x128 scales) vs BF16 KV cache
//   weights_int4_vs_fp8  INT4 (group as the card) vs FP8 (128x128) weights
// Both run teacher-forced on the same token streams (the reference's own
// greedy continuation of synthetic prompts), so every position sees the same
// inputs; we report each layer's output relative error (Frobenius, over all
// positions) and the top-1 agreement of the final logits.
//
// These are synthetic-weight numerics: they say how the formats perturb the
// computation at these shapes, not how a real checkpoint scores on any
// benchmark. Every output says so.
#ifndef CAPPLAN_ENGINE_NUMERICS_H_
#define CAPPLAN_ENGINE_NUMERICS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "engine/slice_config.h"
#include "models/card.h"

namespace capplan::engine {

struct NumericsOptions {
  int tp = 8;
  int layers = 2;
  std::string dims = "small";
  int streams = 4;
  int prompt_tokens = 32;
  int generated_tokens = 48;
  uint64_t seed = 1;
};

struct FormatComparison {
  std::string name, reference, variant;
  std::vector<double> layer_rel_err;  // per layer of the slice
  double logits_rel_err = 0;
  int positions = 0;
  int top1_agree = 0;
  double Top1Agreement() const { return positions ? double(top1_agree) / positions : 0; }
};

struct NumericsReport {
  std::string model;
  nlohmann::json slice;
  std::vector<FormatComparison> comparisons;
  nlohmann::json ToJson() const;
  std::string ToText() const;
};

inline constexpr const char* kNumericsLabel =
    "synthetic-weight numerics: how the formats perturb this slice's computation on random "
    "weights; not benchmark accuracy of the real model";

Result<NumericsReport> RunNumerics(const models::ModelCard& card, const NumericsOptions& o);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_NUMERICS_H_
