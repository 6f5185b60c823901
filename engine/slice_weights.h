// The model slice's synthetic weights, allocated by walking its layer
// program: every op that names weight tensors (ProgramOp::tensors) gets its
// weights at the op's per-rank shape, keyed by (layer, op id). Both backends
// read an op's weights through that key, and the program's layer groups
// say which ops (so which weights) a layer has, so no walker re-derives
// which layers are MoE, linear or hold a DSA indexer.
#ifndef CAPPLAN_ENGINE_SLICE_WEIGHTS_H_
#define CAPPLAN_ENGINE_SLICE_WEIGHTS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "engine/slice_config.h"
#include "kernels/gemm/gemm_weights.h"
#include "kernels/moe/moe_cpu.h"
#include "models/layer_program.h"

namespace capplan::engine {

// The weights of one op (the fields its kind uses; the rest stay empty).
struct OpWeights {
  kernels::GemmWeights gemm;  // a projection's matrix, quantized to the op's format
  // A norm op's vector, or the norm a projection applies to its output (the
  // q latent's with q_a_proj) or an elementwise op applies (MLA's kv latent
  // in norm_rope, the gated norm of a linear layer); BF16 values.
  std::vector<float> norm;
  std::vector<float> embedding;  // embed_tokens [vocab, H], BF16 values
  // MLA absorbed kv_b (BF16 values): w_uk [heads][nope][lora], w_uv [heads][lora][v].
  std::vector<float> w_uk, w_uv;
  // Gated DeltaNet: the depthwise conv [conv_dim][kernel]; per value head
  // A_log and dt_bias (both scan ops read them).
  std::vector<float> conv, a_log, dt_bias;
  // Dense and shared-expert MLPs (gate_up and down ops share them).
  std::vector<kernels::MoeExpertWeights> mlps;
  // The router: FP32 [experts, H] and its top-k configuration.
  std::vector<float> router;
  kernels::RouterConfig router_config;
  // Routed experts, each gate+up [2 inter, H] and down [H, inter] (the
  // router and the shared experts are their own ops').
  kernels::MoeWeights experts;
};

class SliceWeights {
 public:
  // The weights op `id` reads in `layer` (-1: prologue, the slice's layer
  // count: epilogue); nullptr when it has none there.
  const OpWeights* Find(int layer, std::string_view id) const;
  OpWeights* Find(int layer, std::string_view id);
  // Every (layer, op id) that holds weights, in key order.
  std::vector<std::pair<int, std::string>> Keys() const;
  // Ops that read the same tensors share one entry.
  void Set(int layer, std::string_view id, std::shared_ptr<OpWeights> w);
  // Drops the host copies of one layer's weights (the CUDA backend, once
  // they are on the device).
  void ReleaseLayer(int layer);

 private:
  std::map<int, std::map<std::string, std::shared_ptr<OpWeights>, std::less<>>> by_layer_;
};

// The GEMM kernel format the engine runs weights stored as `f` in.
kernels::GemmWeightFormat GemmFormatOf(const models::WeightFormat& f);

// Deterministic synthetic weights at the slice program's shapes, drawn from
// config.seed and quantized to its formats. Values are uniform in
// [-1, 1) / sqrt(fan_in); norm weights are 1 +- 0.1.
Result<SliceWeights> MakeSliceWeights(const SliceConfig& config);

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_SLICE_WEIGHTS_H_
