// Whole-model figures of a card (hf_import.h CardSummary).
#include "models/hf_import.h"
#include "models/memory.h"

namespace capplan::models {

Result<CardSummary> SummarizeCard(const ModelCard& card) {
  CardSummary s;
  const ParallelLayout one;  // one GPU holds everything
  CAPPLAN_ASSIGN_OR_RETURN(const WeightBreakdown w, ComputeWeights(card, one, PrecisionChoice{}));
  s.params_total = w.params_total;
  s.params_active = w.params_total;
  for (const ComponentWeights& c : w.components) {
    s.component_bytes.emplace_back(ComponentName(c.component), c.bytes_per_gpu + c.scale_bytes_per_gpu);
    s.weight_bytes += c.bytes_per_gpu + c.scale_bytes_per_gpu;
    if (c.component == Component::kExperts && card.n_routed_experts > 0) {
      s.params_active -= c.params_total -
                         c.params_total / card.n_routed_experts * card.experts_per_token;
    }
  }
  if (card.mtp_layers > 0) {
    CAPPLAN_ASSIGN_OR_RETURN(const ModelCard mtp, DraftCard(card, DraftKind::kMtp, 0));
    CAPPLAN_ASSIGN_OR_RETURN(const WeightBreakdown dw, ComputeWeights(mtp, one, PrecisionChoice{}));
    for (const ComponentWeights& c : dw.components) {
      // The draft card keeps the target's embedding and LM head, shared.
      if (c.component != Component::kEmbeddings) {
        s.mtp_weight_bytes += c.bytes_per_gpu + c.scale_bytes_per_gpu;
      }
    }
  }
  for (Dtype kv : {Dtype::kBf16, Dtype::kFp8E4m3}) {
    CAPPLAN_ASSIGN_OR_RETURN(const KvLayout l, ComputeKvLayout(card, one, kv));
    s.kv_bytes_per_token.emplace_back(DtypeName(kv), l.bytes_per_token);
  }
  return s;
}

}  // namespace capplan::models
