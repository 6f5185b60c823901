// The CUDA backend (see cuda_backend.h). Host code only: every device step
// is a launch wrapper of kernels/ or engine/cuda_glue.h, in the order the CPU
// backend computes the same step (cpu_backend.cc, cpu_attention.cc), so the
// two can be read side by side. The op functions are in cuda_layer_ops.cc.
#include "engine/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "engine/cuda_backend_impl.h"
#include "engine/device_verifying_tracker.h"

namespace capplan::engine {

namespace op_ids = models::op_ids;

namespace {

using cuda::HostStep;

// The host plan of a step; stamps the host mirror of the pages the append
// kernel will stamp (the verifying tracker's pre-write check reads it).
Result<HostStep> BuildHostStep(const std::vector<StepRequest>& batch, PageTags* tags,
                               int32_t page_size, int vocab) {
  HostStep hs;
  for (const StepRequest& r : batch) {
    if (r.pages == nullptr || static_cast<int64_t>(r.pages->size()) * page_size <
                                  r.start_position + static_cast<int64_t>(r.tokens.size())) {
      return Status::Internal("CUDA backend: request " + std::to_string(r.request) +
                              " has no pages for its new tokens");
    }
    hs.max_pages = std::max(hs.max_pages, static_cast<int>(r.pages->size()));
  }
  const int nb = static_cast<int>(batch.size());
  hs.pages.assign(static_cast<size_t>(nb) * hs.max_pages, kernels::kKvPoisonPage);
  hs.epochs.assign(hs.pages.size(), 0);
  hs.requests.resize(nb);
  hs.seq_lens.resize(nb);
  for (int i = 0; i < nb; ++i) {
    const StepRequest& r = batch[i];
    // A request whose one new token samples the next after a cached prefix
    // decodes; any other is a prefill chunk (as the CPU backend reads it).
    if (r.tokens.size() == 1 && r.want_token && r.start_position > 0) {
      hs.shape.decode_context.push_back(r.start_position + 1);
    } else {
      hs.shape.prefill.push_back({static_cast<int64_t>(r.tokens.size()), r.start_position});
    }
    hs.requests[i] = r.request;
    hs.seq_lens[i] = static_cast<int32_t>(r.start_position + r.tokens.size());
    for (size_t j = 0; j < r.pages->size(); ++j) {
      hs.pages[static_cast<size_t>(i) * hs.max_pages + j] = (*r.pages)[j].physical;
      hs.epochs[static_cast<size_t>(i) * hs.max_pages + j] = (*r.pages)[j].epoch;
    }
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      const int64_t pos = r.start_position + static_cast<int64_t>(t);
      if (r.tokens[t] < 0 || r.tokens[t] >= vocab) {
        return Status::Internal("CUDA backend: bad token id");
      }
      hs.token_ids.push_back(r.tokens[t]);
      hs.token_row.push_back(i);
      hs.token_pos.push_back(static_cast<int32_t>(pos));
      hs.row_ctx.push_back(static_cast<int32_t>(pos + 1));
      StampPage(tags, r.request, static_cast<int32_t>(pos / page_size),
                (*r.pages)[pos / page_size]);
    }
    if (r.want_token && !r.tokens.empty()) {
      hs.sample_rows.push_back(static_cast<int32_t>(hs.token_ids.size()) - 1);
      hs.which.push_back(i);
    }
  }
  return hs;
}

}  // namespace

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl, int32_t page_size)
    : impl_(std::move(impl)), page_size_(page_size) {}
CudaBackend::~CudaBackend() = default;

