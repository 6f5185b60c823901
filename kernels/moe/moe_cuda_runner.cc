// Host side of MoeCuda (moe_cuda.h): uploads, plan, and the launch sequence.
#include <algorithm>
#include <memory>

#include "kernels/gemm/device_weights.h"
#include "kernels/moe/moe_cuda.h"

namespace capplan::kernels {

// Intermediates of one forward: layers run one after another on one stream,
// so every layer of a model can share them (MoeCuda::Create's `share`).
struct MoeScratch {
  DeviceBuffer<uint16_t> xin, gu, h, o, sh_gu, sh_h, sh_o;
  DeviceBuffer<uint8_t> q_in, q_h;
  DeviceBuffer<float> s_in, s_h;
};

namespace {
// Grows a shared scratch buffer, never shrinks it (another layer may need more).
template <typename T>
Status Grow(DeviceBuffer<T>* b, size_t n) {
  return n <= b->capacity() ? Status::Ok() : b->Allocate(n);
}
}  // namespace

struct MoeCuda::Impl {
  int hidden = 0, inter = 0, num_experts = 0, max_tokens = 0, top_k = 0;
  int tokens = 0, max_rows = 0;
  bool has_shared = false;
  int shared_inter = 0;
  DeviceWeightSet gate_up, down, sh_gate_up, sh_down;
  DeviceBuffer<int> offsets, row_token, slot_row;
  DeviceBuffer<float> weights;
  // Scratch, sized for max_tokens * top_k rows (shared between layers).
  std::shared_ptr<MoeScratch> scratch;

  bool Fp8() const { return gate_up.format == GemmWeightFormat::kFp8Block128; }
  bool SharedFp8() const { return sh_gate_up.format == GemmWeightFormat::kFp8Block128; }

  // One expert MLP over `rows` rows: x -> gu -> h -> out, grouped when
  // offsets != nullptr.
  Status Mlp(const DeviceWeightSet& w1, const DeviceWeightSet& w2, const int* offs, int groups,
             int max_rows_per_group, const uint16_t* x, int rows, uint16_t* gu_buf, uint16_t* h_buf,
             uint16_t* out, cudaStream_t s) {
    const int i_dim = w1.n / 2;
    const bool fp8 = w1.format == GemmWeightFormat::kFp8Block128;
    GroupedGemmArgs a;
    w1.Bind(&a);
    a.num_groups = groups;
    a.row_offsets = offs;
    a.m = rows;
    a.max_rows_per_group = max_rows_per_group;
    if (fp8) {
      CAPPLAN_RETURN_IF_ERROR(
          LaunchQuantFp8Rowwise128(x, rows, w1.k, scratch->q_in.get(), scratch->s_in.get(), s));
      a.x_fp8 = scratch->q_in.get();
      a.x_scales = scratch->s_in.get();
    } else {
      a.x_bf16 = x;
    }
    a.y = gu_buf;
    CAPPLAN_RETURN_IF_ERROR(LaunchGroupedGemm(a, s));
    CAPPLAN_RETURN_IF_ERROR(LaunchSiluMul(gu_buf, rows, i_dim, h_buf, s));
    GroupedGemmArgs b;
    w2.Bind(&b);
    b.num_groups = groups;
    b.row_offsets = offs;
    b.m = rows;
    b.max_rows_per_group = max_rows_per_group;
    if (fp8) {
      CAPPLAN_RETURN_IF_ERROR(
          LaunchQuantFp8Rowwise128(h_buf, rows, i_dim, scratch->q_h.get(), scratch->s_h.get(), s));
      b.x_fp8 = scratch->q_h.get();
      b.x_scales = scratch->s_h.get();
    } else {
      b.x_bf16 = h_buf;
    }
    b.y = out;
    return LaunchGroupedGemm(b, s);
  }
};

MoeCuda::MoeCuda(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MoeCuda::~MoeCuda() = default;
int MoeCuda::hidden() const { return impl_->hidden; }
int MoeCuda::tokens() const { return impl_->tokens; }

Result<std::unique_ptr<MoeCuda>> MoeCuda::Create(const MoeWeights& w, int max_tokens, int top_k,
                                                 const MoeCuda* share) {
  if (w.experts.empty() || max_tokens <= 0 || top_k <= 0) {
    return Status::Invalid("MoeCuda: need experts, max_tokens > 0 and top_k > 0");
  }
  if (w.shared.size() > 1) {
    return Status::Invalid("MoeCuda: at most one shared expert (the shipped cards have 1)");
  }
  auto m = std::make_unique<Impl>();
  m->hidden = w.hidden;
  m->inter = w.intermediate;
  m->num_experts = static_cast<int>(w.experts.size());
  m->max_tokens = max_tokens;
  m->top_k = top_k;
  m->scratch = share != nullptr ? share->impl_->scratch : std::make_shared<MoeScratch>();
  std::vector<const GemmWeights*> gu, dn;
  for (const MoeExpertWeights& e : w.experts) {
    gu.push_back(&e.gate_up);
    dn.push_back(&e.down);
  }
  CAPPLAN_ASSIGN_OR_RETURN(m->gate_up, UploadWeightSet(gu));
  CAPPLAN_ASSIGN_OR_RETURN(m->down, UploadWeightSet(dn));
  const size_t rows = static_cast<size_t>(max_tokens) * top_k;
  const size_t hd = static_cast<size_t>(w.hidden);
  int max_inter = w.intermediate;
  if (!w.shared.empty()) {
    m->has_shared = true;
    m->shared_inter = w.shared[0].gate_up.n / 2;
    max_inter = std::max(max_inter, m->shared_inter);
    CAPPLAN_ASSIGN_OR_RETURN(m->sh_gate_up, UploadWeightSet({&w.shared[0].gate_up}));
    CAPPLAN_ASSIGN_OR_RETURN(m->sh_down, UploadWeightSet({&w.shared[0].down}));
    CAPPLAN_RETURN_IF_ERROR(
        Grow(&m->scratch->sh_gu, static_cast<size_t>(max_tokens) * 2 * m->shared_inter));
    CAPPLAN_RETURN_IF_ERROR(
        Grow(&m->scratch->sh_h, static_cast<size_t>(max_tokens) * m->shared_inter));
    CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->sh_o, static_cast<size_t>(max_tokens) * hd));
  }
  // The plan's buffers at their largest, so Plan() only copies.
  CAPPLAN_RETURN_IF_ERROR(m->offsets.Allocate(static_cast<size_t>(m->num_experts) + 1));
  CAPPLAN_RETURN_IF_ERROR(m->row_token.Allocate(rows));
  CAPPLAN_RETURN_IF_ERROR(m->slot_row.Allocate(rows));
  CAPPLAN_RETURN_IF_ERROR(m->weights.Allocate(rows));
  CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->xin, rows * hd));
  CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->gu, rows * 2 * w.intermediate));
  CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->h, rows * w.intermediate));
  CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->o, rows * hd));
  if (m->Fp8() || (m->has_shared && m->SharedFp8())) {
    const size_t cols = std::max(hd, static_cast<size_t>(max_inter));
    CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->q_in, rows * cols));
    CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->s_in, rows * ((cols + 127) / 128)));
    CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->q_h, rows * cols));
    CAPPLAN_RETURN_IF_ERROR(Grow(&m->scratch->s_h, rows * ((cols + 127) / 128)));
  }
  return std::unique_ptr<MoeCuda>(new MoeCuda(std::move(m)));
}

