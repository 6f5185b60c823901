// The CPU backend: the slice's layer program (models/layer_program.h)
// executed op by op, one function per op, from the Kernels libraries' CPU
// references (kernels/gemm GemmCpu, kernels/moe routing and expert MLPs,
// kernels/formats roundings) plus the attention over the paged cache, which
// lives here because it is the part that reads through the page tables.
//
// Every computation is per token row with a fixed summation order, so a
// request's outputs are bit-identical whatever else shares its batch, however
// its prompt was chunked, and wherever its pages sit. The integrity tests rely
// on that: an unaffected request must match the fault-free run exactly.
#ifndef CAPPLAN_ENGINE_CPU_BACKEND_H_
#define CAPPLAN_ENGINE_CPU_BACKEND_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/slice_config.h"
#include "engine/slice_weights.h"
#include "kernels/gemm/gemm_weights.h"
#include "kernels/moe/moe_cpu.h"
#include "models/layer_program.h"

namespace capplan::engine {

// One op the CPU backend executed in the last Forward: the program op's id,
// the layer (-1 prologue, `layers` epilogue), the shape it actually ran
// (GEMMs: the weights' n x k on m rows; attention: heads, KV heads, head
// dim, query rows) and its host time. Collectives run as nothing on one
// rank (a partial sum is the rank's output) but are visited.
struct CpuOpVisit {
  std::string id;
  int layer = -1;
  int64_t m = 0, n = 0, k = 0;
  int heads = 0, kv_heads = 0, head_dim = 0;
  double us = 0;
};

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
  StepOpTimes last_op_times() const override { return op_times_; }
  // The ops of the last Forward in execution order (per-op host times).
  const std::vector<CpuOpVisit>& last_visits() const { return visits_; }
  const SliceConfig& config() const { return config_; }

 private:
  CpuBackend(SliceConfig config, SliceWeights weights, int32_t num_pages, int32_t page_size);
  struct Row {
    size_t req;        // index into the batch
    int64_t position;  // absolute position of this token
    bool decode;       // a decode request's token (attention's decode form)
  };
  // One step's activations as the ops hand them on.
  struct Step {
    const std::vector<StepRequest>* batch = nullptr;
    PageTags* tags = nullptr;
    std::vector<int32_t>* next_tokens = nullptr;
    std::vector<Row> rows;
    models::BatchShape shape;  // the batch as the program's instantiation sees it
    std::vector<float> x, h, out;           // residual, normed input, block output
    std::vector<float> q, k, v, attn;       // GQA/MLA queries, K, V, attention output
    std::vector<float> q_gate;              // attention output gate (per query head)
    std::vector<float> cq, kv, q_lat;       // MLA q latent, kv latent + rope, absorbed q
    std::vector<float> iq, ik, iw;          // DSA indexer queries, keys, head weights
    std::vector<float> qkvz, ba, mixed;     // linear layers: projections, conv output
    std::vector<float> gate_up, act;        // dense FFN
    std::vector<std::vector<float>> shared;  // shared experts' outputs
    std::vector<int> expert_ids;            // MoE routing
    std::vector<float> expert_weights;
    std::vector<float> last, logits;        // rows that want a token, their logits
    std::vector<size_t> which;
    CpuOpVisit* visit = nullptr;            // the op being run records its shape here
  };
  using OpFn = Status (CpuBackend::*)(const models::ProgramOp& op, int layer, Step* s);
  // The function that runs an op: by id for the GEMMs and norms (each reads
  // and writes its own activations), by kind for the rest.
  Result<OpFn> OpFunction(const models::ProgramOp& op) const;
  Status RunOp(const models::ProgramOp& op, int layer, Step* s);
  Status StartStep(const std::vector<StepRequest>& batch, Step* s) const;

  // cpu_backend.cc: prologue, norms, epilogue, collectives.
  Status Embed(const models::ProgramOp& op, int layer, Step* s);
  Status Collective(const models::ProgramOp& op, int layer, Step* s);
  Status InputNorm(const models::ProgramOp& op, int layer, Step* s);
  Status PostAttentionNorm(const models::ProgramOp& op, int layer, Step* s);
  Status Residual(const models::ProgramOp& op, int layer, Step* s);
  Status FinalNorm(const models::ProgramOp& op, int layer, Step* s);
  Status LmHead(const models::ProgramOp& op, int layer, Step* s);
  Status Sample(const models::ProgramOp& op, int layer, Step* s);
  Status RunGemm(const kernels::GemmWeights& w, const std::vector<float>& in, int rows,
                 std::vector<float>* out, Step* s);
  // cpu_attention.cc
  Status Projection(const models::ProgramOp& op, int layer, Step* s);
  Status GatedQueries(const OpWeights& w, int n, Step* s);
  Status AbsorbQueries(const models::ProgramOp& op, int layer, Step* s);
  Status NormRope(const models::ProgramOp& op, int layer, Step* s);
  Status KvAppend(const models::ProgramOp& op, int layer, Step* s);
  Status Indexer(const models::ProgramOp& op, int layer, Step* s);
  Status GqaAttention(const models::ProgramOp& op, int layer, Step* s);
  Status MlaAttention(const models::ProgramOp& op, int layer, Step* s);
  void MlaHead(int layer, const Step& s, int i, int hq, const std::vector<int64_t>& sel,
               const std::vector<float>& w_uv, float* o) const;
  Status OutProjection(const models::ProgramOp& op, int layer, Step* s);
  // cpu_linear_attention.cc
  Status LinearProjection(const models::ProgramOp& op, int layer, Step* s);
  Status LinearConv(const models::ProgramOp& op, int layer, Step* s);
  Status DeltaRule(const models::ProgramOp& op, int layer, Step* s);
  Status LinearNormGate(const models::ProgramOp& op, int layer, Step* s);
  // cpu_ffn.cc
  Status FfnGateUp(const models::ProgramOp& op, int layer, Step* s);
  Status FfnActivation(const models::ProgramOp& op, int layer, Step* s);
  Status FfnDown(const models::ProgramOp& op, int layer, Step* s);
  Status Route(const models::ProgramOp& op, int layer, Step* s);
  Status Experts(const models::ProgramOp& op, int layer, Step* s);

  // The weights op `id` reads in `layer` (an Internal error when it has none).
  Result<const OpWeights*> Weights(int layer, std::string_view id) const;
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
  // Per-op host times of the last Forward, and their sums by op id.
  std::vector<CpuOpVisit> visits_;
  StepOpTimes op_times_;
  // The DSA selection of the step's last fresh indexer layer, per row
  // (IndexShare layers reuse it).
  std::vector<std::vector<int64_t>> shared_sel_;
  // Each request's linear-layer state, by request id and layer: the conv
  // inputs of its last kernel - 1 tokens and the recurrent state
  // [value_heads][key_dim][value_dim]. A request's first token resets it.
  struct LinearState {
    std::vector<float> conv, ssm;
  };
  std::map<int64_t, std::vector<LinearState>> linear_state_;
};

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_CPU_BACKEND_H_
