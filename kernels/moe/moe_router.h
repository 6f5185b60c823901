// MoE router: scores every expert for every token and keeps the top-k, with
// the scoring and scaling a model card names (models/card.h: scoring_func,
// experts_per_token, routed_scaling_factor).
//
//   softmax (Qwen3, Mixtral): p = softmax(logits); pick top-k of p;
//       renormalize over the k picks if configured (Qwen3 norm_topk_prob).
//   sigmoid (DeepSeek-V3, Kimi K2.x, GLM-5.x "noaux_tc"): s = sigmoid(logits);
//       choose with s + correction_bias (the aux-loss-free balancing bias),
//       optionally group-limited (n_group groups, keep topk_group best groups
//       scored by the sum of their 2 best biased scores); the weights are the
//       unbiased s of the picks, renormalized (norm_topk_prob), then times
//       routed_scaling_factor.
// Sources: the model configs (scoring, n_group, routed_scaling_factor 2.5 /
// 2.827): DeepSeek-V3 config.json (deepseek-ai/DeepSeek-V3
// inference/configs/config_671B.json), Kimi K2 (NVIDIA Megatron-Bridge
// KimiK2Provider), GLM-5 (huggingface/transformers
// src/transformers/models/glm_moe_dsa/configuration_glm_moe_dsa.py); the gating formula
// is the DeepSeek-V3 reference inference code (MoEGate), re-derived here.
// Ties pick the lower expert index, so routing is deterministic.
//
// Cost: T*E logits read and T*k ids/weights written; FLOPs ~ T*E*(exp or
// sigmoid) + selection, negligible beside the expert GEMMs.
#ifndef CAPPLAN_KERNELS_MOE_MOE_ROUTER_H_
#define CAPPLAN_KERNELS_MOE_MOE_ROUTER_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

enum class MoeScoring { kSoftmax, kSigmoid };

struct RouterConfig {
  int num_experts = 0;
  int top_k = 0;
  MoeScoring scoring = MoeScoring::kSoftmax;
  bool renormalize = true;             // norm_topk_prob
  double routed_scaling_factor = 1.0;  // applied after renormalization
  int n_group = 1;                     // group-limited routing (1 = off)
  int topk_group = 1;
  std::vector<float> correction_bias;  // empty or num_experts (sigmoid only)
};

// Parses "softmax" | "sigmoid" (the card's scoring_func); Usage otherwise.
Result<MoeScoring> ParseMoeScoring(const std::string& name);
Status ValidateRouterConfig(const RouterConfig& c);

// logits [tokens, num_experts] -> ids [tokens, top_k] (descending by the
// selection score) and weights [tokens, top_k].
Status RouteCpu(const RouterConfig& c, const float* logits, int tokens, int* topk_ids,
                float* topk_weights);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_MOE_MOE_ROUTER_H_
