// Attention shapes for the measurement sweep, read from the shipped model
// cards (models/cards/*.json) at a tensor-parallel degree: query heads per
// rank = num_heads / tp; KV heads per rank = num_kv_heads / tp, at least 1
// (replicated when there are fewer KV heads than ranks); MLA: one latent
// "head" of kv_lora_rank + qk_rope_head_dim, V = the latent, softmax scale
// 1/sqrt(qk_nope_head_dim + qk_rope_head_dim); DSA cards add index_topk.
#ifndef CAPPLAN_KERNELS_ATTENTION_ATTENTION_SWEEP_H_
#define CAPPLAN_KERNELS_ATTENTION_ATTENTION_SWEEP_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace capplan::kernels {

struct AttnHeadShape {
  std::string cards;  // card names this shape comes from, comma separated
  bool mla = false;
  int q_heads = 0;   // per rank
  int kv_heads = 0;  // per rank
  int k_dim = 0;
  int v_dim = 0;  // output width (MLA: latent)
  int topk = 0;   // DSA index_topk, 0 otherwise
  float sm_scale = 0;
};

// Distinct shapes over every card in `dir`, GQA/MHA first. Cards without the
// attention fields are skipped; a card that does not parse is an error.
Result<std::vector<AttnHeadShape>> LoadAttentionShapesFromCards(const std::string& dir, int tp);

}  // namespace capplan::kernels

#endif  // CAPPLAN_KERNELS_ATTENTION_ATTENTION_SWEEP_H_