Result<std::unique_ptr<CudaBackend>> CudaBackend::Create(const SliceConfig& c, int32_t num_pages,
                                                         int32_t page_size,
                                                         const CudaBackendOptions& options) {
  std::string why = kernels::CudaDeviceUnavailableReason();
  if (!why.empty()) {
    const std::string prefix = "no CUDA device: ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    return Status::Unavailable("no CUDA device: use --backend cpu (" + why + ")");
  }
  CAPPLAN_RETURN_IF_ERROR(CheckProgram(c));
  auto m = std::make_unique<Impl>();
  m->c = c;
  m->num_pages = num_pages;
  m->page_size = page_size;
  m->opt = options;
  CAPPLAN_ASSIGN_OR_RETURN(m->info, kernels::GetCudaDeviceInfo());
  CAPPLAN_RETURN_IF_ERROR(cuda::Cuda(cudaEventCreate(&m->ev_start), "cudaEventCreate"));
  CAPPLAN_RETURN_IF_ERROR(cuda::Cuda(cudaEventCreate(&m->ev_stop), "cudaEventCreate"));
  CAPPLAN_ASSIGN_OR_RETURN(SliceWeights w, MakeSliceWeights(c));
  const int max_tokens = static_cast<int>(std::max<int64_t>(options.max_step_tokens, 1));
  CAPPLAN_RETURN_IF_ERROR(m->UploadWeights(&w, max_tokens));
  CAPPLAN_RETURN_IF_ERROR(m->EnsureScratch(max_tokens));
  CAPPLAN_RETURN_IF_ERROR(cuda::Cuda(cudaDeviceSynchronize(), "CudaBackend::Create"));
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(m), page_size));
}

Result<cuda::Step> CudaBackend::Impl::UploadStep(HostStep hs) {
  Step s;
  s.n = static_cast<int>(hs.token_ids.size());
  s.max_ctx = *std::max_element(hs.row_ctx.begin(), hs.row_ctx.end());
  s.max_pages = hs.max_pages;
  CAPPLAN_RETURN_IF_ERROR(EnsureScratch(s.n));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&token_ids, hs.token_ids));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&token_row, hs.token_row));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&token_pos, hs.token_pos));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&row_ctx, hs.row_ctx));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&sample_rows, hs.sample_rows));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&pt_pages, hs.pages));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&pt_epochs, hs.epochs));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&pt_requests, hs.requests));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&pt_seq_lens, hs.seq_lens));
  const int nb = static_cast<int>(hs.requests.size());
  s.ptd = kernels::PageTableDevice{
      nb, s.max_pages, pt_pages.get(), pt_epochs.get(), pt_requests.get(), pt_seq_lens.get()};
  s.rows.row_seq = token_row.get();
  s.rows.row_ctx = row_ctx.get();
  s.rows.page_table = pt_pages.get();
  s.which = std::move(hs.which);
  s.shape = std::move(hs.shape);
  return s;
}

Result<CudaBackend::Impl::OpFn> CudaBackend::Impl::OpFunction(const models::ProgramOp& op) {
  const std::string& id = op.id;
  // Gated DeltaNet layers and window-limited attention have CPU references
  // only; the projection or full-context GQA kernel their kinds would map to
  // would time another op than the one priced.
  if (op.filter.mixer == models::LayerFilter::Mixer::kLinear ||
      op.filter.mixer == models::LayerFilter::Mixer::kWindow) {
    return Status::Invalid("CUDA backend: op " + id +
                           " has no CUDA kernel yet; run this model on the CPU backend");
  }
  if (id == op_ids::kNormInput) return &Impl::InputNorm;
  if (id == op_ids::kNormPostAttention) return &Impl::PostAttentionNorm;
  if (id == op_ids::kNormFinal) return &Impl::FinalNorm;
  if (id == op_ids::kOProj) return &Impl::OutProjection;
  if (id == op_ids::kLmHead) return &Impl::LmHead;
  if (id == op_ids::kDenseGateUpProj) return &Impl::DenseFfn;
  if (id == op_ids::kNormResidual || id == op_ids::kKvBProjAbsorbed ||
      id == op_ids::kDenseSiluAndMul || id == op_ids::kDenseDownProj ||
      id == op_ids::kSharedGateUpProj || id == op_ids::kSharedSiluAndMul ||
      id == op_ids::kSharedDownProj) {
    return &Impl::Fused;
  }
  switch (op.kind) {
    case models::OpKind::kEmbedding:
      return &Impl::Embed;
    case models::OpKind::kAllReduce:
    case models::OpKind::kAllGather:
    case models::OpKind::kReduceScatter:
    case models::OpKind::kAllToAll:
      return &Impl::Collective;
    case models::OpKind::kGemm:
      return &Impl::Projection;
    case models::OpKind::kElementwise:
      return &Impl::NormRope;
    case models::OpKind::kKvAppend:
      return &Impl::KvAppend;
    case models::OpKind::kDsaIndexer:
      return &Impl::Indexer;
    case models::OpKind::kAttentionDecode:
    case models::OpKind::kAttentionPrefill:
      return &Impl::GqaAttention;
    case models::OpKind::kMlaDecode:
    case models::OpKind::kMlaPrefillAbsorbed:
      return &Impl::MlaAttention;
    case models::OpKind::kRouter:
      return &Impl::Route;
    case models::OpKind::kGroupedGemm:
      return &Impl::Experts;
    case models::OpKind::kSampling:
      return &Impl::Sample;
    default:
      break;
  }
  return Status::Internal("CUDA backend: no function for op " + id + " (" +
                          models::OpKindName(op.kind) + ")");
}

