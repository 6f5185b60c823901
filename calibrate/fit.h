// Fits the simulator's roofline cost model (sim/cost_model.h) to kernel
// measurements, one efficiency class at a time.
//
// Why the fit is linear: with eff(x) = max * x / (x + half) the roofline's
// two terms are linear in (1/max, half/max):
//   memory:  t = bytes / (hbm * eff(bytes)) = (bytes/hbm) / max + (1/hbm) * half / max
//            (a launch floor half/(hbm*max) plus bytes at the saturated rate)
//   compute: t = flops / (rate * eff(x))    = (flops/rate) / max + (flops/(rate*x)) * half / max
// so each curve is a 2-parameter least-squares problem. Times span orders of
// magnitude, so residuals are relative (rows weighted by 1/t), then refined by
// Gauss-Newton on log(t). Which term binds a record is decided by the current
// curves and re-decided after each refit until the assignment is stable.
#ifndef CAPPLAN_CALIBRATE_FIT_H_
#define CAPPLAN_CALIBRATE_FIT_H_

#include <map>
#include <string>
#include <vector>

#include "calibrate/measurements.h"
#include "hw/op_pricing.h"
#include "hw/profile.h"

namespace capplan::calibrate {

// One measured invocation, normalized for a class fit.
struct FitPoint {
  double t_s = 0;    // measured median, seconds
  double flops = 0;  // per invocation
  double bytes = 0;
  double rate = 1;  // FLOP/s of the compute dtype (W4A16: bf16 rate / (1 + dequant overhead))
  double x = 1;     // the class's compute shape variable (PROFILE.md)
  int record = -1;  // index into MeasurementSet::records (-1: synthetic)
  // HBM ceiling of the GPU the record ran on (0: the class fit's). With
  // `rate` from that GPU's profile too, a record from another GPU of the
  // same generation enters as a fraction of its own GPU's peak.
  double hbm = 0;
  std::string gpu_model;  // "H100", ... ("" when synthetic)
  int source = -1;        // index into MeasurementSet::sources (-1: synthetic)
};

// One source held out of a fit: its points predicted by the fit of every
// other source's points (by the base curves when no other source remains).
struct SourceHoldout {
  int source = -1;
  int points = 0;
  bool refitted = false;        // false: predicted by the base curves
  double median_rel_err = 0;    // of its points, held out
  double in_sample_median = 0;  // of its points, under the fit that saw them
};

struct CurveFit {
  bool fitted = false;
  double max = 0, half = 0;
  double lo = 0, hi = 0;  // range of the shape variable the curve was fitted on
  int points = 0;
  std::string note;  // why not fitted, or what was held fixed / clamped
};

struct ClassFit {
  std::string key;  // efficiency class: gemm_bf16, grouped_gemm, ...
  std::vector<FitPoint> points;
  CurveFit compute, memory;
  // Leave-one-out relative time error |pred - t| / t of every point (same
  // order as points), and its median and p90 (linear interpolation).
  std::vector<double> loo_rel_err;
  double loo_median = 0, loo_p90 = 0;
  // Relative error of the full fit on its own points (not LOO), for contrast.
  double fit_median = 0;
  // Leave-one-source-out: every source's points predicted by a fit that
  // never saw that source (the generalization a fit is judged by), and the
  // median over all points of that held-out error.
  std::vector<SourceHoldout> holdouts;
  double held_out_median = -1;  // -1: not computed
};

// Median / percentile with linear interpolation between order statistics
// (p in [0, 1]); 0 for an empty vector.
double Quantile(std::vector<double> v, double p);

// Predicted time of a point under the roofline with these curves.
double PredictSeconds(const FitPoint& p, const hw::EfficiencyCurve& compute,
                      const hw::EfficiencyCurve& memory, double hbm_bytes_per_s);

// Leave-one-out is exact for tables of up to kExactLooPoints records and
// kLooFolds-fold past that (fit.cc says how records are folded).
inline constexpr size_t kExactLooPoints = 64;
inline constexpr size_t kLooFolds = 16;

// Fits one class's two curves; `base` supplies the curve a subset too small
// to fit keeps. Computes leave-one-out errors unless `with_loo` is false.
ClassFit FitClass(const std::string& key, const std::vector<FitPoint>& points,
                  const hw::OpEfficiency& base, double hbm_bytes_per_s, bool with_loo = true);

// The op a kernel record measures, as hw/op_pricing.h prices it (the rule
// the simulator prices its own ops by, sim/cost_model.cc), chosen by the
// record's MeasuredOp alone; false and the reason when the simulator prices
// no such op (launch records fit the overheads instead, collectives are
// fitted apart).
bool PricingInputOf(const MeasuredKernel& k, hw::OpPricingInput* op, std::string* why);

// Fixed overheads from records of op_class "overhead":
//   kernel "kernel_launch": an empty kernel launched eagerly -> kernel_launch_s (median)
//   kernel "graph_launch" with shape.nodes: replay of a graph of N empty nodes
//     -> t = graph_launch_s + N * graph_node_s (least squares; needs 2 distinct N)
struct OverheadFit {
  bool kernel_launch = false, graph = false;
  double kernel_launch_s = 0, graph_launch_s = 0, graph_node_s = 0;
  int kernel_launch_points = 0, graph_points = 0;
  std::string note;
};

// A collective's bus bandwidth as a fraction of the NVLink per-direction
// rate of the GPU its records ran on (all-reduce ring: nccl-tests busbw).
struct CollectiveFit {
  bool fitted = false;
  double fraction = 0;  // of nvlink_bytes_per_s
  int points = 0;
  std::vector<int> records;  // indices into MeasurementSet::records
  std::string how;
};

struct CalibrationFit {
  std::map<std::string, ClassFit> classes;  // only classes with points
  // Kernel implementations (the profile's "kernels" tables) with records of
  // their own; a record naming an implementation fits only that table.
  std::map<std::string, ClassFit> kernels;
  CollectiveFit all_reduce;
  CollectiveFit all_reduce_nvls;  // NVLS records at the GPU counts NCCL uses it
  OverheadFit overheads;
  // GPU model -> how its records were normalized, for every model other
  // than the profile's own that entered a fit.
  std::map<std::string, std::string> cross_gpu;
  // Records not used, with the reason ("communication: collectives are not
  // fitted from single-GPU measurements").
  std::vector<std::pair<int, std::string>> unused;
  // Step records (MeasurementSet::steps) are not fitted yet: index, reason.
  std::vector<std::pair<int, std::string>> unused_steps;
  // Records that entered a fit, per source file (index into sources).
  std::vector<int> used_per_source;
};

// GPU model ("H100", "H800", "H200") -> the profile whose ceilings (HBM copy
// rate, datasheet FLOP rates, NVLink rate) normalize that GPU's records, and
// the sentence the provenance quotes ("H800: the H100's SMs and clocks").
struct GpuCeilings {
  const hw::HardwareProfile* profile = nullptr;
  std::string note;
};
using CeilingProfiles = std::map<std::string, GpuCeilings>;

// Maps every record to its class (hw/op_pricing.h, as the simulator prices
// that op) and fits each class. A record is priced against the ceilings of
// the GPU it ran on: the base profile's for its own GPU, `ceilings` for
// another GPU of the same generation, so an H100 result informs H200
// efficiency only as a fraction of the H100's own peak. Records of a GPU
// with no ceilings, and step records (calibrate/step_fit.h fits those), are
// listed as unused with the reason. Nothing usable is an error unless the
// inputs include public records; then the fit is empty and the caller keeps
// the base.
Result<CalibrationFit> FitMeasurements(const MeasurementSet& set, const hw::HardwareProfile& base,
                                       const CeilingProfiles& ceilings = {});

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_FIT_H_
