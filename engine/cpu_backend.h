// The CPU backend: the model slice computed row by row from the Kernels
// libraries' CPU references (kernels/gemm GemmCpu, kernels/moe MoeForwardCpu,
// kernels/formats roundings) plus the attention over the paged cache, which
// lives here because it is the part that reads through the page tables.
//
// Every computation is per token row with a fixed summation order, so a
// request's outputs are bit-identical whatever else shares its batch, however
// its prompt was chunked, and wherever its pages sit. The integrity tests rely
// on that: an unaffected request must match the fault-free run exactly.
#ifndef CAPPLAN_ENGINE_CPU_BACKEND_H_
#define CAPPLAN_ENGINE_CPU_BACKEND_H_

#include <memory>
#include <vector>

#include "engine/backend.h"
#include "engine/slice_config.h"
#include "kernels/gemm/gemm_weights.h"
#include "kernels/moe/moe_cpu.h"

namespace capplan::engine {

struct SliceLayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  // GQA: wq [q_heads*hd, H], wk/wv [kv_heads*hd, H]; MLA: wq (or wq_a/wq_b
  // with a q LoRA), wkv_a [lora+rope, H]; both: wo [H, q_heads*v].
  kernels::GemmWeights wq, wk, wv, wo, wq_a, wq_b, wkv_a;
  std::vector<float> q_a_norm, kv_a_norm;
  // MLA absorbed up-projections (BF16 values): w_uk [heads][nope][lora],
  // w_uv [heads][lora][v].
  std::vector<float> w_uk, w_uv;
  // DSA indexer: queries [ih*id, H], key [id, H], head weights [ih, H].
  kernels::GemmWeights wi_q, wi_k, wi_w;
  bool moe = false;
  kernels::MoeExpertWeights dense;  // dense FFN layer
  kernels::MoeWeights experts;      // MoE layer (routed + shared)
  kernels::RouterConfig router;
};

struct SliceWeights {
  std::vector<float> embedding;  // [vocab, H], BF16 values
  std::vector<SliceLayerWeights> layers;
  std::vector<float> final_norm;
  kernels::GemmWeights lm_head;  // [vocab, H]
};

// Deterministic synthetic weights at the slice's shapes, drawn from
// config.seed and quantized to the slice's formats.
Result<SliceWeights> MakeSliceWeights(const SliceConfig& config);

class CpuBackend final : public EngineBackend {
 public:
  // Refuses shapes whose float weights would not fit comfortably in host
  // memory (full-dim MoE slices): those are for the CUDA backend.
  static Result<std::unique_ptr<CpuBackend>> Create(const SliceConfig& config, int32_t num_pages,
                                                    int32_t page_size);

  std::string name() const override { return "cpu"; }
  Status Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                 std::vector<int32_t>* next_tokens) override;
  const std::vector<std::vector<float>>& last_logits() const override { return logits_; }
  void set_probe(LayerProbe probe) override { probe_ = std::move(probe); }
  OpClassTimes last_op_times() const override { return op_times_; }
  const SliceConfig& config() const { return config_; }

 private:
  CpuBackend(SliceConfig config, SliceWeights weights, int32_t num_pages, int32_t page_size);
  struct Row {
    size_t req;        // index into the batch
    int64_t position;  // absolute position of this token
  };
  Status Attention(int layer, const std::vector<StepRequest>& batch, const std::vector<Row>& rows,
                   const std::vector<float>& h, PageTags* tags, std::vector<float>* out);
  Status GqaAttention(int layer, const std::vector<StepRequest>& batch,
                      const std::vector<Row>& rows, const std::vector<float>& h, PageTags* tags,
                      std::vector<float>* attn);
  Status MlaAttention(int layer, const std::vector<StepRequest>& batch,
                      const std::vector<Row>& rows, const std::vector<float>& h, PageTags* tags,
                      std::vector<float>* attn);
  float* Slot(int layer, const PageRef& page, int64_t position);
  const float* Entry(int layer, const std::vector<PageRef>& pages, int64_t position) const;

  SliceConfig config_;
  SliceWeights w_;
  int32_t num_pages_;
  int32_t page_size_;
  int width_;
  std::vector<std::vector<float>> cache_;  // per layer [pages][page_size][width]
  std::vector<std::vector<float>> logits_;
  LayerProbe probe_;
  // Host-clock split of the last Forward. The CPU references fuse some
  // work the simulator splits: the attention block's projections count as
  // attention here.
  HostOpMarks marks_;
  OpClassTimes op_times_;
  // The DSA selection of the step's last fresh indexer layer, per row
  // (IndexShare layers reuse it).
  std::vector<std::vector<int64_t>> shared_sel_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_CPU_BACKEND_H_
