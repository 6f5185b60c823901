// What a run draws and what its energy costs. The profile's power model
// (hw/power.h) prices each step's draw from what the step does: its
// kernels' time at the floor draw plus the HBM and tensor terms of the
// datapath use the cost model priced (StepCost::hbm_peak_seconds and
// tensor_peak_seconds over the kernels' time, at most the board limit),
// its collectives' time at the communication draw and its host stalls at
// the overhead draw, on every GPU of the replica; the rest of the simulated
// span at idle power, and each node's non-GPU power (CPUs, NICs, switches,
// fans) all the time. Facility energy is that times the PUE. A board power
// limit (deployment.power_limit_w) slows a step's kernels when they would
// draw more than the limit, and holds their draw to it (ChargeStepPower).
//
// Summary keys (schema/run_summary.h): joules_per_output_token,
// joules_per_total_token (facility, PUE included), gpu_joules_per_output_token
// (boards only, what nvidia-smi and ML.ENERGY measure), avg_kw, peak_kw,
// avg_kw_per_node, peak_kw_per_node (IT power, no PUE), provisioned_kw
// (every node at its GPUs' limit plus non-GPU power, times PUE),
// {output,total}_tokens_per_s_per_mw (per provisioned MW), and with
// cost.usd_per_kwh electricity_usd_per_million_{output,total}_tokens.
#ifndef CAPPLAN_SIM_ENERGY_H_
#define CAPPLAN_SIM_ENERGY_H_

#include <optional>

#include "hw/power.h"
#include "schema/run_summary.h"
#include "sim/cost_model.h"

namespace capplan::sim {

// The PUE a scenario gets when its cost block names none: the industry
// average of the Uptime Institute Global Data Center Survey 2024 (1.56,
// https://uptimeinstitute.com/resources/research-and-reports/
// uptime-institute-global-data-center-survey-results-2024).
inline constexpr double kDefaultPue = 1.56;
inline constexpr double kHoursPerYear = 8760;

struct EnergySettings {
  double pue = kDefaultPue;
  std::optional<double> usd_per_kwh;  // null: no electricity cost figures
  // The capex basis of usd_per_gpu_hour, when the scenario gave one.
  std::optional<double> capex_usd_per_gpu, amortization_years;
};

// Capex spread evenly over the GPU's life, every hour of it.
double CapexUsdPerGpuHour(double capex_usd_per_gpu, double amortization_years);

// What one GPU of a step draws (hw::PowerModel::KernelWatts over the
// kernels' time from the step's datapath use), under a board power limit
// (limit_w > 0): kernels drawing more than the limit run slower by the
// model's CapTimeFactor, the step's seconds with them (op-class, draft and
// verify times grow in proportion to the non-overhead time), and draw the
// limit. Sets c->gpu_joules and c->peak_gpu_w. No-op without a power model.
void ChargeStepPower(const hw::PowerModel& power, double limit_w, StepCost* c);

// The utilization of a step's kernels (their seconds at the datasheet
// peaks over their priced seconds).
hw::Utilization KernelUtilization(const StepCost& c);

// One pool's draw over its simulated span.
struct PoolPower {
  // GPUs / GPUs per node: a deployment filling part of a node is charged
  // that share of the node's non-GPU power, and its per-node figures are
  // what a node full of such GPUs draws.
  double nodes = 0;
  double avg_gpu_w = 0;      // all the pool's GPU boards, averaged over the span
  double avg_w = 0;          // GPU boards and the nodes' non-GPU power
  double peak_w = 0;         // every node with its GPUs at the hottest step the run reached
  double provisioned_w = 0;  // every GPU at its limit plus non-GPU power (no PUE)
};

// `busy` sums the replicas' priced steps, each charged by ChargeStepPower
// (every GPU of a replica draws the step's power); a replica of
// `gpus_per_replica` GPUs is gpus_per_replica / node_gpus nodes.
PoolPower PoolPowerOf(const hw::PowerModel& power, const StepCost& busy, int gpus_per_replica,
                      int replicas, double span_s, double limit_w);

// Writes a pool's power into its summary part (kW).
void AddPoolPower(const PoolPower& p, schema::PoolSummary* out);

// The run's energy figures from its pools' power and its end-to-end
// throughputs (already in *s); nothing when no pool has power figures. A
// capex basis is noted under usd_per_gpu_hour_note either way.
void AddEnergySummary(const EnergySettings& e, schema::RunSummary* s);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_ENERGY_H_
