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
#include "kernels/moe/moe_permute.h"
#include "kernels/moe/moe_router.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/gemm/device_buffer.h"
#include "kernels/harness/cuda_timer.h"
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
Status DrySuite(const SuiteOptions& opt, const SweepShapes& shapes, MeasurementSink* sink) {
  const int hidden = 256, inter = 128, experts = 8, top_k = 2;
  RouterConfig rc;
  rc.num_experts = experts;
  rc.top_k = top_k;
  rc.scoring = MoeScoring::kSigmoid;
  rc.routed_scaling_factor = 2.827;  // Kimi K2 config (moe_router.h)
  for (const Flavor& f : kFlavors) {
    CAPPLAN_ASSIGN_OR_RETURN(
        MoeWeights w, RandomMoeWeights(hidden, inter, experts, 1, f.format, 128, true, opt.seed));
    for (int tokens : shapes.dry_m_values) {
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

Status DeviceModel(const SuiteOptions& opt, const SweepModel& model, const std::vector<int>& ts,
                   MeasurementSink* sink) {
  const SweepMoe& mo = model.moe;
  const int hidden = mo.hidden, inter = mo.intermediate, local = mo.LocalExperts();
  // Routing per batch size first: it fixes the largest row count to size buffers.
  std::vector<std::vector<int>> pairs;
  std::vector<int> todo;
  int max_rows = 1;
  for (int t : ts) {
    if (!opt.Selected(model.name + ".moe.t" + std::to_string(t))) continue;
    todo.push_back(t);
    pairs.push_back(LocalPairs(t, mo.total_experts, local, mo.top_k, opt.seed + t));
    max_rows = std::max<int>(max_rows, static_cast<int>(pairs.back().size()));
  }
  if (todo.empty()) return Status::Ok();
  std::vector<float> xf(static_cast<size_t>(max_rows) * hidden);
  FillUniform(&xf, opt.seed + 3, 1.0f);
  // The device sees BF16 inputs; the reference must start from the same values.
  std::vector<uint16_t> xbits(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) {
    xbits[i] = FloatToBf16Bits(xf[i]);
    xf[i] = Bf16BitsToFloat(xbits[i]);
  }
  DeviceBuffer<uint16_t> x, y;
  CAPPLAN_RETURN_IF_ERROR(x.Upload(xbits));
  CAPPLAN_RETURN_IF_ERROR(y.Allocate(xbits.size()));
  for (const Flavor& f : kFlavors) {
    if (opt.OutOfTime()) break;
    // One random expert, copied to every local slot.
    CAPPLAN_ASSIGN_OR_RETURN(MoeWeights one, RandomMoeWeights(hidden, inter, 1, 0, f.format,
                                                              model.int4_group, true, opt.seed));
    MoeWeights w;
    w.hidden = hidden;
    w.intermediate = inter;
    w.experts.assign(local, one.experts[0]);
    CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<MoeCuda> moe, MoeCuda::Create(w, max_rows, 1));
    w.experts.clear();  // the device holds them now
    bool checked_small = false, checked_mid = false;
    for (size_t i = 0; i < todo.size(); ++i) {
      if (opt.OutOfTime()) break;
      const std::vector<int>& ids = pairs[i];
      const int rows = static_cast<int>(ids.size());
      if (rows == 0) continue;  // no pair landed on this GPU: nothing to time
      CAPPLAN_ASSIGN_OR_RETURN(MoePermutation p, PermuteByExpert(ids.data(), rows, 1, local));
      const std::vector<float> ones(rows, 1.0f);
      CAPPLAN_RETURN_IF_ERROR(moe->Plan(p, ones.data()));
      MeasurementRecord r;
      std::optional<CheckResult> cr;
      const bool check = !checked_small || (!checked_mid && rows >= 64);
      if (check) {
        if (checked_small) checked_mid = true;
        checked_small = true;
        // top_k 1 and weight 1: y[row] is the expert output of row `row`.
        CAPPLAN_RETURN_IF_ERROR(y.Poison());
        CAPPLAN_RETURN_IF_ERROR(moe->Run(x.get(), y.get()));
        if (cudaDeviceSynchronize() != cudaSuccess) return CudaLastError("moe check");
        const int nrows = std::min(rows, 4);
        std::vector<float> ref(static_cast<size_t>(nrows) * hidden), got(ref.size());
        CAPPLAN_RETURN_IF_ERROR(ExpertForwardCpu(one.experts[0], xf.data(), nrows, ref.data()));
        std::vector<uint16_t> out;
        CAPPLAN_RETURN_IF_ERROR(y.Download(&out));
        for (size_t j = 0; j < got.size(); ++j) got[j] = Bf16BitsToFloat(out[j]);
        double rms = 0;
        for (float v : ref) rms += static_cast<double>(v) * v;
        rms = std::sqrt(rms / ref.size());
        cr = Check(got, ref, 3e-2 * rms, 3e-2);  // as tests/kernels/moe/moe_gpu_test.cc
      }
      CAPPLAN_ASSIGN_OR_RETURN(TimingStats t,
                               TimeCuda([&] { return moe->RunExperts(x.get()); },
                                        {opt.timing_warmup, opt.timing_repeats, true}));
      r = MakeRecord(f, "own_wmma_gather_gateup_silu_down", todo[i], rows, hidden, inter, local,
                     p.TouchedExperts(), mo.top_k, model.int4_group, t);
      if (cr) {
        r.max_abs_err = cr->max_abs_err;
        r.check = cr->pass ? "pass" : "fail";
      } else {
        r.check = "skipped";
      }
      sink->Add(std::move(r));
    }
  }
  return Status::Ok();
}

#endif  // CAPPLAN_HAVE_CUDA

Status MoeSuite(const SuiteOptions& opt, MeasurementSink* sink) {
  CAPPLAN_ASSIGN_OR_RETURN(SweepShapes shapes, LoadDefaultSweepShapes());
  if (opt.dry_run) return DrySuite(opt, shapes, sink);
#ifdef CAPPLAN_HAVE_CUDA
  const std::vector<int>& ts = opt.quick ? shapes.quick_m_values : shapes.m_values;
  for (const SweepModel& m : shapes.models) {
    CAPPLAN_RETURN_IF_ERROR(DeviceModel(opt, m, ts, sink).WithPrefix(m.name + ".moe"));
  }
  return Status::Ok();
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
