// Measurement suite "moe": the routed-expert computation of one MoE layer on
// one GPU at EP8 (sweep_shapes.json: Kimi K2.6 48 local experts, GLM-5.2 32),
// for a global batch of T tokens (1..16K), each routed uniformly at random
// to top_k of all experts; the pairs that land on this GPU's experts are its
// rows (~T*top_k/ep). Timed: gather + grouped gate_up + SiLU-mul + grouped
// down (MoeCuda::RunExperts), in
//   moe_grouped_bf16   weight_dtype bf16
//   moe_grouped_fp8    weight_dtype fp8_block (128x128; acts 1x128)
//   moe_grouped_w4a16  weight_dtype int4 (the card's group, symmetric)
// all with BF16 tensor-core compute (dtype bf16). Decode (few rows per
// expert) is bound by the touched experts' weight bytes, prefill by FLOPs;
// bytes/flops from MoeExpertsCost with the touched-expert count measured
// from the routing.
//
// Host memory: the local experts are copies of one random expert (values do
// not change the timing; distinct copies keep the bytes real). The check
// (smallest batch with rows, and the batch nearest 64 rows) compares rows
// with ExpertForwardCpu; routing itself is covered by tests/kernels/moe.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm/sweep_shapes.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/check.h"
#include "kernels/harness/suite.h"
#include "kernels/harness/timing.h"
#include "kernels/moe/moe_cost.h"
#include "kernels/moe/moe_cpu.h"
#include "kernels/moe/moe_fp8_device_numerics.h"
#include "kernels/moe/moe_permute.h"
#include "kernels/moe/moe_router.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"
#include "kernels/moe/moe_cuda.h"
#endif

