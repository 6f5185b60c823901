#include "engine/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "engine/slice_math.h"
#include "kernels/formats/bf16.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;
namespace {

using kernels::RoundToBf16;
using models::OpKind;
using slice_math::RmsNorm;

// Host memory the CPU backend will spend on float weights before refusing.
constexpr double kMaxCpuWeightFloats = 256.0 * 1024 * 1024;  // 1 GiB of floats

// Floats the slice's weights take on the host: every GEMM of its program at
// its per-rank shape (the routed experts times their count; kv_b once for
// its two forms) in every layer that runs it, and the embedding table.
double SliceWeightFloats(const SliceConfig& c) {
  const models::LayerProgram& p = *c.program->program;
  auto floats = [](const models::ProgramOp& op) {
    if (op.tensors.empty() || op.mla_form == models::MlaForm::kExpanded) return 0.0;
    if (op.kind == OpKind::kGroupedGemm) return double(op.n) * op.k * op.experts;
    if (op.kind == OpKind::kGemm || op.kind == OpKind::kRouter) return double(op.n) * op.k;
    return 0.0;
  };
  double total = double(c.vocab) * c.hidden;  // the embedding
  for (const models::ProgramOp& op : p.epilogue) total += floats(op);
  for (const models::LayerGroup& g : p.groups) {
    for (int i : g.ops) total += floats(p.layer_ops[i]) * static_cast<double>(g.layers.size());
  }
  return total;
}

}  // namespace

Result<std::unique_ptr<CpuBackend>> CpuBackend::Create(const SliceConfig& config,
                                                       int32_t num_pages, int32_t page_size) {
  if (config.program == nullptr || config.program->program == nullptr) {
    return Status::Internal("CPU backend: the slice has no layer program (MakeSliceConfig)");
  }
  const double floats = SliceWeightFloats(config);
  if (floats > kMaxCpuWeightFloats) {
    return Status::Invalid("CPU backend: " + config.Describe() + " needs ~" +
                           std::to_string(static_cast<int64_t>(floats * 4 / (1 << 20))) +
                           " MiB of float weights; use --cpu-dims small (or the CUDA backend)");
  }
  CAPPLAN_ASSIGN_OR_RETURN(SliceWeights w, MakeSliceWeights(config));
  return std::unique_ptr<CpuBackend>(new CpuBackend(config, std::move(w), num_pages, page_size));
}

CpuBackend::CpuBackend(SliceConfig config, SliceWeights weights, int32_t num_pages,
                       int32_t page_size)
    : config_(std::move(config)),
      w_(std::move(weights)),
      num_pages_(num_pages),
      page_size_(page_size),
      width_(config_.KvEntryWidth()) {
  const size_t page_floats = static_cast<size_t>(page_size_) * width_;
  for (int l = 0; l < config_.layers; ++l) {
    cache_.emplace_back(static_cast<size_t>(num_pages_) * page_floats, 0.0f);
    // The poison page: any read of it turns the output into NaN.
    std::fill(cache_.back().begin(), cache_.back().begin() + page_floats,
              std::numeric_limits<float>::quiet_NaN());
  }
}

Result<const OpWeights*> CpuBackend::Weights(int layer, std::string_view id) const {
  const OpWeights* w = w_.Find(layer, id);
  if (w == nullptr) {
    return Status::Internal("CPU backend: no weights for op " + std::string(id) + " in layer " +
                            std::to_string(layer));
  }
  return w;
}

float* CpuBackend::Slot(int layer, const PageRef& page, int64_t position) {
  return cache_[layer].data() +
         (static_cast<size_t>(page.physical) * page_size_ + position % page_size_) * width_;
}

const float* CpuBackend::Entry(int layer, const std::vector<PageRef>& pages,
                               int64_t position) const {
  const PageRef& page = pages[position / page_size_];
  return cache_[layer].data() +
         (static_cast<size_t>(page.physical) * page_size_ + position % page_size_) * width_;
}

// The step's rows and its batch shape: a request whose one new token
// samples the next after a cached prefix is a decode request (the batch
// loop's decode steps); any other is a prefill chunk.
Status CpuBackend::StartStep(const std::vector<StepRequest>& batch, Step* s) const {
  s->batch = &batch;
  for (size_t i = 0; i < batch.size(); ++i) {
    const StepRequest& r = batch[i];
    if (r.pages == nullptr ||
        static_cast<int64_t>(r.pages->size()) * page_size_ <
            r.start_position + static_cast<int64_t>(r.tokens.size())) {
      return Status::Internal("CPU backend: request " + std::to_string(r.request) +
                              " has no pages for its new tokens");
    }
    const bool decode = r.tokens.size() == 1 && r.want_token && r.start_position > 0;
    if (decode) {
      s->shape.decode_context.push_back(r.start_position + 1);
    } else {
      s->shape.prefill.push_back({static_cast<int64_t>(r.tokens.size()), r.start_position});
    }
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      s->rows.push_back(Row{i, r.start_position + static_cast<int64_t>(t), decode});
    }
  }
  return Status::Ok();
}

