// Measurement suite "gemm": dense GEMMs over the shipped models' per-GPU
// shapes (sweep_shapes.json, TP8) and M from 1 to 16K.
//   gemm_bf16  variant cublaslt | own_wmma       dtype bf16
//   gemm_fp8   variant cublaslt_per_tensor       dtype fp8  (FP8 tensor cores)
//   gemm_fp8   variant own_block128              dtype bf16 (widened to BF16 MMAs),
//                                                weight_dtype fp8_block
//   gemm_w4a16 variant own_g<group>_sym          dtype bf16, weight_dtype int4
// bytes/flops: DenseGemmCost (gemm_cost.h). Device mode checks every variant
// against the float64 CPU reference on rows {0, M-1} at the smallest M and
// at M = 64 (check "pass"/"fail"; other M: "skipped"). Dry mode runs the CPU
// references on a small shape and records CPU wall-clock times; its check
// compares the quantized path with the unquantized float64 GEMM.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/sweep_shapes.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/check.h"
#include "kernels/harness/suite.h"
#include "kernels/harness/timing.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/gemm/device_buffer.h"
#include "kernels/gemm/device_weights.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/harness/cuda_timer.h"
#endif

namespace capplan::kernels {
namespace {

// Cheap uniform [-scale, scale) fill (xorshift32): host preparation of
// 100M-element operands must not dominate the device session.
void FillUniform(std::vector<float>* v, uint32_t seed, float scale) {
  uint32_t s = seed ? seed : 1u;
  for (float& x : *v) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x = scale * (static_cast<float>(s) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

struct Variant {
  const char* kernel;
  const char* variant;
  const char* dtype;
  const char* weight_dtype;
  GemmWeightFormat format;
};

MeasurementRecord MakeRecord(const Variant& v, int m, int n, int k, int group,
                             const TimingStats& t) {
  MeasurementRecord r;
  r.kernel = v.kernel;
  r.op_class = "dense_gemm";
  r.variant = v.variant;
  r.dtype = v.dtype;
  r.weight_dtype = v.weight_dtype;
  r.shape = {{"m", m}, {"n", n}, {"k", k}};
  if (v.format == GemmWeightFormat::kInt4) r.shape.push_back({"group", group});
  r.timing = t;
  const GemmCost c = DenseGemmCost(m, n, k, v.format, group);
  r.bytes = c.bytes();
  r.flops = c.flops;
  return r;
}

[[maybe_unused]] std::string Label(const std::string& model, const std::string& shape, int m) {
  return model + "." + shape + ".m" + std::to_string(m);
}

Status DrySuite(const SuiteOptions& opt, const SweepShapes& shapes, MeasurementSink* sink) {
  const int n = 256, k = 512;
  std::vector<float> w(static_cast<size_t>(n) * k);
  FillUniform(&w, opt.seed, 0.05f);
  for (int m : shapes.dry_m_values) {
    if (!opt.Selected("dry.m" + std::to_string(m)) || opt.OutOfTime()) continue;
    std::vector<float> x(static_cast<size_t>(m) * k), exact(static_cast<size_t>(m) * n);
    FillUniform(&x, opt.seed + m, 1.0f);
    GemmCpuExact(w.data(), x.data(), m, n, k, exact.data());
    const Variant variants[] = {
        {"gemm_bf16", "cpu_reference", "bf16", "bf16", GemmWeightFormat::kBf16},
        {"gemm_fp8", "cpu_reference_per_tensor", "fp8", "fp8", GemmWeightFormat::kFp8PerTensor},
        {"gemm_fp8", "cpu_reference_block128", "bf16", "fp8_block", GemmWeightFormat::kFp8Block128},
        {"gemm_w4a16", "cpu_reference_g128_sym", "bf16", "int4", GemmWeightFormat::kInt4},
    };
    // Documented bounds vs the unquantized GEMM (tests/kernels/gemm/gemm_cpu_test.cc).
    const double bound[] = {4e-3, 0.08, 0.08, 0.2};
    for (int i = 0; i < 4; ++i) {
      const Variant& v = variants[i];
      CAPPLAN_ASSIGN_OR_RETURN(GemmWeights q, QuantizeGemmWeights(w.data(), n, k, v.format, 128));
      std::vector<float> y(exact.size());
      Status st;
      const TimingStats t = TimeCpu([&] { st = GemmCpu(q, x.data(), m, y.data()); }, 1, 3);
      CAPPLAN_RETURN_IF_ERROR(st);
      MeasurementRecord r = MakeRecord(v, m, n, k, 128, t);
      const CheckResult c = Check(y, exact, 1e30, 0.0);  // only for max_abs_err
      r.max_abs_err = c.max_abs_err;
      r.check = RelativeL2Error(y.data(), exact.data(), y.size()) < bound[i] ? "pass" : "fail";
      sink->Add(std::move(r));
    }
  }
  return Status::Ok();
}

#ifdef CAPPLAN_HAVE_CUDA

// Activations restricted to some rows (same scales), for row-sampled checks.
GemmActivations SliceRows(const GemmActivations& a, const std::vector<int>& rows) {
  GemmActivations s;
  s.format = a.format;
  s.m = static_cast<int>(rows.size());
  s.k = a.k;
  if (!a.bf16.empty()) {
    for (int r : rows) {
      s.bf16.insert(s.bf16.end(), a.bf16.begin() + static_cast<size_t>(r) * a.k,
                    a.bf16.begin() + static_cast<size_t>(r + 1) * a.k);
    }
  } else {
    s.fp8 = a.fp8;
    s.fp8.rows = s.m;
    s.fp8.codes.clear();
    for (int r : rows) {
      s.fp8.codes.insert(s.fp8.codes.end(), a.fp8.codes.begin() + static_cast<size_t>(r) * a.k,
                         a.fp8.codes.begin() + static_cast<size_t>(r + 1) * a.k);
    }
    if (a.fp8.blocking.block_rows == 1) {  // per-token groups: slice the scale rows
      s.fp8.scale_rows = s.m;
      s.fp8.scales.clear();
      for (int r : rows) {
        s.fp8.scales.insert(s.fp8.scales.end(),
                            a.fp8.scales.begin() + static_cast<size_t>(r) * a.fp8.scale_cols,
                            a.fp8.scales.begin() + static_cast<size_t>(r + 1) * a.fp8.scale_cols);
      }
    }
  }
  return s;
}

std::vector<uint16_t> Bits(const std::vector<Bf16>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].bits;
  return out;
}

// Compares rows `rows` of the device output with the CPU reference.
Result<CheckResult> CheckRows(const GemmWeights& w, const GemmActivations& a,
                              const std::vector<int>& rows, const DeviceBuffer<uint16_t>& y,
                              int n) {
  const GemmActivations s = SliceRows(a, rows);
  std::vector<float> ref(static_cast<size_t>(s.m) * n), got(ref.size());
  CAPPLAN_RETURN_IF_ERROR(GemmCpuPrepared(w, s, ref.data()));
  std::vector<uint16_t> out;
  CAPPLAN_RETURN_IF_ERROR(y.Download(&out));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0; j < n; ++j) {
      got[i * n + j] = Bf16BitsToFloat(out[static_cast<size_t>(rows[i]) * n + j]);
    }
  }
  double rms = 0;
  for (float r : ref) rms += static_cast<double>(r) * r;
  rms = std::sqrt(rms / ref.size());
  return Check(got, ref, 2e-2 * rms, 2e-2);  // as tests/kernels/gemm/gemm_gpu_test.cc
}

Status DeviceShape(const SuiteOptions& opt, const SweepModel& model, const SweepDense& d,
                   const std::vector<int>& ms, CublasLtGemm* lt, int sm_count,
                   MeasurementSink* sink) {
  std::vector<int> todo;
  for (int m : ms) {
    if (opt.Selected(Label(model.name, d.name, m))) todo.push_back(m);
  }
  if (todo.empty() || opt.OutOfTime()) return Status::Ok();
  const int n = d.n, k = d.k, group = model.int4_group;
  const int m_max = todo.back();
  std::vector<float> wf(static_cast<size_t>(n) * k), xf(static_cast<size_t>(m_max) * k);
  FillUniform(&wf, opt.seed + n + k, 1.0f / std::sqrt(static_cast<float>(k)));
  FillUniform(&xf, opt.seed + 7 * k, 1.0f);
  const Variant variants[] = {
      {"gemm_bf16", "cublaslt", "bf16", "bf16", GemmWeightFormat::kBf16},
      {"gemm_bf16", "own_wmma", "bf16", "bf16", GemmWeightFormat::kBf16},
      {"gemm_fp8", "cublaslt_per_tensor", "fp8", "fp8", GemmWeightFormat::kFp8PerTensor},
      {"gemm_fp8", "own_block128", "bf16", "fp8_block", GemmWeightFormat::kFp8Block128},
      {"gemm_w4a16", group == 32 ? "own_g32_sym" : "own_g128_sym", "bf16", "int4",
       GemmWeightFormat::kInt4},
  };
  DeviceBuffer<uint16_t> y;
  CAPPLAN_RETURN_IF_ERROR(y.Allocate(static_cast<size_t>(m_max) * n));
  DeviceBuffer<float> ws;
  for (const Variant& v : variants) {
    if (opt.OutOfTime()) break;
    CAPPLAN_ASSIGN_OR_RETURN(GemmWeights w, QuantizeGemmWeights(wf.data(), n, k, v.format, group));
    CAPPLAN_ASSIGN_OR_RETURN(GemmActivations a,
                             PrepareGemmActivations(xf.data(), m_max, k, v.format));
    const bool cublas = std::string(v.variant).rfind("cublaslt", 0) == 0;
    DeviceBuffer<uint16_t> w16, x16;
    DeviceBuffer<uint8_t> w8, x8;
    DeviceBuffer<float> wsc, xsc;
    DeviceWeightSet set;
    if (cublas && v.format == GemmWeightFormat::kBf16) {
      CAPPLAN_RETURN_IF_ERROR(w16.Upload(Bits(w.bf16)));
    } else if (cublas) {
      CAPPLAN_RETURN_IF_ERROR(w8.Upload(w.fp8.codes));
      CAPPLAN_RETURN_IF_ERROR(wsc.Upload(w.fp8.scales));
    } else {
      CAPPLAN_ASSIGN_OR_RETURN(set, UploadWeightSet({&w}));
    }
    if (a.bf16.empty()) {
      CAPPLAN_RETURN_IF_ERROR(x8.Upload(a.fp8.codes));
      CAPPLAN_RETURN_IF_ERROR(xsc.Upload(a.fp8.scales));
    } else {
      CAPPLAN_RETURN_IF_ERROR(x16.Upload(Bits(a.bf16)));
    }
    for (int m : todo) {
      if (opt.OutOfTime()) break;
      GroupedGemmArgs g;
      std::function<Status()> launch;
      if (cublas && v.format == GemmWeightFormat::kBf16) {
        launch = [&, m] { return lt->Bf16(x16.get(), w16.get(), y.get(), m, n, k); };
      } else if (cublas) {
        launch = [&, m] {
          return lt->Fp8PerTensor(x8.get(), xsc.get(), w8.get(), wsc.get(), y.get(), m, n, k);
        };
      } else {
        set.Bind(&g);
        g.m = m;
        g.x_bf16 = x16.get();
        g.x_fp8 = x8.get();
        g.x_scales = xsc.get();
        g.y = y.get();
        g.split_k = ChooseSplitK(m, n, k, sm_count);
        if (g.split_k > 1) {
          const size_t need = static_cast<size_t>(g.split_k) * m * n;
          if (ws.size() < need) CAPPLAN_RETURN_IF_ERROR(ws.Allocate(need));
          g.workspace = ws.get();
        }
        launch = [&g] { return LaunchGroupedGemm(g); };
      }
      MeasurementRecord r;
      // A library without an algorithm for a shape (cuBLASLt FP8 at tiny M,
      // say) is a finding, not a reason to abort the sweep.
      if (Status probe = launch(); !probe.ok()) {
        if (probe.code() != StatusCode::kUnavailable) return probe;
        std::fprintf(stderr, "gemm: %s %s m=%d n=%d k=%d skipped: %s\n", v.kernel, v.variant, m, n,
                     k, probe.message().c_str());
        continue;
      }
      const bool check = m == todo.front() || m == 64;
      std::optional<CheckResult> cr;
      if (check) {
        CAPPLAN_RETURN_IF_ERROR(y.Poison());
        CAPPLAN_RETURN_IF_ERROR(launch());
        CAPPLAN_RETURN_IF_ERROR(CudaLastError("gemm check run"));
        if (cudaDeviceSynchronize() != cudaSuccess) return CudaLastError("gemm check sync");
        std::vector<int> rows = {0};
        if (m > 1) rows.push_back(m - 1);
        CAPPLAN_ASSIGN_OR_RETURN(CheckResult c, CheckRows(w, a, rows, y, n));
        cr = c;
      }
      CAPPLAN_ASSIGN_OR_RETURN(TimingStats t,
                               TimeCuda(launch, {opt.timing_warmup, opt.timing_repeats, true}));
      r = MakeRecord(v, m, n, k, group, t);
      if (g.split_k > 1) r.variant += "_splitk" + std::to_string(g.split_k);
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

Status DeviceSuite(const SuiteOptions& opt, const SweepShapes& shapes, MeasurementSink* sink) {
  CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo dev, GetCudaDeviceInfo());
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<CublasLtGemm> lt, CublasLtGemm::Create());
  const std::vector<int>& ms = opt.quick ? shapes.quick_m_values : shapes.m_values;
  for (const SweepModel& model : shapes.models) {
    for (const SweepDense& d : model.dense) {
      CAPPLAN_RETURN_IF_ERROR(DeviceShape(opt, model, d, ms, lt.get(), dev.sm_count, sink)
                                  .WithPrefix(model.name + "." + d.name));
    }
  }
  return Status::Ok();
}

#endif  // CAPPLAN_HAVE_CUDA

Status GemmSuite(const SuiteOptions& opt, MeasurementSink* sink) {
  CAPPLAN_ASSIGN_OR_RETURN(SweepShapes shapes, LoadDefaultSweepShapes());
  if (opt.dry_run) return DrySuite(opt, shapes, sink);
#ifdef CAPPLAN_HAVE_CUDA
  return DeviceSuite(opt, shapes, sink);
#else
  return Status::Unavailable("gemm suite: this build has no CUDA kernels; use --dry-run");
#endif
}

}  // namespace

void RegisterGemmSuites() {
  RegisterSuite("gemm", GemmSuite,
                "dense GEMMs (bf16 cuBLASLt/own, fp8 per-tensor cuBLASLt, fp8 128x128 own, "
                "w4a16 own) over the shipped models' TP8 shapes, M 1..16K");
}

}  // namespace capplan::kernels
