// The per-layer structure of a model card beyond its uniform dimensions:
// linear-attention layers of a hybrid model, the attention output gate,
// interleaved MoE layers, what window-limited layers see.
#ifndef CAPPLAN_MODELS_CARD_LAYERS_H_
#define CAPPLAN_MODELS_CARD_LAYERS_H_

#include "common/json_util.h"
#include "common/status.h"
#include "models/card.h"

namespace capplan::models {

// Reads the card keys "linear_attention", "attention_output_gate",
// "moe_layer_step", "shared_expert_gate", "score_correction_bias" and
// "local_attention" from `o` into *c (all optional; scoring_func read
// first); one-line errors name the key.
Status ParseLayerStructure(JsonObject& o, ModelCard* c);

// Cross-field checks of the same fields, once the whole card is read.
Status CheckLayerStructure(const JsonObject& o, const ModelCard& c);

}  // namespace capplan::models

#endif  // CAPPLAN_MODELS_CARD_LAYERS_H_