Result<CpuBackend::OpFn> CpuBackend::OpFunction(const models::ProgramOp& op) const {
  const std::string& id = op.id;
  if (id == op_ids::kNormInput) return &CpuBackend::InputNorm;
  if (id == op_ids::kNormPostAttention) return &CpuBackend::PostAttentionNorm;
  if (id == op_ids::kNormResidual) return &CpuBackend::Residual;
  if (id == op_ids::kNormFinal) return &CpuBackend::FinalNorm;
  if (id == op_ids::kKvBProjAbsorbed) return &CpuBackend::AbsorbQueries;
  if (id == op_ids::kOProj) return &CpuBackend::OutProjection;
  if (id == op_ids::kLmHead) return &CpuBackend::LmHead;
  if (id == op_ids::kLinearInProjQkvz || id == op_ids::kLinearInProjBa ||
      id == op_ids::kLinearOutProj) {
    return &CpuBackend::LinearProjection;
  }
  if (id == op_ids::kLinearConv1d) return &CpuBackend::LinearConv;
  if (op.state_op != models::LinearStateOp::kNone) return &CpuBackend::DeltaRule;
  if (id == op_ids::kLinearNormGate) return &CpuBackend::LinearNormGate;
  if (id == op_ids::kDenseGateUpProj || id == op_ids::kSharedGateUpProj) {
    return &CpuBackend::FfnGateUp;
  }
  if (id == op_ids::kDenseSiluAndMul || id == op_ids::kSharedSiluAndMul) {
    return &CpuBackend::FfnActivation;
  }
  if (id == op_ids::kDenseDownProj || id == op_ids::kSharedDownProj) return &CpuBackend::FfnDown;
  switch (op.kind) {
    case OpKind::kEmbedding: return &CpuBackend::Embed;
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll: return &CpuBackend::Collective;
    case OpKind::kGemm: return &CpuBackend::Projection;
    case OpKind::kElementwise: return &CpuBackend::NormRope;
    case OpKind::kKvAppend: return &CpuBackend::KvAppend;
    case OpKind::kDsaIndexer: return &CpuBackend::Indexer;
    case OpKind::kAttentionDecode:
    case OpKind::kAttentionPrefill: return &CpuBackend::GqaAttention;
    case OpKind::kMlaDecode:
    case OpKind::kMlaPrefillAbsorbed: return &CpuBackend::MlaAttention;
    case OpKind::kRouter: return &CpuBackend::Route;
    case OpKind::kGroupedGemm: return &CpuBackend::Experts;
    case OpKind::kSampling: return &CpuBackend::Sample;
    default: break;
  }
  return Status::Internal("CPU backend: no function for op " + id + " (" +
                          models::OpKindName(op.kind) + ")");
}

Status CpuBackend::RunOp(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(OpFn fn, OpFunction(op));
  visits_.push_back(CpuOpVisit{op.id, layer});
  s->visit = &visits_.back();
  const auto t0 = std::chrono::steady_clock::now();
  CAPPLAN_RETURN_IF_ERROR((this->*fn)(op, layer, s));
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  visits_.back().us = us;
  op_times_.Add(op, us);
  return Status::Ok();
}

Status CpuBackend::Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                           std::vector<int32_t>* next_tokens) {
  Step s;
  CAPPLAN_RETURN_IF_ERROR(StartStep(batch, &s));
  s.tags = tags;
  s.next_tokens = next_tokens;
  visits_.clear();
  op_times_ = {};
  next_tokens->assign(batch.size(), -1);
  logits_.clear();
  const models::ShardedModel& model = *config_.program;
  const models::LayerProgram& program = *model.program;
  for (const models::ProgramOp& op : program.prologue) {
    CAPPLAN_RETURN_IF_ERROR(RunOp(op, -1, &s));
  }
  for (int l = 0; l < config_.layers; ++l) {
    const models::LayerGroup* group = program.GroupOf(l);
    if (group == nullptr) return Status::Internal("CPU backend: layer outside the program");
    for (int i : group->ops) {
      const models::ProgramOp& op = program.layer_ops[i];
      if (!models::OpRunsFor(model, program, op, s.shape)) continue;
      CAPPLAN_RETURN_IF_ERROR(RunOp(op, l, &s));
    }
    if (probe_) probe_(l, s.x, config_.hidden);
  }
  for (const models::ProgramOp& op : program.epilogue) {
    CAPPLAN_RETURN_IF_ERROR(RunOp(op, config_.layers, &s));
  }
  op_times_.valid = true;
  return Status::Ok();
}

