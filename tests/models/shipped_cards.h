// Weights and memory plans of shipped model cards, named as a deployment
// names them.
#ifndef CAPPLAN_TESTS_MODELS_SHIPPED_CARDS_H_
#define CAPPLAN_TESTS_MODELS_SHIPPED_CARDS_H_

#include <string>

#include "models/card.h"
#include "models/memory.h"

namespace capplan::models::test_cards {

// `weights` as a deployment names it ("default": the checkpoint as shipped).
inline Result<WeightBreakdown> CardWeights(const std::string& card_name,
                                           const ParallelLayout& layout,
                                           const std::string& weights = "default") {
  CAPPLAN_ASSIGN_OR_RETURN(const ModelCard card, LoadModelCard(card_name));
  PrecisionChoice c;
  c.weights = weights;
  return ComputeWeights(card, layout, c);
}

// The memory plan of `card_name` with its shipped weights.
inline Result<MemoryPlan> CardMemoryPlan(const std::string& card_name, const ParallelLayout& layout,
                                         const EngineMemoryOptions& engine,
                                         const DeviceMemory& device, int64_t context_tokens) {
  CAPPLAN_ASSIGN_OR_RETURN(const ModelCard card, LoadModelCard(card_name));
  return PlanMemory(card, layout, PrecisionChoice{}, engine, device, context_tokens);
}

}  // namespace capplan::models::test_cards

#endif  // CAPPLAN_TESTS_MODELS_SHIPPED_CARDS_H_
