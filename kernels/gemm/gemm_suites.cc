// Measurement suite "gemm": dense GEMMs over the shipped models' per-GPU
// shapes (sweep_shapes.json, TP8) and M from 1 to 16K.
//   gemm_bf16  variant cublaslt | own_wmma_reference   dtype bf16
//   gemm_fp8   variant cublaslt_per_tensor       dtype fp8  (FP8 tensor cores)
//   gemm_fp8   variant own_block128_reference    dtype bf16 (widened to BF16 MMAs),
//                                                weight_dtype fp8_block
//   gemm_w4a16 variant own_g<group>_sym          dtype bf16, weight_dtype int4
// The own kernels are the readable reference rung (gemm_cuda.h), labelled so
// that calibration never mistakes them for a format's production speed.
// One case per (shape, variant, M); a shape's host preparation runs once.
// bytes/flops: DenseGemmCost (gemm_cost.h). Device mode checks every variant
// against the float64 CPU reference on rows {0, M-1} at M = 1 and M = 64 and
// in smoke runs at every M (check "pass"/"fail"; other M: "skipped"). Dry mode runs the CPU
// references on a small shape and records CPU wall-clock times; its check
// compares the quantized path with the unquantized float64 GEMM.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm/gemm_cpu.h"
#include "kernels/gemm/sweep_shapes.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/check.h"
#include "kernels/harness/suite.h"
#include "kernels/harness/timing.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/gemm/device_weights.h"
#include "kernels/gemm/gemm_cuda.h"
#include "kernels/harness/cuda_timer.h"
#include "kernels/harness/device_buffer.h"
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