Status MoeCuda::Plan(const MoePermutation& p, const float* topk_weights) {
  Impl& m = *impl_;
  if (p.num_experts != m.num_experts || p.top_k != m.top_k || p.tokens > m.max_tokens) {
    return Status::Invalid("MoeCuda::Plan: permutation does not match the layer (experts " +
                           std::to_string(p.num_experts) + ", top_k " + std::to_string(p.top_k) +
                           ", tokens " + std::to_string(p.tokens) + ")");
  }
  m.tokens = p.tokens;
  m.max_rows = 0;
  for (int e = 0; e < p.num_experts; ++e) m.max_rows = std::max(m.max_rows, p.RowsOf(e));
  CAPPLAN_RETURN_IF_ERROR(m.offsets.Upload(p.expert_offsets));
  CAPPLAN_RETURN_IF_ERROR(m.row_token.Upload(p.row_token));
  CAPPLAN_RETURN_IF_ERROR(m.slot_row.Upload(p.slot_row));
  return m.weights.Upload(topk_weights, static_cast<size_t>(p.tokens) * p.top_k);
}

Status MoeCuda::RunExperts(const uint16_t* x, cudaStream_t s) {
  Impl& m = *impl_;
  const int rows = m.tokens * m.top_k;
  if (rows == 0) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(
      LaunchGatherRows(x, m.row_token.get(), rows, m.hidden, m.scratch->xin.get(), s));
  return m.Mlp(m.gate_up, m.down, m.offsets.get(), m.num_experts, m.max_rows, m.scratch->xin.get(),
               rows, m.scratch->gu.get(), m.scratch->h.get(), m.scratch->o.get(), s);
}

Status MoeCuda::Run(const uint16_t* x, uint16_t* y, cudaStream_t s) {
  Impl& m = *impl_;
  if (m.tokens == 0) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(RunExperts(x, s));
  if (m.has_shared) {
    CAPPLAN_RETURN_IF_ERROR(m.Mlp(m.sh_gate_up, m.sh_down, nullptr, 1, m.tokens, x, m.tokens,
                                  m.scratch->sh_gu.get(), m.scratch->sh_h.get(),
                                  m.scratch->sh_o.get(), s));
  }
  return LaunchMoeCombine(m.scratch->o.get(), m.slot_row.get(), m.weights.get(),
                          m.has_shared ? m.scratch->sh_o.get() : nullptr, m.tokens, m.top_k,
                          m.hidden, y, s);
}

}  // namespace capplan::kernels