namespace capplan::kernels {
namespace {

uint32_t Next(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

void FillUniform(std::vector<float>* v, uint32_t seed, float scale) {
  uint32_t s = seed ? seed : 1u;
  for (float& x : *v) x = scale * (static_cast<float>(Next(&s)) * (2.0f / 4294967296.0f) - 1.0f);
}

struct Flavor {
  const char* kernel;
  const char* weight_dtype;
  GemmWeightFormat format;
};
const Flavor kFlavors[] = {
    {"moe_grouped_bf16", "bf16", GemmWeightFormat::kBf16},
    {"moe_grouped_fp8", "fp8_block", GemmWeightFormat::kFp8Block128},
    {"moe_grouped_w4a16", "int4", GemmWeightFormat::kInt4},
};

MeasurementRecord MakeRecord(const Flavor& f, const char* variant, int tokens, int rows, int hidden,
                             int inter, int experts, int touched, int top_k, int group,
                             const TimingStats& t) {
  MeasurementRecord r;
  r.kernel = f.kernel;
  r.op_class = "moe";
  r.variant = variant;
  r.dtype = "bf16";
  r.weight_dtype = f.weight_dtype;
  r.shape = {{"tokens", tokens},      {"rows", rows},       {"hidden", hidden},
             {"intermediate", inter}, {"experts", experts}, {"touched_experts", touched},
             {"top_k", top_k}};
  if (f.format == GemmWeightFormat::kInt4) r.shape.push_back({"group", group});
  r.timing = t;
  MoeShape s{rows, hidden, inter, experts, 1};
  const GemmCost c = MoeExpertsCost(s, touched, f.format, group);
  r.bytes = c.bytes();
  r.flops = c.flops;
  return r;
}

// Dry: the full CPU layer (router .. combine) on a small Kimi-like layer.
Status DryCase(const SuiteOptions& opt, const Flavor& f, const std::vector<int>& token_counts,
               MeasurementSink* sink) {
  const int hidden = 256, inter = 128, experts = 8, top_k = 2;
  RouterConfig rc;
  rc.num_experts = experts;
  rc.top_k = top_k;
  rc.scoring = MoeScoring::kSigmoid;
  rc.routed_scaling_factor = 2.827;  // Kimi K2 config (moe_router.h)
  CAPPLAN_ASSIGN_OR_RETURN(
      MoeWeights w, RandomMoeWeights(hidden, inter, experts, 1, f.format, 128, true, opt.seed));
  for (int tokens : token_counts) {
    if (opt.OutOfTime() || !opt.Selected("dry.t" + std::to_string(tokens))) continue;
    std::vector<float> x(static_cast<size_t>(tokens) * hidden), y(x.size());
    FillUniform(&x, opt.seed + tokens, 1.0f);
    MoePermutation perm;
    Status st;
    const TimingStats t =
        TimeCpu([&] { st = MoeForwardCpu(w, rc, x.data(), tokens, y.data(), &perm); }, 1, 3);
    CAPPLAN_RETURN_IF_ERROR(st);
    MeasurementRecord r = MakeRecord(f, "cpu_reference", tokens, tokens * top_k, hidden, inter,
                                     experts, perm.TouchedExperts(), top_k, 128, t);
    bool finite = true;
    for (float v : y) finite = finite && std::isfinite(v);
    r.check = finite ? "pass" : "fail";
    sink->Add(std::move(r));
  }
  return Status::Ok();
}

#ifdef CAPPLAN_HAVE_CUDA

// Local expert ids (in [0, local)) of the pairs of `tokens` tokens that land
// on GPU 0 when each token picks top_k distinct experts of `total` uniformly.
std::vector<int> LocalPairs(int tokens, int total, int local, int top_k, uint32_t seed) {
  std::vector<int> ids;
  uint32_t s = seed ? seed : 1u;
  std::vector<int> pick;
  for (int t = 0; t < tokens; ++t) {
    pick.clear();
    while (static_cast<int>(pick.size()) < top_k) {
      const int e = static_cast<int>(Next(&s) % static_cast<uint32_t>(total));
      if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
    }
    for (int e : pick) {
      if (e < local) ids.push_back(e);
    }
  }
  return ids;
}

// One model's MoE layer: the routing of every batch size and the input
// rows, shared by its cases; each flavour's experts are uploaded by its
// first case and released after its last (a flavour holds GBs of weights).
class MoeModelContext {
 public:
  MoeModelContext(const SweepModel& model, const std::vector<int>& ts, bool all_local,
                  uint32_t seed)
      : model_(model), ts_(ts) {
    const SweepMoe& mo = model.moe;
    const int local = mo.LocalExperts();
    // Smoke runs route every pair to this GPU's experts, so even one token
    // has rows to check.
    for (int t : ts) {
      pairs_.push_back(
          LocalPairs(t, all_local ? local : mo.total_experts, local, mo.top_k, seed + t));
      max_rows_ = std::max<int>(max_rows_, static_cast<int>(pairs_.back().size()));
    }
    for (int f = 0; f < 3; ++f) pending_[f] = static_cast<int>(ts.size());
  }

  Status Run(const SuiteOptions& opt, int fi, size_t ti, MeasurementSink* sink) {
    Status st = RunPrepared(opt, fi, ti, sink);
    if (--pending_[fi] == 0) {
      moe_[fi].reset();
      one_[fi].experts.clear();
    }
    return st;
  }

 private:
  Status PrepareInputs(const SuiteOptions& opt) {
    if (x_.size() > 0) return Status::Ok();
    xf_.assign(static_cast<size_t>(max_rows_) * model_.moe.hidden, 0.0f);
    FillUniform(&xf_, opt.seed + 3, 1.0f);
    // The device sees BF16 inputs; the reference must start from the same values.
    std::vector<uint16_t> xbits(xf_.size());
    for (size_t i = 0; i < xf_.size(); ++i) {
      xbits[i] = FloatToBf16Bits(xf_[i]);
      xf_[i] = Bf16BitsToFloat(xbits[i]);
    }
    CAPPLAN_RETURN_IF_ERROR(x_.Upload(xbits));
    return y_.Allocate(xbits.size());
  }

  Status PrepareFlavor(const SuiteOptions& opt, int fi) {
    if (moe_[fi]) return Status::Ok();
    const SweepMoe& mo = model_.moe;
    const Flavor& f = kFlavors[fi];
    // One random expert, copied to every local slot.
    CAPPLAN_ASSIGN_OR_RETURN(one_[fi], RandomMoeWeights(mo.hidden, mo.intermediate, 1, 0, f.format,
                                                        model_.int4_group, true, opt.seed));
    MoeWeights w;
    w.hidden = mo.hidden;
    w.intermediate = mo.intermediate;
    w.experts.assign(mo.LocalExperts(), one_[fi].experts[0]);
    CAPPLAN_ASSIGN_OR_RETURN(moe_[fi], MoeCuda::Create(w, max_rows_, 1));
    return Status::Ok();
  }

  Status RunPrepared(const SuiteOptions& opt, int fi, size_t ti, MeasurementSink* sink) {
    const std::vector<int>& ids = pairs_[ti];
    const int rows = static_cast<int>(ids.size());
    if (rows == 0) return Status::Ok();  // no pair landed on this GPU: nothing to time
    CAPPLAN_RETURN_IF_ERROR(PrepareInputs(opt));
    CAPPLAN_RETURN_IF_ERROR(PrepareFlavor(opt, fi));
    const SweepMoe& mo = model_.moe;
    const Flavor& f = kFlavors[fi];
    MoeCuda& moe = *moe_[fi];
    CAPPLAN_ASSIGN_OR_RETURN(MoePermutation p,
                             PermuteByExpert(ids.data(), rows, 1, mo.LocalExperts()));
    const std::vector<float> ones(rows, 1.0f);
    CAPPLAN_RETURN_IF_ERROR(moe.Plan(p, ones.data()));
    std::optional<CheckResult> cr;
    if (opt.ForceCheck() || ti == 0 || (rows >= 64 && (ti == 0 || pairs_[ti - 1].size() < 64))) {
      // top_k 1 and weight 1: y[row] is the expert output of row `row`.
      CAPPLAN_RETURN_IF_ERROR(y_.Poison());
      CAPPLAN_RETURN_IF_ERROR(moe.Run(x_.get(), y_.get()));
      if (cudaDeviceSynchronize() != cudaSuccess) return CudaLastError("moe check");
      const int nrows = std::min(rows, 4);
      std::vector<float> ref(static_cast<size_t>(nrows) * mo.hidden), got(ref.size());
      // FP8 against the reference with the kernels' own arithmetic: the
      // exact one differs by design (moe_fp8_device_numerics.h).
      const MoeExpertWeights& e = one_[fi].experts[0];
      CAPPLAN_RETURN_IF_ERROR(f.format == GemmWeightFormat::kFp8Block128
                                  ? Fp8ExpertForwardDeviceNumerics(e, xf_.data(), nrows, ref.data())
                                  : ExpertForwardCpu(e, xf_.data(), nrows, ref.data()));
      std::vector<uint16_t> out;
      CAPPLAN_RETURN_IF_ERROR(y_.Download(&out));
      for (size_t j = 0; j < got.size(); ++j) got[j] = Bf16BitsToFloat(out[j]);
      double rms = 0;
      for (float v : ref) rms += static_cast<double>(v) * v;
      rms = std::sqrt(rms / ref.size());
      cr = Check(got, ref, 3e-2 * rms, 3e-2);  // as tests/kernels/moe/moe_gpu_test.cc
    }
    CAPPLAN_ASSIGN_OR_RETURN(TimingStats t,
                             TimeCuda([&] { return moe.RunExperts(x_.get()); },
                                      {opt.timing_warmup, opt.timing_repeats, opt.flush_l2}));
    MeasurementRecord r =
        MakeRecord(f, "own_wmma_gather_gateup_silu_down", ts_[ti], rows, mo.hidden, mo.intermediate,
                   mo.LocalExperts(), p.TouchedExperts(), mo.top_k, model_.int4_group, t);
    SetCheck(&r, cr);
    sink->Add(std::move(r));
    return Status::Ok();
  }

  SweepModel model_;
  std::vector<int> ts_;
  std::vector<std::vector<int>> pairs_;
  int max_rows_ = 1;
  std::vector<float> xf_;
  DeviceBuffer<uint16_t> x_, y_;
  MoeWeights one_[3];
  std::unique_ptr<MoeCuda> moe_[3];
  int pending_[3] = {0, 0, 0};
};

// Mission priority: the mission's models' W4A16 and FP8 experts at decode
// batch sizes (up to 256 tokens of the global batch).
int MoePriority(const std::string& model, const Flavor& f, int tokens) {
  const bool mission =
      (model == "kimi-k2.6" || model == "glm-5.2") && f.format != GemmWeightFormat::kBf16;
  if (mission && tokens <= 256) return kMissionPriority;
  return tokens > 4096 ? kLatePriority : kSweepPriority;
}

std::vector<SuiteCase> DeviceCases(const SuiteOptions& opt, const SweepShapes& shapes) {
  std::vector<int> ts = opt.quick ? shapes.quick_m_values : shapes.m_values;
  if (opt.smoke) ts = {1, 64};
  std::vector<SuiteCase> out;
  for (const SweepModel& m : shapes.models) {
    std::vector<int> todo;
    for (int t : ts) {
      if (opt.Selected(m.name + ".moe.t" + std::to_string(t))) todo.push_back(t);
    }
    if (todo.empty()) continue;
    auto ctx = std::make_shared<MoeModelContext>(m, todo, opt.smoke, opt.seed);
    for (int fi = 0; fi < 3; ++fi) {
      for (size_t ti = 0; ti < todo.size(); ++ti) {
        SuiteCase c;
        c.label = m.name + ".moe.t" + std::to_string(todo[ti]) + "." + kFlavors[fi].weight_dtype;
        c.kernel = kFlavors[fi].kernel;
        c.op_class = "moe";
        c.priority = MoePriority(m.name, kFlavors[fi], todo[ti]);
        c.run = [ctx, fi, ti](const SuiteOptions& o, MeasurementSink* sink) {
          return ctx->Run(o, fi, ti, sink);
        };
        out.push_back(std::move(c));
      }
    }
    if (opt.smoke) break;  // one model: each flavour at 1 and 64 tokens
  }
  return out;
}

#endif  // CAPPLAN_HAVE_CUDA

Result<std::vector<SuiteCase>> MoeSuite(const SuiteOptions& opt) {
  CAPPLAN_ASSIGN_OR_RETURN(SweepShapes shapes, LoadDefaultSweepShapes());
  if (opt.dry_run) {
    std::vector<SuiteCase> out;
    for (const Flavor& f : kFlavors) {
      SuiteCase c;
      c.label = std::string("dry.") + f.weight_dtype;
      c.kernel = f.kernel;
      c.op_class = "moe";
      const std::vector<int> ts = shapes.dry_m_values;
      c.run = [&f, ts](const SuiteOptions& o, MeasurementSink* sink) {
        return DryCase(o, f, ts, sink);
      };
      out.push_back(std::move(c));
    }
    return out;
  }
#ifdef CAPPLAN_HAVE_CUDA
  return DeviceCases(opt, shapes);
#else
  return Status::Unavailable("moe suite: this build has no CUDA kernels; use --dry-run");
#endif
}

}  // namespace

void RegisterMoeSuites() {
  RegisterSuite("moe", MoeSuite,
                "MoE routed experts at EP8 (gather, grouped gate_up, SiLU-mul, grouped down) in "
                "bf16 / fp8 128x128 / w4a16, global batch 1..16K tokens");
}

}  // namespace capplan::kernels