Status CudaBackend::CheckProgram(const SliceConfig& config) {
  if (config.program == nullptr || config.program->program == nullptr) {
    return Status::Internal("CUDA backend: the slice has no layer program");
  }
  const models::ShardedModel& model = *config.program;
  const models::LayerProgram& program = *model.program;
  models::BatchShape every_form;
  every_form.decode_context = {2};
  every_form.prefill = {{1, 1}, {1, 0}};
  for (const auto* ops : {&program.prologue, &program.layer_ops, &program.epilogue}) {
    for (const models::ProgramOp& op : *ops) {
      const bool layer_op = ops == &program.layer_ops;
      if (layer_op && !models::OpRunsFor(model, program, op, every_form)) continue;
      CAPPLAN_RETURN_IF_ERROR(Impl::OpFunction(op).status());
    }
  }
  return Status::Ok();
}

Status CudaBackend::Impl::RunOp(const models::ProgramOp& op, int l, Step* s) {
  CAPPLAN_ASSIGN_OR_RETURN(OpFn fn, OpFunction(op));
  Mark(op);
  return (this->*fn)(op, l, s);
}

// The slice's layer program, op by op: the prologue, each layer's group's
// ops that run for this batch, and (when a row wants a token) the epilogue.
Status CudaBackend::Forward(const std::vector<StepRequest>& batch, PageTags* tags,
                            std::vector<int32_t>* next_tokens) {
  Impl& m = *impl_;
  m.marks = 0;
  m.host_us = 0;
  m.op_times = {};
  const auto host_t0 = std::chrono::steady_clock::now();
  CAPPLAN_ASSIGN_OR_RETURN(HostStep hs, BuildHostStep(batch, tags, page_size_, m.c.vocab));
  next_tokens->assign(batch.size(), -1);
  logits_.clear();
  if (hs.token_ids.empty()) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(cuda::Step s, m.UploadStep(std::move(hs)));
  s.next_tokens = next_tokens;
  s.logits = &logits_;
  // Building and uploading the step's page table and rows is host work.
  m.host_us +=
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_t0).count();

  const models::ShardedModel& model = *m.c.program;
  const models::LayerProgram& program = *model.program;
  for (const models::ProgramOp& op : program.prologue) {
    CAPPLAN_RETURN_IF_ERROR(m.RunOp(op, -1, &s));
  }
  for (int l = 0; l < m.c.layers; ++l) {
    const models::LayerGroup* group = program.GroupOf(l);
    if (group == nullptr) return Status::Internal("CUDA backend: layer outside the program");
    s.attended = false;
    for (int i : group->ops) {
      const models::ProgramOp& op = program.layer_ops[i];
      if (!models::OpRunsFor(model, program, op, s.shape)) continue;
      CAPPLAN_RETURN_IF_ERROR(m.RunOp(op, l, &s));
    }
    if (probe_) CAPPLAN_RETURN_IF_ERROR(m.ProbeLayer(l, s, probe_));
  }
  if (s.which.empty()) return cuda::Cuda(cudaGetLastError(), "CUDA backend step");
  for (const models::ProgramOp& op : program.epilogue) {
    CAPPLAN_RETURN_IF_ERROR(m.RunOp(op, m.c.layers, &s));
  }
  return Status::Ok();
}

