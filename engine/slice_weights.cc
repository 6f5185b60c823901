// Synthetic weights for the model slice, allocated by walking its layer
// program (slice_weights.h). Values are uniform in [-1, 1) / sqrt(fan_in) so
// activations stay O(1) through the layers; norm weights are 1 +- 0.1. They
// say nothing about the real checkpoint: the slice exists to run the real
// shapes and formats, not the real model.
#include "engine/slice_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/splitmix.h"
#include "kernels/formats/bf16.h"
#include "models/weight_tensors.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace tensor_names = models::tensor_names;

const OpWeights* SliceWeights::Find(int layer, std::string_view id) const {
  auto l = by_layer_.find(layer);
  if (l == by_layer_.end()) return nullptr;
  auto it = l->second.find(id);
  return it == l->second.end() ? nullptr : it->second.get();
}

OpWeights* SliceWeights::Find(int layer, std::string_view id) {
  return const_cast<OpWeights*>(std::as_const(*this).Find(layer, id));
}

std::vector<std::pair<int, std::string>> SliceWeights::Keys() const {
  std::vector<std::pair<int, std::string>> keys;
  for (const auto& [layer, ops] : by_layer_) {
    for (const auto& [id, w] : ops) keys.emplace_back(layer, id);
  }
  return keys;
}

void SliceWeights::Set(int layer, std::string_view id, std::shared_ptr<OpWeights> w) {
  by_layer_[layer][std::string(id)] = std::move(w);
}

void SliceWeights::ReleaseLayer(int layer) { by_layer_.erase(layer); }

kernels::GemmWeightFormat GemmFormatOf(const models::WeightFormat& f) {
  switch (models::DtypeFamily(f.dtype)) {
    case models::Dtype::kFp8E4m3:
      // Always block-scaled in the engine: its activations get one scale per
      // token per 128 K (DeepGEMM's 1x128, deepseek-ai/DeepGEMM README.md), so a request's
      // output does not depend on which other requests share the batch. A
      // per-tensor dynamic activation scale would couple them.
      return kernels::GemmWeightFormat::kFp8Block128;
    case models::Dtype::kInt4:
      return kernels::GemmWeightFormat::kInt4;
    default:
      return kernels::GemmWeightFormat::kBf16;
  }
}

namespace {

using kernels::GemmWeightFormat;
using kernels::GemmWeights;
using models::ProgramOp;
using models::WeightTensor;

class WeightRng {
 public:
  explicit WeightRng(uint64_t seed) : state_(seed) {}
  // Uniform in [-1, 1).
  float Next() {
    const uint64_t r = NextRandom(&state_);
    return static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0);
  }
  std::vector<float> Matrix(int64_t rows, int64_t cols) {
    std::vector<float> m(static_cast<size_t>(rows * cols));
    const float s = 1.0f / std::sqrt(static_cast<float>(cols));
    for (float& v : m) v = Next() * s;
    return m;
  }
  std::vector<float> Bf16Matrix(int64_t rows, int64_t cols, float gain = 1.0f) {
    std::vector<float> m = Matrix(rows, cols);
    for (float& v : m) v = kernels::RoundToBf16(v * gain);
    return m;
  }
  std::vector<float> Norm(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = kernels::RoundToBf16(1.0f + 0.1f * Next());
    return v;
  }

 private:
  uint64_t state_;
};

Result<GemmWeights> Linear(WeightRng* rng, int64_t n, int64_t k, GemmWeightFormat f, int group) {
  const std::vector<float> m = rng->Matrix(n, k);
  return kernels::QuantizeGemmWeights(m.data(), static_cast<int>(n), static_cast<int>(k), f, group,
                                      /*symmetric=*/true);
}

Result<kernels::MoeExpertWeights> Mlp(WeightRng* rng, int64_t hidden, int64_t inter,
                                      GemmWeightFormat f, int group) {
  kernels::MoeExpertWeights e;
  CAPPLAN_ASSIGN_OR_RETURN(e.gate_up, Linear(rng, 2 * inter, hidden, f, group));
  CAPPLAN_ASSIGN_OR_RETURN(e.down, Linear(rng, hidden, inter, f, group));
  return e;
}