Status DryCase(const SuiteOptions& opt, int m, MeasurementSink* sink) {
  const int n = 256, k = 512;
  std::vector<float> w(static_cast<size_t>(n) * k);
  FillUniform(&w, opt.seed, 0.05f);
  {
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

const Variant* DeviceVariants(int group) {
  static const Variant g128[] = {
      {"gemm_bf16", "cublaslt", "bf16", "bf16", GemmWeightFormat::kBf16},
      {"gemm_bf16", "own_wmma_reference", "bf16", "bf16", GemmWeightFormat::kBf16},
      {"gemm_fp8", "cublaslt_per_tensor", "fp8", "fp8", GemmWeightFormat::kFp8PerTensor},
      {"gemm_fp8", "own_block128_reference", "bf16", "fp8_block", GemmWeightFormat::kFp8Block128},
      {"gemm_w4a16", "own_g128_sym", "bf16", "int4", GemmWeightFormat::kInt4},
  };
  static const Variant g32[] = {
      g128[0],
      g128[1],
      g128[2],
      g128[3],
      {"gemm_w4a16", "own_g32_sym", "bf16", "int4", GemmWeightFormat::kInt4},
  };
  return group == 32 ? g32 : g128;
}
constexpr int kNumDeviceVariants = 5;

bool IsCublas(const Variant& v) { return std::string(v.variant).rfind("cublaslt", 0) == 0; }

// One weight shape's operands for every variant: prepared on the host once
// (quantisation and INT4 prepack on one thread per variant) by the first
// case that needs them, counted against that case's deadline, and released
// when the shape's last case has run.
class GemmShapeContext {
 public:
  GemmShapeContext(const SweepModel& model, const SweepDense& d, int m_max, int pending)
      : model_(model), d_(d), m_max_(m_max), pending_(pending) {}

  Status Run(const SuiteOptions& opt, int vi, int m, MeasurementSink* sink) {
    Status st = Prepare(opt);
    if (st.ok()) st = RunPrepared(opt, vi, m, sink);
    if (--pending_ == 0) prepared_.reset();
    return st;
  }

 private:
  struct PerVariant {
    GemmWeights w;
    GemmActivations a;
    DeviceBuffer<uint16_t> w16, x16;
    DeviceBuffer<uint8_t> w8, x8;
    DeviceBuffer<float> wsc, xsc;
    DeviceWeightSet set;
  };
  struct Prepared {
    int sm_count = 0;
    std::unique_ptr<CublasLtGemm> lt;
    PerVariant v[kNumDeviceVariants];
    DeviceBuffer<uint16_t> y;
    DeviceBuffer<float> ws;
  };

  Status Prepare(const SuiteOptions& opt) {
    if (prepared_) return Status::Ok();
    auto p = std::make_unique<Prepared>();
    CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo dev, GetCudaDeviceInfo());
    p->sm_count = dev.sm_count;
    CAPPLAN_ASSIGN_OR_RETURN(p->lt, CublasLtGemm::Create());
    const int n = d_.n, k = d_.k, group = model_.int4_group;
    std::vector<float> wf(static_cast<size_t>(n) * k), xf(static_cast<size_t>(m_max_) * k);
    FillUniform(&wf, opt.seed + n + k, 1.0f / std::sqrt(static_cast<float>(k)));
    FillUniform(&xf, opt.seed + 7 * k, 1.0f);
    const Variant* vs = DeviceVariants(group);
    // Host preparation, one thread per variant.
    std::vector<Status> st(kNumDeviceVariants);
    {
      std::vector<std::thread> threads;
      for (int i = 0; i < kNumDeviceVariants; ++i) {
        threads.emplace_back([&, i] {
          Result<GemmWeights> w = QuantizeGemmWeights(wf.data(), n, k, vs[i].format, group);
          if (!w.ok()) {
            st[i] = w.status();
            return;
          }
          Result<GemmActivations> a = PrepareGemmActivations(xf.data(), m_max_, k, vs[i].format);
          if (!a.ok()) {
            st[i] = a.status();
            return;
          }
          p->v[i].w = std::move(*w);
          p->v[i].a = std::move(*a);
        });
      }
      for (auto& t : threads) t.join();
    }
    for (const Status& s : st) CAPPLAN_RETURN_IF_ERROR(s);
    for (int i = 0; i < kNumDeviceVariants; ++i) {
      CAPPLAN_RETURN_IF_ERROR(Upload(vs[i], &p->v[i]).WithPrefix(vs[i].variant));
    }
    CAPPLAN_RETURN_IF_ERROR(p->y.Allocate(static_cast<size_t>(m_max_) * n));
    prepared_ = std::move(p);
    return Status::Ok();
  }

  static Status Upload(const Variant& v, PerVariant* pv) {
    if (IsCublas(v) && v.format == GemmWeightFormat::kBf16) {
      CAPPLAN_RETURN_IF_ERROR(pv->w16.Upload(Bits(pv->w.bf16)));
    } else if (IsCublas(v)) {
      CAPPLAN_RETURN_IF_ERROR(pv->w8.Upload(pv->w.fp8.codes));
      CAPPLAN_RETURN_IF_ERROR(pv->wsc.Upload(pv->w.fp8.scales));
    } else {
      CAPPLAN_ASSIGN_OR_RETURN(pv->set, UploadWeightSet({&pv->w}));
    }
    if (pv->a.bf16.empty()) {
      CAPPLAN_RETURN_IF_ERROR(pv->x8.Upload(pv->a.fp8.codes));
      CAPPLAN_RETURN_IF_ERROR(pv->xsc.Upload(pv->a.fp8.scales));
    } else {
      CAPPLAN_RETURN_IF_ERROR(pv->x16.Upload(Bits(pv->a.bf16)));
    }
    return Status::Ok();
  }

  Status RunPrepared(const SuiteOptions& opt, int vi, int m, MeasurementSink* sink) {
    Prepared& p = *prepared_;
    PerVariant& pv = p.v[vi];
    const Variant& v = DeviceVariants(model_.int4_group)[vi];
    const int n = d_.n, k = d_.k;
    GroupedGemmArgs g;
    std::function<Status()> launch;
    if (IsCublas(v) && v.format == GemmWeightFormat::kBf16) {
      launch = [&] { return p.lt->Bf16(pv.x16.get(), pv.w16.get(), p.y.get(), m, n, k); };
    } else if (IsCublas(v)) {
      launch = [&] {
        return p.lt->Fp8PerTensor(pv.x8.get(), pv.xsc.get(), pv.w8.get(), pv.wsc.get(), p.y.get(),
                                  m, n, k);
      };
    } else {
      pv.set.Bind(&g);
      g.m = m;
      g.x_bf16 = pv.x16.get();
      g.x_fp8 = pv.x8.get();
      g.x_scales = pv.xsc.get();
      g.y = p.y.get();
      g.split_k = ChooseSplitK(m, n, k, p.sm_count);
      if (g.split_k > 1) {
        const size_t need = static_cast<size_t>(g.split_k) * m * n;
        if (p.ws.size() < need) CAPPLAN_RETURN_IF_ERROR(p.ws.Allocate(need));
        g.workspace = p.ws.get();
      }
      launch = [&g] { return LaunchGroupedGemm(g); };
    }
    // A library without an algorithm for a shape (cuBLASLt FP8 at tiny M,
    // say) fails here: the driver records the case as an error and goes on.
    CAPPLAN_RETURN_IF_ERROR(launch());
    std::optional<CheckResult> cr;
    if (opt.ForceCheck() || m == 1 || m == 64) {
      CAPPLAN_RETURN_IF_ERROR(p.y.Poison());
      CAPPLAN_RETURN_IF_ERROR(launch());
      CAPPLAN_RETURN_IF_ERROR(CudaLastError("gemm check run"));
      if (cudaDeviceSynchronize() != cudaSuccess) return CudaLastError("gemm check sync");
      std::vector<int> rows = {0};
      if (m > 1) rows.push_back(m - 1);
      CAPPLAN_ASSIGN_OR_RETURN(CheckResult c, CheckRows(pv.w, pv.a, rows, p.y, n));
      cr = c;
    }
    CAPPLAN_ASSIGN_OR_RETURN(
        TimingStats t, TimeCuda(launch, {opt.timing_warmup, opt.timing_repeats, opt.flush_l2}));
    MeasurementRecord r = MakeRecord(v, m, n, k, model_.int4_group, t);
    if (g.split_k > 1) r.variant += "_splitk" + std::to_string(g.split_k);
    SetCheck(&r, cr);
    sink->Add(std::move(r));
    return Status::Ok();
  }

  SweepModel model_;
  SweepDense d_;
  int m_max_;
  int pending_;
  std::unique_ptr<Prepared> prepared_;
};

// Mission priority: the mission's models' FP8 and W4A16 weights at decode M.
int GemmPriority(const std::string& model, const Variant& v, int m) {
  const bool mission_model = model == "kimi-k2.6" || model == "glm-5.2";
  const bool fmt = v.format == GemmWeightFormat::kInt4 ||
                   v.format == GemmWeightFormat::kFp8PerTensor ||
                   v.format == GemmWeightFormat::kFp8Block128;
  if (mission_model && fmt && m <= 64) return kMissionPriority;
  return m > 4096 ? kLatePriority : kSweepPriority;
}

std::vector<SuiteCase> DeviceCases(const SuiteOptions& opt, const SweepShapes& shapes) {
  std::vector<int> ms = opt.quick ? shapes.quick_m_values : shapes.m_values;
  if (opt.smoke) ms = {1, 64};
  std::vector<SuiteCase> out;
  for (const SweepModel& model : shapes.models) {
    for (const SweepDense& d : model.dense) {
      std::vector<int> todo;
      for (int m : ms) {
        if (opt.Selected(Label(model.name, d.name, m))) todo.push_back(m);
      }
      if (todo.empty()) continue;
      auto ctx = std::make_shared<GemmShapeContext>(
          model, d, todo.back(), kNumDeviceVariants * static_cast<int>(todo.size()));
      const Variant* vs = DeviceVariants(model.int4_group);
      for (int m : todo) {
        for (int vi = 0; vi < kNumDeviceVariants; ++vi) {
          SuiteCase c;
          c.label = Label(model.name, d.name, m) + "." + vs[vi].variant;
          c.kernel = vs[vi].kernel;
          c.op_class = "dense_gemm";
          c.priority = GemmPriority(model.name, vs[vi], m);
          c.run = [ctx, vi, m](const SuiteOptions& o, MeasurementSink* sink) {
            return ctx->Run(o, vi, m, sink);
          };
          out.push_back(std::move(c));
        }
      }
      if (opt.smoke) return out;  // one shape: every variant at M = 1 and 64
    }
  }
  return out;
}

#endif  // CAPPLAN_HAVE_CUDA

Result<std::vector<SuiteCase>> GemmSuite(const SuiteOptions& opt) {
  CAPPLAN_ASSIGN_OR_RETURN(SweepShapes shapes, LoadDefaultSweepShapes());
  if (opt.dry_run) {
    std::vector<SuiteCase> out;
    for (int m : shapes.dry_m_values) {
      if (!opt.Selected("dry.m" + std::to_string(m))) continue;
      SuiteCase c;
      c.label = "dry.m" + std::to_string(m);
      c.kernel = "gemm";
      c.op_class = "dense_gemm";
      c.run = [m](const SuiteOptions& o, MeasurementSink* sink) { return DryCase(o, m, sink); };
      out.push_back(std::move(c));
    }
    return out;
  }
#ifdef CAPPLAN_HAVE_CUDA
  return DeviceCases(opt, shapes);
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
