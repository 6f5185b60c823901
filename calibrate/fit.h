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
#include "hw/profile.h"

namespace capplan {

// One measured invocation, normalized for a class fit.
struct FitPoint {
  double t_s = 0;    // measured median, seconds
  double flops = 0;  // per invocation
  double bytes = 0;
  double rate = 1;  // FLOP/s of the compute dtype (W4A16: bf16 rate / (1 + dequant overhead))
  double x = 1;     // the class's compute shape variable (PROFILE.md)
  int record = -1;  // index into MeasurementSet::records (-1: synthetic)
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
};

// Median / percentile with linear interpolation between order statistics
// (p in [0, 1]); 0 for an empty vector.
double Quantile(std::vector<double> v, double p);

// Predicted time of a point under the roofline with these curves.
double PredictSeconds(const FitPoint& p, const EfficiencyCurve& compute,
                      const EfficiencyCurve& memory, double hbm_bytes_per_s);

// Fits one class's two curves; `base` supplies the curve a subset too small
// to fit keeps. Computes leave-one-out errors unless `with_loo` is false.
ClassFit FitClass(const std::string& key, const std::vector<FitPoint>& points,
                  const OpEfficiency& base, double hbm_bytes_per_s, bool with_loo = true);

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

struct CalibrationFit {
  std::map<std::string, ClassFit> classes;  // only classes with points
  OverheadFit overheads;
  // Records not used, with the reason ("communication: collectives are not
  // fitted from single-GPU measurements").
  std::vector<std::pair<int, std::string>> unused;
  // Step records (MeasurementSet::steps) are not fitted yet: index, reason.
  std::vector<std::pair<int, std::string>> unused_steps;
  // Records that entered a fit, per source file (index into sources).
  std::vector<int> used_per_source;
};

// Maps every record to its class (as sim/cost_model.cc prices that op) and
// fits each class against the base profile's ceilings. Public records
// (MEASUREMENTS.md) are listed as unused, with the reason, when they cannot
// be fitted yet: another GPU's kernel (it informs this GPU's efficiency only
// as a fraction of its own GPU's peak, which needs that GPU's profile), a
// bus bandwidth, a step record. Nothing usable is an error unless the inputs
// include public records; then the fit is empty and the caller keeps the base.
Result<CalibrationFit> FitMeasurements(const MeasurementSet& set, const HardwareProfile& base);

}  // namespace capplan

#endif  // CAPPLAN_CALIBRATE_FIT_H_
