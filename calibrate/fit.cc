#include "calibrate/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "calibrate/fit_derived.h"
#include "calibrate/sig_digits.h"
#include "hw/formats.h"
#include "hw/op_pricing.h"

namespace capplan::calibrate {

namespace {

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// A record's dtype as a format row: every FP8 variant a collector names
// ("fp8_block", "fp8_e4m3") is FP8, int32 accumulators price as fp32, and a
// name the table does not know (or none) as the 16-bit formats.
hw::FormatId FormatOf(const std::string& dtype) {
  if (StartsWith(dtype, "fp8")) return hw::FormatId::kFp8E4m3;
  if (dtype == "int32") return hw::FormatId::kFp32;
  auto id = hw::ParseFormat(dtype);
  return id.ok() ? *id : hw::FormatId::kBf16;
}

// A dense GEMM record: m rows through the weights.
bool DenseGemmOp(const MeasuredKernel& k, hw::OpPricingInput* op, std::string* why) {
  op->family = hw::OpFamily::kDenseGemm;
  op->m = static_cast<double>(k.Shape("m"));
  if (op->m <= 0) return *why = "dense_gemm record without shape.m", false;
  if (k.weight_dtype == "int8") {
    return *why = "no efficiency class prices W8A16 GEMMs (the simulator has none)", false;
  }
  return true;
}

// An MoE record: its rows over the experts they touch.
bool MoeOp(const MeasuredKernel& k, hw::OpPricingInput* op, std::string* why) {
  const int64_t rows = k.Shape("rows", k.Shape("tokens"));
  const int64_t groups = k.Shape("touched_experts");
  if (rows <= 0 || groups <= 0) {
    return *why = "moe record without shape.rows and shape.touched_experts", false;
  }
  op->family = hw::OpFamily::kGroupedGemm;
  op->m = static_cast<double>(rows);
  op->groups = static_cast<double>(groups);
  return true;
}

// An attention record, prefill or decode. The simulator prices attention at
// the 16-bit rate whatever its formats (models/ops_attention.cc), so an FP8
// attention kernel's table holds its efficiency as a fraction of that rate
// too.
void AttentionInput(const MeasuredKernel& k, bool prefill, hw::OpPricingInput* op) {
  op->compute = hw::FormatId::kBf16;
  const int64_t batch = std::max<int64_t>(k.Shape("batch", 1), 1);
  if (prefill) {
    const int64_t chunk = k.Shape("chunk", k.Shape("context"));
    op->family = hw::OpFamily::kAttentionPrefill;
    op->q_tokens = static_cast<double>(batch) * static_cast<double>(std::max<int64_t>(chunk, 1));
    return;
  }
  op->family = hw::OpFamily::kAttentionDecode;
  op->heads = static_cast<double>(std::max<int64_t>(k.Shape("q_heads", 1), 1));
  op->q_tokens = static_cast<double>(batch);
}

}  // namespace

// No default: a new MeasuredOp fails the build (-Wswitch) until it is
// priced or refused here.
bool PricingInputOf(const MeasuredKernel& k, hw::OpPricingInput* op, std::string* why) {
  op->weights = FormatOf(k.weight_dtype);
  op->compute = FormatOf(k.dtype);
  switch (k.op) {
    case MeasuredOp::kDenseGemm:
      return DenseGemmOp(k, op, why);
    case MeasuredOp::kMoe:
      return MoeOp(k, op, why);
    case MeasuredOp::kAttentionPrefill:
    case MeasuredOp::kAttentionDecode:
      AttentionInput(k, k.op == MeasuredOp::kAttentionPrefill, op);
      return true;
    case MeasuredOp::kKvAppend:  // the simulator's kKvAppend is elementwise
    case MeasuredOp::kElementwise:
      op->family = hw::OpFamily::kElementwise;
      op->m = static_cast<double>(std::max<int64_t>(k.Shape("tokens"), 1));
      return true;
    case MeasuredOp::kKvVerify:
      // The simulator's kKvVerify: one head per request in the batch.
      op->family = hw::OpFamily::kAttentionDecode;
      op->q_tokens = static_cast<double>(std::max<int64_t>(k.Shape("batch", 1), 1));
      return true;
    case MeasuredOp::kCommunication:
      return *why = "collectives are not fitted from these records (profile keeps them)", false;
    // Launch records fit the overheads (SortRecords), never a class.
    case MeasuredOp::kKernelLaunch:
    case MeasuredOp::kGraphLaunch:
    case MeasuredOp::kOtherOverhead:
      break;
  }
  return *why = "no efficiency class prices kernel '" + k.kernel + "'", false;
}

namespace {

// A GEMM's fitted efficiency is a fraction of the rate its record's math
// runs at, and the simulator reads it against the rate of the weight
// format's activations (hw/formats.json "activations", on the GPU's
// architecture). A record whose dtype names another rate (FP8 experts
// labelled BF16) would fit a table the simulator then applies to a peak
// twice as high, so it is refused rather than fitted.
bool SameRateAsSimulator(const MeasuredKernel& k, const hw::OpPricingInput& op,
                         const hw::OpPricing& pricing, const hw::HardwareProfile& p,
                         std::string* why) {
  if (op.family != hw::OpFamily::kDenseGemm && op.family != hw::OpFamily::kGroupedGemm) {
    return true;
  }
  const int arch = hw::ArchitectureIndex(p.architecture);
  hw::OpPricingInput as_priced = op;
  as_priced.compute = hw::Formats().RowOn(op.weights, arch).activations;
  const double simulator_rate = hw::PriceOp(as_priced, p, arch).peak_flops_per_s;
  if (simulator_rate == pricing.peak_flops_per_s) return true;
  *why = "the record multiplies in " + k.dtype + " but the simulator prices " +
         k.weight_dtype + " weights at the " +
         std::string(hw::FormatName(as_priced.compute)) +
         " rate; set the record's dtype to the format its kernel multiplies in";
  return false;
}

// The class sim/cost_model.cc prices this record's op with, its compute
// shape variable and rate; "" + reason when calibration cannot use it.
std::string Classify(const MeasuredKernel& k, const hw::HardwareProfile& p, FitPoint* fp,
                     std::string* why) {
  hw::OpPricingInput op;
  if (!PricingInputOf(k, &op, why)) return "";
  const hw::OpPricing pricing = hw::PriceOp(op, p);
  if (!SameRateAsSimulator(k, op, pricing, p, why)) return "";
  fp->x = pricing.x;
  fp->rate = pricing.peak_flops_per_s;
  return std::string(pricing.efficiency_class);
}

// Why a record of implementation `impl` (whose op is of class `cls`) cannot
// fit the base profile's table of that name; "" when it can. A record never
// calibrates a table assumed from another implementation, nor another class.
std::string KernelTableProblem(const hw::HardwareProfile& base, const std::string& impl,
                               const std::string& cls) {
  auto it = base.kernels.find(impl);
  if (it == base.kernels.end()) {
    return "implementation '" + impl + "' has no table in the base profile's kernels block "
           "(add one of class " + cls + " to fit it)";
  }
  if (it->second.assumed()) {
    return "the base profile assumes '" + impl + "' from '" + it->second.assumed_from +
           "': give it curves of its own to fit its records";
  }
  if (it->second.efficiency_class != cls) {
    return "the record's op is priced as " + cls + ", the table '" + impl + "' as " +
           it->second.efficiency_class;
  }
  return "";
}

// The records a fit uses, sorted by what they fit.
struct SortedRecords {
  std::map<std::string, std::vector<FitPoint>> by_class, by_kernel;
  std::vector<double> launch;
  std::vector<std::pair<double, double>> graph;  // nodes, seconds
  std::vector<int> bus;
  // The profile whose ceilings price each record: its own GPU's.
  std::vector<const hw::HardwareProfile*> gpu_of;
};

// "SM90" from "sm90".
std::string ArchName(const std::string& arch) {
  std::string up = arch;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up;
}

// How a record's GPU stands to the base's, by architecture.
std::string GenerationNote(const hw::HardwareProfile& gpu, const hw::HardwareProfile& base) {
  if (gpu.architecture == base.architecture) {
    return "same " + ArchName(base.architecture) + " generation";
  }
  return ArchName(gpu.architecture) + " records, " + ArchName(base.architecture) + " base";
}

// How records of `model` (priced on `g`, not the base's GPU) enter the fit.
std::string CrossGpuNote(const std::string& model, const hw::HardwareProfile& g,
                         const hw::HardwareProfile& base, const std::string& base_gpu,
                         const std::string& note) {
  return model + " records enter as fractions of " + g.name + "'s ceilings (HBM " +
         SigDigits(g.hbm_bytes_per_s / 1e12, 4) + " TB/s, BF16 " +
         SigDigits(g.bf16_flops_per_s / 1e12, 4) + ", FP8 " +
         SigDigits(g.fp8_flops_per_s / 1e12, 4) + " TFLOP/s), never as " + base_gpu + " times (" +
         GenerationNote(g, base) + ")" + (note.empty() ? "" : "; " + note);
}

// A kernel record as a point of its class's (or its implementation's)
// fit; "" when it is used, else why not.
std::string AddKernelPoint(const MeasurementSet& set, size_t i, const hw::HardwareProfile& base,
                           const std::string& base_gpu, const CeilingProfiles& ceilings,
                           SortedRecords* sorted, CalibrationFit* out) {
  const MeasuredKernel& k = set.records[i];
  const MeasurementSource& src = set.sources[k.source];
  const hw::HardwareProfile& gpu = *sorted->gpu_of[i];
  FitPoint fp;
  fp.t_s = k.median_us * 1e-6;
  fp.flops = k.flops;
  fp.bytes = k.bytes;
  fp.record = static_cast<int>(i);
  fp.hbm = gpu.hbm_bytes_per_s;
  fp.gpu_model = src.gpu_model;
  fp.source = k.source;
  std::string why;
  // Classified on its own GPU's profile: the FLOP rate is that GPU's.
  const std::string key = Classify(k, gpu, &fp, &why);
  if (key.empty()) return why;
  if (fp.flops <= 0 && fp.bytes <= 0) return "neither bytes nor flops: nothing to price";
  if (&gpu != &base) {
    out->cross_gpu[src.gpu_model] =
        CrossGpuNote(src.gpu_model, gpu, base, base_gpu, ceilings.at(src.gpu_model).note);
  }
  if (k.implementation.empty()) {
    sorted->by_class[key].push_back(fp);
    return "";
  }
  why = KernelTableProblem(base, k.implementation, key);
  if (why.empty()) sorted->by_kernel[k.implementation].push_back(fp);
  return why;
}

// Each record to what it fits (or to the unused list, with the reason): a
// public record of another GPU only with a profile of that GPU's ceilings.
SortedRecords SortRecords(const MeasurementSet& set, const hw::HardwareProfile& base,
                          const CeilingProfiles& ceilings, CalibrationFit* out) {
  SortedRecords sorted;
  sorted.gpu_of.assign(set.records.size(), &base);
  const std::string base_gpu = GpuModelOf(base.gpu);
  for (size_t i = 0; i < set.records.size(); ++i) {
    const MeasuredKernel& k = set.records[i];
    const MeasurementSource& src = set.sources[k.source];
    const int record = static_cast<int>(i);
    if (src.is_public && src.gpu_model != base_gpu) {
      auto c = ceilings.find(src.gpu_model);
      if (c == ceilings.end() || c->second.profile == nullptr ||
          !c->second.profile->has_cost_model) {
        out->unused.push_back({record, "public " + src.gpu_model + " record: informs " +
                                           (base_gpu.empty() ? base.gpu : base_gpu) +
                                           " efficiency only as a fraction of the " +
                                           src.gpu_model + "'s own peak; no profile with the " +
                                           src.gpu_model + "'s ceilings was given"});
        continue;
      }
      sorted.gpu_of[i] = c->second.profile;
    }
    if (k.timing == KernelTiming::kBusBandwidth) {
      sorted.bus.push_back(record);
      continue;
    }
    std::string why;
    if (k.op == MeasuredOp::kKernelLaunch) {
      sorted.launch.push_back(k.median_us * 1e-6);
    } else if (k.op == MeasuredOp::kGraphLaunch) {
      if (k.Shape("nodes") <= 0) {
        why = "graph_launch without shape.nodes";
      } else {
        sorted.graph.push_back({static_cast<double>(k.Shape("nodes")), k.median_us * 1e-6});
      }
    } else {
      why = AddKernelPoint(set, i, base, base_gpu, ceilings, &sorted, out);
    }
    if (why.empty()) {
      ++out->used_per_source[k.source];
    } else {
      out->unused.push_back({record, why});
    }
  }
  return sorted;
}

// Launch overheads: a kernel launch's median; a graph's fixed and per-node
// cost by least squares over at least two node counts.
void FitOverheads(const std::vector<double>& launch,
                  const std::vector<std::pair<double, double>>& graph, OverheadFit* o) {
  if (!launch.empty()) {
    o->kernel_launch = true;
    o->kernel_launch_s = Quantile(launch, 0.5);
    o->kernel_launch_points = static_cast<int>(launch.size());
  }
  std::set<double> nodes;
  for (const auto& g : graph) nodes.insert(g.first);
  if (nodes.size() >= 2) {
    Eigen::MatrixXd m(graph.size(), 2);
    Eigen::VectorXd t(graph.size());
    for (size_t i = 0; i < graph.size(); ++i) {
      m(i, 0) = 1, m(i, 1) = graph[i].first, t(i) = graph[i].second;
    }
    Eigen::Vector2d s = m.colPivHouseholderQr().solve(t);
    o->graph = true;
    o->graph_launch_s = std::max(0.0, s(0));
    o->graph_node_s = std::max(0.0, s(1));
    o->graph_points = static_cast<int>(graph.size());
  } else if (!graph.empty()) {
    o->note = "graph_launch records need at least 2 distinct node counts; graph overheads kept";
  }
}

}  // namespace

Result<CalibrationFit> FitMeasurements(const MeasurementSet& set, const hw::HardwareProfile& base,
                                       const CeilingProfiles& ceilings) {
  if (!base.has_cost_model) {
    return Status::Invalid(base.path + ": base profile has no cost-model parameters to refit");
  }
  CalibrationFit out;
  out.used_per_source.assign(set.sources.size(), 0);
  bool any_public = false;
  for (const MeasurementSource& s : set.sources) any_public |= s.is_public;
  const SortedRecords sorted = SortRecords(set, base, ceilings, &out);
  for (const auto& [key, pts] : sorted.by_class) {
    auto it = base.efficiency.find(key);
    if (it == base.efficiency.end()) return Status::Internal("no base curve for " + key);
    out.classes[key] = FitClass(key, pts, it->second, base.hbm_bytes_per_s);
  }
  for (const auto& [impl, pts] : sorted.by_kernel) {
    out.kernels[impl] = FitClass(impl, pts, base.kernels.at(impl).efficiency, base.hbm_bytes_per_s);
  }
  FitAllReduce(set, sorted.bus, sorted.gpu_of, &out);
  FitOverheads(sorted.launch, sorted.graph, &out.overheads);
  for (size_t i = 0; i < set.steps.size(); ++i) {
    out.unused_steps.push_back(
        {static_cast<int>(i), "step record (" + set.steps[i].step +
                                  "): per-step fixed costs are fitted from the step cases "
                                  "(capplan calibrate --public, calibrate/step_fit.h)"});
  }
  if (out.classes.empty() && !out.overheads.kernel_launch && !out.overheads.graph && !any_public) {
    return Status::Invalid("calibrate: no record could be used for any fit (" +
                           std::to_string(out.unused.size() + out.unused_steps.size()) +
                           " records unused)");
  }
  return out;
}

}  // namespace capplan::calibrate
