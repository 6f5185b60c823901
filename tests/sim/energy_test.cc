// Energy accounting by hand: a pool's draw from its steps' time per bound,
// idle time and non-GPU power; a power limit on a step; the run's figures
// per token, per node and per provisioned MW; the capex rate.
#include "sim/energy.h"

#include <gtest/gtest.h>

#include <cmath>

namespace capplan::sim {
namespace {

hw::PowerFigure F(double v) { return {v, v, v}; }

hw::PowerModel Model() {
  hw::PowerModel m;
  m.present = true;
  m.tdp_w = F(700);
  m.idle_w = F(100);
  m.state_w = {F(600), F(300), F(200), F(150)};  // compute, memory, communication, overhead
  m.node_gpus = F(8);
  m.node_non_gpu_w = F(2000);
  m.cap_rate_exponent = F(0.5);
  return m;
}

StepCost Busy() {
  StepCost c;
  c.bound_seconds = {10, 20, 5, 5};
  c.seconds = 40;
  c.class_seconds[static_cast<int>(models::OpClass::kOverhead)] = 5;
  c.class_seconds[0] = 35;
  return c;
}

TEST(Energy, PoolPowerChargesEachBoundIdleTimeAndTheNodes) {
  // 2 replicas of 8 GPUs over 100 s; the replicas' steps took 40 s.
  const PoolPower p = PoolPowerOf(Model(), Busy(), 8, 2, 100, 0);
  EXPECT_DOUBLE_EQ(p.nodes, 2);
  // Busy: 8 x (10*600 + 20*300 + 5*200 + 5*150) = 110,000 J; idle: (1600 -
  // 320) GPU-s * 100 W = 128,000 J; over 100 s: 2,380 W.
  EXPECT_DOUBLE_EQ(p.avg_gpu_w, 2380);
  EXPECT_DOUBLE_EQ(p.avg_w, 2380 + 2 * 2000);
  EXPECT_DOUBLE_EQ(p.peak_w, 600 * 16 + 4000);
  EXPECT_DOUBLE_EQ(p.provisioned_w, 700 * 16 + 4000);
  // A limit caps the hottest state and the provisioned power.
  const PoolPower capped = PoolPowerOf(Model(), Busy(), 8, 2, 100, 400);
  EXPECT_DOUBLE_EQ(capped.peak_w, 400 * 16 + 4000);
  EXPECT_DOUBLE_EQ(capped.provisioned_w, 400 * 16 + 4000);
  // One GPU of an eight-GPU node bears an eighth of its non-GPU power.
  const PoolPower one = PoolPowerOf(Model(), Busy(), 1, 1, 100, 0);
  EXPECT_DOUBLE_EQ(one.nodes, 0.125);
  EXPECT_DOUBLE_EQ(one.provisioned_w, 700 + 2000 / 8.0);
}

TEST(Energy, PowerLimitStretchesOnlyTheStatesAboveIt) {
  StepCost c = Busy();
  ApplyPowerLimit(Model(), 400, &c);
  const double f = std::sqrt(600.0 / 400.0);
  EXPECT_DOUBLE_EQ(c.bound_seconds[0], 10 * f);
  EXPECT_DOUBLE_EQ(c.bound_seconds[1], 20);
  EXPECT_DOUBLE_EQ(c.seconds, 40 + 10 * (f - 1));
  // Non-overhead op time grows with it, overhead stays.
  EXPECT_DOUBLE_EQ(c.class_seconds[0], 35 + 10 * (f - 1));
  EXPECT_DOUBLE_EQ(c.class_seconds[static_cast<int>(models::OpClass::kOverhead)], 5);
  StepCost same = Busy();
  ApplyPowerLimit(Model(), 650, &same);
  EXPECT_DOUBLE_EQ(same.seconds, 40);
}

TEST(Energy, RunFiguresPerTokenPerNodeAndPerMegawatt) {
  schema::RunSummary s;
  s.output_throughput = 1000;
  s.total_token_throughput = 3000;
  schema::PoolSummary pool;
  AddPoolPower(PoolPowerOf(Model(), Busy(), 8, 2, 100, 0), &pool);
  s.pools = {pool};
  EnergySettings e;
  e.pue = 1.5;
  e.usd_per_kwh = 0.1;
  AddEnergySummary(e, &s);
  // Facility: 6,380 W * 1.5 = 9,570 W at 1,000 output tokens/s.
  EXPECT_NEAR(*s.joules_per_output_token, 9.57, 1e-9);
  EXPECT_NEAR(*s.joules_per_total_token, 3.19, 1e-9);
  EXPECT_NEAR(*s.gpu_joules_per_output_token, 2.38, 1e-9);
  EXPECT_NEAR(*s.avg_kw_per_node, 3.19, 1e-9);
  EXPECT_NEAR(*s.peak_kw_per_node, 6.8, 1e-9);
  EXPECT_NEAR(*s.provisioned_kw, 15.2 * 1.5, 1e-9);
  EXPECT_NEAR(*s.output_tokens_per_s_per_mw, 1000 / 0.0228, 1e-6);
  // 9.57 J/token * 1e6 / 3.6e6 J/kWh * $0.10.
  EXPECT_NEAR(*s.electricity_usd_per_million_output_tokens, 9.57 / 3.6 * 0.1, 1e-9);
  // Without a power model nothing is added.
  schema::RunSummary none;
  none.pools = {schema::PoolSummary{}};
  AddEnergySummary(e, &none);
  EXPECT_FALSE(none.joules_per_output_token.has_value());
}

TEST(Energy, CapexSpreadsOverEveryHourOfTheLife) {
  EXPECT_NEAR(CapexUsdPerGpuHour(30000, 5), 30000.0 / (5 * 8760), 1e-12);
  EnergySettings e;
  e.capex_usd_per_gpu = 30000;
  e.amortization_years = 5;
  schema::RunSummary s;
  AddEnergySummary(e, &s);
  EXPECT_EQ(s.notes["usd_per_gpu_hour"],
            "capex_usd_per_gpu 30000 over amortization_years 5 of 8760 hours");
}

}  // namespace
}  // namespace capplan::sim
