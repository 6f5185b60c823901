#include "sim/energy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

namespace capplan::sim {

double CapexUsdPerGpuHour(double capex_usd_per_gpu, double amortization_years) {
  return capex_usd_per_gpu / (amortization_years * kHoursPerYear);
}

namespace {

// Stretches the step's time in `bound` by `factor`, the step's seconds with
// it, and the op-class, draft and verify times in proportion to the
// non-overhead time.
void Stretch(Bound bound, double factor, StepCost* c) {
  const int b = static_cast<int>(bound);
  const double added = c->bound_seconds[b] * (factor - 1);
  if (added <= 0) return;
  const int ovh = static_cast<int>(Bound::kOverhead);
  const double before = c->seconds - c->bound_seconds[ovh];
  c->bound_seconds[b] += added;
  c->seconds += added;
  const double r = before > 0 ? (c->seconds - c->bound_seconds[ovh]) / before : 1.0;
  const int ovh_class = static_cast<int>(models::OpClass::kOverhead);
  for (int i = 0; i < kNumOpClasses; ++i) {
    if (i != ovh_class) c->class_seconds[i] *= r;
  }
  c->verify_seconds *= r;
  c->draft_seconds *= r;
  c->spec_verify_seconds *= r;
}

}  // namespace

hw::Utilization KernelUtilization(const StepCost& c) {
  const double kernel_s = c.bound_seconds[static_cast<int>(Bound::kCompute)] +
                          c.bound_seconds[static_cast<int>(Bound::kMemory)];
  if (kernel_s <= 0) return {};
  return {c.tensor_peak_seconds / kernel_s, c.hbm_peak_seconds / kernel_s};
}

void ChargeStepPower(const hw::PowerModel& power, double limit_w, StepCost* c) {
  if (!power.present) return;
  const double kernel_w = power.KernelWatts(KernelUtilization(*c));
  const double kernel_f = power.CapTimeFactor(kernel_w, limit_w);
  Stretch(Bound::kCompute, kernel_f, c);
  Stretch(Bound::kMemory, kernel_f, c);
  Stretch(Bound::kCommunication, power.CapTimeFactor(power.communication_w.value, limit_w), c);
  std::array<double, kNumBounds> watts{};
  watts[static_cast<int>(Bound::kCompute)] = hw::PowerModel::Capped(kernel_w, limit_w);
  watts[static_cast<int>(Bound::kMemory)] = hw::PowerModel::Capped(kernel_w, limit_w);
  watts[static_cast<int>(Bound::kCommunication)] =
      hw::PowerModel::Capped(power.communication_w.value, limit_w);
  watts[static_cast<int>(Bound::kOverhead)] =
      hw::PowerModel::Capped(power.overhead_w.value, limit_w);
  c->gpu_joules = 0;
  c->peak_gpu_w = 0;
  for (int b = 0; b < kNumBounds; ++b) {
    c->gpu_joules += c->bound_seconds[b] * watts[b];
    if (c->bound_seconds[b] > 0) c->peak_gpu_w = std::max(c->peak_gpu_w, watts[b]);
  }
}

PoolPower PoolPowerOf(const hw::PowerModel& power, const StepCost& busy, int gpus_per_replica,
                      int replicas, double span_s, double limit_w) {
  PoolPower p;
  if (!power.present || span_s <= 0) return p;
  const double g = gpus_per_replica;
  p.nodes = g * replicas / power.node_gpus.value;
  double busy_s = 0;
  for (int s = 0; s < kNumBounds; ++s) busy_s += busy.bound_seconds[s];
  // The span every GPU is there for, less the GPU-seconds its steps took.
  const double idle_gpu_s = std::max(0.0, g * replicas * span_s - g * busy_s);
  const double gpu_j = busy.gpu_joules * g + idle_gpu_s * power.idle_w.value;
  const double non_gpu_w = power.node_non_gpu_w.value * p.nodes;
  p.avg_gpu_w = gpu_j / span_s;
  p.avg_w = p.avg_gpu_w + non_gpu_w;
  const double gpus = g * replicas;
  p.peak_w = std::max(power.idle_w.value, busy.peak_gpu_w) * gpus + non_gpu_w;
  const double limit = limit_w > 0 ? std::min(limit_w, power.tdp_w.value) : power.tdp_w.value;
  p.provisioned_w = limit * gpus + non_gpu_w;
  return p;
}

void AddPoolPower(const PoolPower& p, schema::PoolSummary* out) {
  if (p.nodes <= 0) return;
  out->nodes = p.nodes;
  out->avg_kw = p.avg_w / 1e3;
  out->avg_gpu_kw = p.avg_gpu_w / 1e3;
  out->peak_kw = p.peak_w / 1e3;
  out->provisioned_kw = p.provisioned_w / 1e3;
}

namespace {

// Joules per token at `watts` producing `tokens_per_s`; null without tokens.
std::optional<double> PerToken(double watts, std::optional<double> tokens_per_s) {
  if (!tokens_per_s || *tokens_per_s <= 0) return std::nullopt;
  return watts / *tokens_per_s;
}

}  // namespace

void AddEnergySummary(const EnergySettings& e, schema::RunSummary* s) {
  if (e.capex_usd_per_gpu && e.amortization_years) {
    std::ostringstream note;
    note << "capex_usd_per_gpu " << *e.capex_usd_per_gpu << " over amortization_years "
         << *e.amortization_years << " of " << kHoursPerYear << " hours";
    s->notes["usd_per_gpu_hour"] = note.str();
  }
  double nodes = 0;
  double avg_kw = 0, gpu_kw = 0, peak_kw = 0, prov_kw = 0, peak_node_kw = 0;
  for (const schema::PoolSummary& p : s->pools) {
    if (!p.nodes) return;  // every pool needs the power model
    nodes += *p.nodes;
    avg_kw += *p.avg_kw;
    gpu_kw += *p.avg_gpu_kw;
    peak_kw += *p.peak_kw;
    prov_kw += *p.provisioned_kw;
    peak_node_kw = std::max(peak_node_kw, *p.peak_kw / *p.nodes);
  }
  if (nodes <= 0) return;
  s->pue = e.pue;
  s->nodes = nodes;
  s->avg_kw = avg_kw;
  s->peak_kw = peak_kw;
  s->avg_kw_per_node = avg_kw / nodes;
  s->peak_kw_per_node = peak_node_kw;
  s->provisioned_kw = prov_kw * e.pue;
  const double facility_w = avg_kw * 1e3 * e.pue;
  s->joules_per_output_token = PerToken(facility_w, s->output_throughput);
  s->joules_per_total_token = PerToken(facility_w, s->total_token_throughput);
  s->gpu_joules_per_output_token = PerToken(gpu_kw * 1e3, s->output_throughput);
  const double mw = s->provisioned_kw.value() / 1e3;
  if (s->output_throughput) s->output_tokens_per_s_per_mw = *s->output_throughput / mw;
  if (s->total_token_throughput) s->total_tokens_per_s_per_mw = *s->total_token_throughput / mw;
  s->notes["energy"] =
      "joules_per_*_token: facility energy (GPU boards at their per-state power, idle time at idle "
      "power, nodes' non-GPU power) times pue; gpu_joules_per_output_token: boards only; kW: IT "
      "power without pue; provisioned_kw: every GPU at its limit plus non-GPU power, times pue";
  if (!e.usd_per_kwh) return;
  s->usd_per_kwh = *e.usd_per_kwh;
  // J/token * 1e6 tokens / 3.6e6 J per kWh * USD per kWh.
  auto usd = [&](const std::optional<double>& j) -> std::optional<double> {
    if (!j) return std::nullopt;
    return *j * 1e6 / 3.6e6 * *e.usd_per_kwh;
  };
  s->electricity_usd_per_million_output_tokens = usd(s->joules_per_output_token);
  s->electricity_usd_per_million_total_tokens = usd(s->joules_per_total_token);
}

}  // namespace capplan::sim