void CudaBackend::StartTimer() { (void)cudaEventRecord(impl_->ev_start, nullptr); }

double CudaBackend::StopTimerUs() {
  float ms = 0;
  if (cudaEventRecord(impl_->ev_stop, nullptr) != cudaSuccess ||
      cudaEventSynchronize(impl_->ev_stop) != cudaSuccess ||
      cudaEventElapsedTime(&ms, impl_->ev_start, impl_->ev_stop) != cudaSuccess) {
    impl_->marks = 0;
    return std::numeric_limits<double>::quiet_NaN();  // JSON null: never a made-up time
  }
  // A forward span carries per-op marks; the verification span has none.
  if (impl_->marks > 0) impl_->op_times = impl_->SplitMarks();
  impl_->marks = 0;
  return 1000.0 * ms;
}

StepOpTimes CudaBackend::last_op_times() const { return impl_->op_times; }

Result<std::unique_ptr<IntegrityTracker>> CudaBackend::MakeTracker(const std::string& name,
                                                                   int32_t num_pages) {
  if (name == "verify") {
    return MakeDeviceVerifyingTracker(
        [this](const kernels::PageTable& pt) { return VerifyPages(pt); }, num_pages);
  }
  return MakeIntegrityTracker(name, num_pages);
}

std::string CudaBackend::gpu_name() const { return impl_->info.name; }
std::string CudaBackend::driver_version() const { return impl_->info.driver; }
std::string CudaBackend::cuda_version() const { return impl_->info.runtime; }

Result<std::vector<kernels::IntegrityMismatch>> CudaBackend::VerifyPages(
    const kernels::PageTable& pt) {
  Impl& m = *impl_;
  if (pt.batch == 0) return std::vector<kernels::IntegrityMismatch>{};
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&m.vpt_pages, pt.pages));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&m.vpt_epochs, pt.epochs));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&m.vpt_requests, pt.request_ids));
  CAPPLAN_RETURN_IF_ERROR(cuda::Put(&m.vpt_seq_lens, pt.seq_lens));
  // Capacity for every entry: no mismatch is ever dropped.
  const int cap = pt.batch * pt.max_pages;
  CAPPLAN_RETURN_IF_ERROR(cuda::Ensure(&m.mismatches, cap));
  CAPPLAN_RETURN_IF_ERROR(cuda::Ensure(&m.mismatch_count, 1));
  const kernels::PageTableDevice d{pt.batch,           pt.max_pages,         m.vpt_pages.get(),
                                   m.vpt_epochs.get(), m.vpt_requests.get(), m.vpt_seq_lens.get()};
  CAPPLAN_RETURN_IF_ERROR(kernels::LaunchVerifyKvIntegrity(
      d, m.tags.get(), m.num_pages, page_size_, cap, m.mismatches.get(), m.mismatch_count.get()));
  int count = 0;
  CAPPLAN_RETURN_IF_ERROR(
      cuda::Cuda(cudaMemcpy(&count, m.mismatch_count.get(), sizeof(int), cudaMemcpyDeviceToHost),
                 "verify count download"));
  std::vector<kernels::IntegrityMismatch> out(std::min(count, cap));
  if (!out.empty()) {
    CAPPLAN_RETURN_IF_ERROR(cuda::Cuda(
        cudaMemcpy(out.data(), m.mismatches.get(), out.size() * sizeof(kernels::IntegrityMismatch),
                   cudaMemcpyDeviceToHost),
        "verify mismatches download"));
  }
  return out;
}

}  // namespace capplan::engine