Status CpuBackend::RunGemm(const kernels::GemmWeights& w, const std::vector<float>& in, int rows,
                           std::vector<float>* out, Step* s) {
  s->visit->m = rows;
  s->visit->n = w.n;
  s->visit->k = w.k;
  CAPPLAN_ASSIGN_OR_RETURN(*out, slice_math::Gemm(w, in, rows));
  return Status::Ok();
}

Status CpuBackend::Embed(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int H = config_.hidden;
  s->x.assign(s->rows.size() * H, 0.0f);
  s->visit->m = static_cast<int64_t>(s->rows.size());
  int k = 0;
  for (const StepRequest& r : *s->batch) {
    for (int32_t tok : r.tokens) {
      if (tok < 0 || tok >= config_.vocab) return Status::Internal("CPU backend: bad token id");
      std::copy_n(w->embedding.data() + static_cast<size_t>(tok) * H, H, s->x.data() + k * H);
      ++k;
    }
  }
  return Status::Ok();
}

// One TP rank: its partial sums are its outputs, so a collective moves
// nothing here; it is visited so the op list stays the program's.
Status CpuBackend::Collective(const models::ProgramOp&, int, Step*) { return Status::Ok(); }

Status CpuBackend::InputNorm(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int H = config_.hidden, n = static_cast<int>(s->rows.size());
  s->visit->m = n;
  s->h.resize(s->x.size());
  for (int i = 0; i < n; ++i) RmsNorm(&s->x[i * H], w->norm, H, &s->h[i * H]);
  return Status::Ok();
}

// Residual add + post-attention RMSNorm; the FFN output starts at zero.
Status CpuBackend::PostAttentionNorm(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int H = config_.hidden, n = static_cast<int>(s->rows.size());
  s->visit->m = n;
  for (size_t i = 0; i < s->x.size(); ++i) s->x[i] = RoundToBf16(s->x[i] + s->out[i]);
  for (int i = 0; i < n; ++i) RmsNorm(&s->x[i * H], w->norm, H, &s->h[i * H]);
  s->out.assign(s->x.size(), 0.0f);
  return Status::Ok();
}

Status CpuBackend::Residual(const models::ProgramOp&, int, Step* s) {
  s->visit->m = static_cast<int64_t>(s->rows.size());
  for (size_t i = 0; i < s->x.size(); ++i) s->x[i] = RoundToBf16(s->x[i] + s->out[i]);
  return Status::Ok();
}

// The last new token of every request that wants one.
Status CpuBackend::FinalNorm(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  const int H = config_.hidden;
  const std::vector<StepRequest>& batch = *s->batch;
  int k = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    k += static_cast<int>(batch[i].tokens.size());
    if (!batch[i].want_token || batch[i].tokens.empty()) continue;
    s->last.resize(s->last.size() + H);
    RmsNorm(&s->x[(k - 1) * H], w->norm, H, s->last.data() + s->last.size() - H);
    s->which.push_back(i);
  }
  s->visit->m = static_cast<int64_t>(s->which.size());
  return Status::Ok();
}

Status CpuBackend::LmHead(const models::ProgramOp& op, int layer, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(const OpWeights* w, Weights(layer, op.id));
  return RunGemm(w->gemm, s->last, static_cast<int>(s->which.size()), &s->logits, s);
}

// Greedy sampling.
Status CpuBackend::Sample(const models::ProgramOp&, int, Step* s) {
  const int vocab = config_.vocab;
  s->visit->m = static_cast<int64_t>(s->which.size());
  for (size_t j = 0; j < s->which.size(); ++j) {
    const float* lg = s->logits.data() + j * vocab;
    logits_.emplace_back(lg, lg + vocab);
    int best = 0;
    // NaN (a poison-page read) never compares greater, so it yields token 0.
    for (int v = 1; v < vocab; ++v) {
      if (lg[v] > lg[best]) best = v;
    }
    (*s->next_tokens)[s->which[j]] = best;
  }
  return Status::Ok();
}

}  // namespace capplan::engine