// The routed experts of one MoE layer. Each expert draws from its own stream
// so they can be generated in parallel: a full-dims Kimi K2.6 TP8 layer has
// 384 experts x 3 x 7168 x 256 values (2.1 G), minutes on one core, seconds
// on a device machine's 16.
Status MakeExperts(uint64_t layer_seed, int n_experts, int64_t hidden, int64_t inter,
                   GemmWeightFormat f, int group, std::vector<kernels::MoeExpertWeights>* out) {
  out->assign(n_experts, {});
  std::vector<Status> status(n_experts, Status::Ok());
  std::atomic<int> next{0};
  auto work = [&] {
    for (int e = next++; e < n_experts; e = next++) {
      WeightRng er(layer_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(e) + 1);
      auto w = Mlp(&er, hidden, inter, f, group);
      if (w.ok()) {
        (*out)[e] = std::move(*w);
      } else {
        status[e] = w.status();
      }
    }
  };
  const double values = 3.0 * hidden * inter * n_experts;
  // Small slices (tests) stay on the calling thread.
  const int threads =
      values < 5e7
          ? 1
          : std::max(
                1, std::min<int>(n_experts, static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const Status& st : status) CAPPLAN_RETURN_IF_ERROR(st);
  return Status::Ok();
}

// One scope's draws: a layer (its own stream), or the prologue and epilogue
// (the slice's stream).
struct Scope {
  const SliceConfig* c;
  const std::vector<WeightTensor>* tensors;  // the slice card's, in card order
  const std::vector<const ProgramOp*>* ops;  // the scope's ops, program order
  WeightRng* rng;
  uint64_t layer_seed = 0;
};

const WeightTensor* TensorNamed(const Scope& s, std::string_view name) {
  for (const WeightTensor& t : *s.tensors) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

const ProgramOp* OpNamed(const Scope& s, std::string_view id) {
  for (const ProgramOp* op : *s.ops) {
    if (op->id == id) return op;
  }
  return nullptr;
}

models::LocalShape LocalOf(const Scope& s, const WeightTensor& t) {
  const models::ShardedModel& m = *s.c->program;
  return models::ShardTensor(m.card, t, m.layout);
}

// The order a scope's tensors are drawn from its stream: the layer norms,
// the token mixer's tensors in card order, the router, then the FFN's in
// card order -- the order the engine has always drawn in, so a seed keeps
// giving the same weights.
int DrawGroup(const WeightTensor& t) {
  const std::string_view name = t.name;
  if (name == op_ids::kNormInput || name == op_ids::kNormPostAttention) return 0;
  switch (t.component) {
    case models::Component::kRouter:
      return 2;
    case models::Component::kDenseFfn:
    case models::Component::kExperts:
    case models::Component::kSharedExperts:
      return 3;
    default:
      return 1;
  }
}

// MLA's absorbed kv_b: W_UK and W_UV stay BF16, as engines fold them into
// the attention kernels' BF16 MMAs (FlashMLA's absorbed "MQA mode",
// deepseek-ai/FlashMLA README.md). Their widths are the MLA kernel's.
Status DrawAbsorbedKvB(const Scope& s, OpWeights* w) {
  for (const ProgramOp* op : *s.ops) {
    if (op->kind != models::OpKind::kMlaDecode) continue;
    w->w_uk = s.rng->Bf16Matrix(int64_t{op->heads} * op->nope_dim, op->kv_lora_rank);
    w->w_uv = s.rng->Bf16Matrix(int64_t{op->heads} * op->kv_lora_rank, op->v_head_dim);
    return Status::Ok();
  }
  return Status::Internal("slice weights: kv_b_proj in a layer without MLA attention");
}

// A projection's matrix. The engine's DSA indexer projects its queries from
// the hidden state (k = hidden, where the model's wq_b reads the q latent)
// and runs its indexer and LM head GEMMs in BF16.
Status DrawProjection(const Scope& s, const ProgramOp& op, OpWeights* w) {
  const bool bf16 = op.filter.index_fresh_only || op.id == op_ids::kLmHead;
  const GemmWeightFormat f = bf16 ? GemmWeightFormat::kBf16 : GemmFormatOf(op.format);
  const int64_t k = op.id == op_ids::kIndexerWqB ? s.c->program->program->hidden : op.k;
  CAPPLAN_ASSIGN_OR_RETURN(w->gemm, Linear(s.rng, op.n, k, f, s.c->int4_group));
  return Status::Ok();
}

// The dense or shared-expert MLPs of a gate_up op, each gate_up then down
// from the stream; its down op reads them too.
Status DrawMlps(const Scope& s, const ProgramOp& op, OpWeights* w,
                std::vector<std::string_view>* covered) {
  const int mlps = op.copies / 2;
  const int64_t inter = op.n / std::max(1, op.copies);
  const GemmWeightFormat f = GemmFormatOf(op.format);
  for (int e = 0; e < mlps; ++e) {
    CAPPLAN_ASSIGN_OR_RETURN(auto mlp, Mlp(s.rng, op.k, inter, f, s.c->int4_group));
    w->mlps.push_back(std::move(mlp));
  }
  const bool dense = op.id == op_ids::kDenseGateUpProj;
  const ProgramOp* down = OpNamed(s, dense ? op_ids::kDenseDownProj : op_ids::kSharedDownProj);
  if (down == nullptr) return Status::Internal("slice weights: " + op.id + " without its down op");
  covered->insert(covered->end(), down->tensors.begin(), down->tensors.end());
  return Status::Ok();
}

Status DrawRouting(const Scope& s, const ProgramOp& op, OpWeights* w) {
  const SliceConfig& c = *s.c;
  w->router = s.rng->Matrix(op.n, op.k);  // FP32 router (moe_cpu.h)
  kernels::RouterConfig& rc = w->router_config;
  rc.num_experts = static_cast<int>(op.n);
  rc.top_k = c.top_k;
  CAPPLAN_ASSIGN_OR_RETURN(rc.scoring, kernels::ParseMoeScoring(c.scoring));
  rc.renormalize = true;
  rc.routed_scaling_factor = c.routed_scaling;
  return Status::Ok();
}

// Draws tensor `t` of `op` into *w and lists in *covered the tensors the
// draw holds (t, and for an MLP or the experts their other tensors).
Status Draw(const Scope& s, const ProgramOp& op, const WeightTensor& t, OpWeights* w,
            std::vector<std::string_view>* covered) {
  covered->push_back(t.name);
  const models::LocalShape local = LocalOf(s, t);
  const bool first = !op.tensors.empty() && op.tensors[0] == t.name;
  if (std::string_view(t.name) == tensor_names::kKvBProj) return DrawAbsorbedKvB(s, w);
  if (op.kind == models::OpKind::kRouter) return DrawRouting(s, op, w);
  if (op.kind == models::OpKind::kGroupedGemm) {
    covered->insert(covered->end(), op.tensors.begin(), op.tensors.end());
    w->experts.hidden = static_cast<int>(op.k);
    w->experts.intermediate = static_cast<int>(local.n);
    return MakeExperts(s.layer_seed, op.experts, op.k, local.n, GemmFormatOf(op.format),
                       s.c->int4_group, &w->experts.experts);
  }
  if (op.id == op_ids::kDenseGateUpProj || op.id == op_ids::kSharedGateUpProj) {
    return DrawMlps(s, op, w, covered);
  }
  if (op.kind == models::OpKind::kGemm && first) return DrawProjection(s, op, w);
  if (op.kind == models::OpKind::kEmbedding) {
    // Embedding rows are O(1); RMSNorm makes the scale irrelevant anyway.
    w->embedding = s.rng->Bf16Matrix(local.n, local.k, std::sqrt(static_cast<float>(local.k)));
  } else if (op.state_op == models::LinearStateOp::kConv) {
    w->conv = s.rng->Bf16Matrix(local.n, local.k);
  } else if (std::string_view(t.name) == tensor_names::kLinearDtBiasALog) {
    // Drawn so the per-token decay exp(g) stays in (0, 1) away from both ends.
    for (int64_t h = 0; h < local.n; ++h) {
      w->a_log.push_back(kernels::RoundToBf16(-1.0f + 0.5f * s.rng->Next()));
      w->dt_bias.push_back(kernels::RoundToBf16(0.5f * s.rng->Next()));
    }
  } else {
    w->norm = s.rng->Norm(local.n);
  }
  return Status::Ok();
}

// The weights of one scope's ops: each tensor they name drawn once, in
// draw order, into the entry of the first op naming it; an op whose tensors
// another op's draw holds shares that op's entry.
Status DrawScope(const Scope& s, int layer, SliceWeights* out) {
  std::vector<const WeightTensor*> order;
  for (const ProgramOp* op : *s.ops) {
    for (std::string_view name : op->tensors) {
      const WeightTensor* t = TensorNamed(s, name);
      if (t == nullptr) return Status::Internal("slice weights: no tensor " + std::string(name));
      if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
    }
  }
  auto card_index = [&](const WeightTensor* t) { return t - s.tensors->data(); };
  std::stable_sort(order.begin(), order.end(), [&](const WeightTensor* a, const WeightTensor* b) {
    const int ga = DrawGroup(*a), gb = DrawGroup(*b);
    return ga != gb ? ga < gb : card_index(a) < card_index(b);
  });
  std::map<std::string_view, std::shared_ptr<OpWeights>> holder, by_op;
  for (const WeightTensor* t : order) {
    if (holder.contains(t->name)) continue;
    const ProgramOp* op = nullptr;
    for (const ProgramOp* o : *s.ops) {
      if (std::find(o->tensors.begin(), o->tensors.end(), t->name) != o->tensors.end()) {
        op = o;
        break;
      }
    }
    std::shared_ptr<OpWeights>& w = by_op[op->id];
    if (w == nullptr) w = std::make_shared<OpWeights>();
    std::vector<std::string_view> covered;
    CAPPLAN_RETURN_IF_ERROR(Draw(s, *op, *t, w.get(), &covered));
    for (std::string_view c : covered) holder[c] = w;
  }
  for (const ProgramOp* op : *s.ops) {
    if (op->tensors.empty()) continue;
    auto it = by_op.find(op->id);
    out->Set(layer, op->id, it != by_op.end() ? it->second : holder.at(op->tensors[0]));
  }
  return Status::Ok();
}

std::vector<const ProgramOp*> Pointers(const std::vector<ProgramOp>& ops) {
  std::vector<const ProgramOp*> p;
  for (const ProgramOp& op : ops) p.push_back(&op);
  return p;
}

}  // namespace

Result<SliceWeights> MakeSliceWeights(const SliceConfig& c) {
  const models::LayerProgram& p = *c.program->program;
  const std::vector<WeightTensor> tensors = models::ListWeightTensors(c.program->card);
  SliceWeights w;
  WeightRng rng(c.seed);
  const std::vector<const ProgramOp*> prologue = Pointers(p.prologue);
  CAPPLAN_RETURN_IF_ERROR(DrawScope(Scope{&c, &tensors, &prologue, &rng}, -1, &w));
  for (int l = 0; l < c.layers; ++l) {
    const models::LayerGroup* group = p.GroupOf(l);
    if (group == nullptr) return Status::Internal("slice weights: layer outside the program");
    std::vector<const ProgramOp*> ops;
    for (int i : group->ops) ops.push_back(&p.layer_ops[i]);
    // A fresh stream per layer, so adding layers does not change earlier ones.
    const uint64_t layer_seed = c.seed * 1000003ull + static_cast<uint64_t>(l) + 1;
    WeightRng lr(layer_seed);
    CAPPLAN_RETURN_IF_ERROR(DrawScope(Scope{&c, &tensors, &ops, &lr, layer_seed}, l, &w));
  }
  const std::vector<const ProgramOp*> epilogue = Pointers(p.epilogue);
  CAPPLAN_RETURN_IF_ERROR(DrawScope(Scope{&c, &tensors, &epilogue, &rng}, c.layers, &w));
  return w;
}

}  // namespace capplan::engine
