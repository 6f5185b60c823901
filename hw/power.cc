#include "hw/power.h"

#include <algorithm>
#include <cmath>

#include "hw/profile.h"

namespace capplan::hw {

namespace {

// {"value": V, "range": [LO, HI], "provenance": {...}}; LO <= V <= HI.
Status ReadFigure(JsonObject& parent, const char* key, PowerFigure* out, HardwareProfile* p,
                  double lo, double hi) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, parent.Child(key, true));
  CAPPLAN_RETURN_IF_ERROR(o.Get("value", &out->value, true));
  CAPPLAN_RETURN_IF_ERROR(o.CheckRange("value", out->value, lo, hi));
  std::vector<double> range;
  CAPPLAN_RETURN_IF_ERROR(o.Get("range", &range, true));
  if (range.size() != 2 || range[0] > out->value || out->value > range[1]) {
    return o.Error("range", "must be [lo, hi] with lo <= value <= hi: the span of its sources");
  }
  out->lo = range[0];
  out->hi = range[1];
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject pv, o.Child("provenance", true));
  Provenance prov;
  CAPPLAN_RETURN_IF_ERROR(pv.Get("kind", &prov.kind, true));
  CAPPLAN_RETURN_IF_ERROR(
      pv.CheckOneOf("kind", prov.kind, {"datasheet", "measured", "anchor", "default", "fitted"}));
  CAPPLAN_RETURN_IF_ERROR(pv.Get("source", &prov.source, true));
  CAPPLAN_RETURN_IF_ERROR(pv.Finish());
  p->provenance[std::string("power.") + key] = prov;
  return o.Finish();
}

}  // namespace

double PowerModel::KernelWatts(const Utilization& u) const {
  const double w = kernel_floor_w.value + hbm_w.value * std::clamp(u.hbm, 0.0, 1.0) +
                   tensor_w.value * std::clamp(u.tensor, 0.0, 1.0);
  return std::min(w, tdp_w.value);
}

double PowerModel::Capped(double watts, double limit_w) {
  return limit_w > 0 ? std::min(watts, limit_w) : watts;
}

double PowerModel::CapTimeFactor(double watts, double limit_w) const {
  if (limit_w <= 0 || watts <= limit_w) return 1.0;
  return std::pow(watts / limit_w, cap_rate_exponent.value);
}

Status ReadPowerModel(JsonObject& root, HardwareProfile* p) {
  if (!root.Has("power")) return Status::Ok();
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject o, root.Child("power", true));
  PowerModel& m = p->power;
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "tdp_w", &m.tdp_w, p, 1, 1e5));
  const double tdp = m.tdp_w.value;
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "idle_w", &m.idle_w, p, 0, tdp));
  const double idle = m.idle_w.value;
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "kernel_floor_w", &m.kernel_floor_w, p, idle, tdp));
  // A datapath's full-rate term may pass the board limit: the sum is capped
  // there (a dense GEMM at full rate would draw more than the board allows).
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "hbm_w", &m.hbm_w, p, 0, 4 * tdp));
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "tensor_w", &m.tensor_w, p, 0, 4 * tdp));
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "communication_w", &m.communication_w, p, idle, tdp));
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "overhead_w", &m.overhead_w, p, idle, tdp));
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "node_gpus", &m.node_gpus, p, 1, 1024));
  if (m.node_gpus.value != std::floor(m.node_gpus.value)) {
    return o.Error("node_gpus", "must be a whole number of GPUs");
  }
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "node_non_gpu_w", &m.node_non_gpu_w, p, 0, 1e6));
  CAPPLAN_RETURN_IF_ERROR(ReadFigure(o, "cap_rate_exponent", &m.cap_rate_exponent, p, 0, 4));
  m.present = true;
  return o.Finish();
}

}  // namespace capplan::hw
