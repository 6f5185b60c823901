// Energy accounting by hand: a step's draw from what its kernels use of the
// GPU (decode below prefill), a power limit on a step, a pool's draw from
// its steps, idle time and non-GPU power; the run's figures per token, per
// node and per provisioned MW; the capex rate.
#include "sim/energy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hw/profile.h"
#include "models/card.h"
#include "sim/step_pricer.h"

namespace capplan::sim {
namespace {

hw::PowerFigure F(double v) { return {v, v, v}; }

hw::PowerModel Model() {
  hw::PowerModel m;
  m.present = true;
  m.tdp_w = F(700);
  m.idle_w = F(100);
  m.kernel_floor_w = F(120);
  m.hbm_w = F(300);
  m.tensor_w = F(800);
  m.communication_w = F(200);
  m.overhead_w = F(150);
  m.node_gpus = F(8);
  m.node_non_gpu_w = F(2000);
  m.cap_rate_exponent = F(0.5);
  return m;
}

// A memory-bound decode step: 10 ms of kernels streaming HBM at 0.8 of its
// peak with the tensor cores at 0.05 of theirs, 2 ms of host stall.
StepCost Decode() {
  StepCost c;
  c.bound_seconds = {0, 0.010, 0, 0.002};
  c.seconds = 0.012;
  c.class_seconds[0] = 0.010;
  c.class_seconds[static_cast<int>(models::OpClass::kOverhead)] = 0.002;
  c.hbm_peak_seconds = 0.8 * 0.010;
  c.tensor_peak_seconds = 0.05 * 0.010;
  return c;
}

// A compute-bound prefill step: 50 ms of GEMMs at 0.7 of the dense peak and
// 5 ms of memory-bound ops, HBM at 0.1 of peak over the 55 ms, 5 ms of
// collectives.
StepCost Prefill() {
  StepCost c;
  c.bound_seconds = {0.050, 0.005, 0.005, 0};
  c.seconds = 0.060;
  c.class_seconds[0] = 0.060;
  c.tensor_peak_seconds = 0.7 * 0.055;
  c.hbm_peak_seconds = 0.1 * 0.055;
  return c;
}

TEST(Energy, DecodeDrawsLessThanPrefillByHand) {
  StepCost d = Decode();
  ChargeStepPower(Model(), 0, &d);
  // Kernels: 120 + 300 * 0.8 + 800 * 0.05 = 400 W for 10 ms; host stall:
  // 150 W for 2 ms.
  EXPECT_NEAR(d.gpu_joules, 0.010 * 400 + 0.002 * 150, 1e-12);
  EXPECT_NEAR(d.peak_gpu_w, 400, 1e-9);
  EXPECT_DOUBLE_EQ(d.seconds, 0.012);
  StepCost p = Prefill();
  ChargeStepPower(Model(), 0, &p);
  // Kernels: 120 + 300 * 0.1 + 800 * 0.7 = 710 W, held at the 700 W board
  // limit (the profile's curves, measured at stock limits, hold the clocks
  // that costs); collectives: 200 W.
  EXPECT_NEAR(p.peak_gpu_w, 700, 1e-9);
  EXPECT_NEAR(p.gpu_joules, 0.055 * 700 + 0.005 * 200, 1e-12);
  EXPECT_DOUBLE_EQ(p.seconds, 0.060);
  EXPECT_LT(d.peak_gpu_w, p.peak_gpu_w);
}

TEST(Energy, ALimitSlowsTheKernelsAboveItAndHoldsTheirDraw) {
  StepCost p = Prefill();
  ChargeStepPower(Model(), 600, &p);
  const double f = std::sqrt(700.0 / 600.0);
  EXPECT_NEAR(p.bound_seconds[0], 0.050 * f, 1e-15);
  EXPECT_NEAR(p.bound_seconds[1], 0.005 * f, 1e-15);
  EXPECT_DOUBLE_EQ(p.bound_seconds[2], 0.005);  // collectives draw 200 W
  EXPECT_NEAR(p.seconds, 0.060 + 0.055 * (f - 1), 1e-15);
  EXPECT_NEAR(p.class_seconds[0], p.seconds, 1e-15);
  EXPECT_NEAR(p.peak_gpu_w, 600, 1e-9);
  EXPECT_NEAR(p.gpu_joules, 0.055 * f * 600 + 0.005 * 200, 1e-12);
  // Decode draws 400 W: a 600 W limit leaves it as it was.
  StepCost d = Decode();
  ChargeStepPower(Model(), 600, &d);
  EXPECT_DOUBLE_EQ(d.seconds, 0.012);
  EXPECT_NEAR(d.peak_gpu_w, 400, 1e-9);
  // A 300 W limit holds every state to 300 W and slows decode's kernels.
  StepCost low = Decode();
  ChargeStepPower(Model(), 300, &low);
  EXPECT_NEAR(low.bound_seconds[1], 0.010 * std::sqrt(400.0 / 300.0), 1e-15);
  EXPECT_NEAR(low.peak_gpu_w, 300, 1e-9);
  EXPECT_DOUBLE_EQ(low.bound_seconds[3], 0.002);  // host stalls draw 150 W
}

TEST(Energy, PoolPowerChargesEachStepIdleTimeAndTheNodes) {
  // 2 replicas of 8 GPUs over 100 s; the replicas' steps took 40 s and
  // drew 110,000 J per GPU, at most 600 W.
  StepCost busy;
  busy.bound_seconds = {10, 20, 5, 5};
  busy.seconds = 40;
  busy.gpu_joules = 13750;
  busy.peak_gpu_w = 600;
  const PoolPower p = PoolPowerOf(Model(), busy, 8, 2, 100, 0);
  EXPECT_DOUBLE_EQ(p.nodes, 2);
  // Busy: 8 x 13,750 = 110,000 J; idle: (1600 - 320) GPU-s * 100 W =
  // 128,000 J; over 100 s: 2,380 W.
  EXPECT_DOUBLE_EQ(p.avg_gpu_w, 2380);
  EXPECT_DOUBLE_EQ(p.avg_w, 2380 + 2 * 2000);
  EXPECT_DOUBLE_EQ(p.peak_w, 600 * 16 + 4000);
  EXPECT_DOUBLE_EQ(p.provisioned_w, 700 * 16 + 4000);
  // A limit caps the provisioned power (the steps' draw was capped when
  // they were charged).
  const PoolPower capped = PoolPowerOf(Model(), busy, 8, 2, 100, 400);
  EXPECT_DOUBLE_EQ(capped.provisioned_w, 400 * 16 + 4000);
  // One GPU of an eight-GPU node bears an eighth of its non-GPU power.
  const PoolPower one = PoolPowerOf(Model(), busy, 1, 1, 100, 0);
  EXPECT_DOUBLE_EQ(one.nodes, 0.125);
  EXPECT_DOUBLE_EQ(one.provisioned_w, 700 + 2000 / 8.0);
}

// Steps summed over a run keep their energy and their hottest draw.
TEST(Energy, BusyTimeSumsEnergyAndKeepsThePeak) {
  StepCost d = Decode(), p = Prefill();
  ChargeStepPower(Model(), 0, &d);
  ChargeStepPower(Model(), 0, &p);
  StepCost busy;
  busy.AddTimes(d, 10);
  busy.Add(p);
  EXPECT_NEAR(busy.gpu_joules, 10 * d.gpu_joules + p.gpu_joules, 1e-12);
  EXPECT_DOUBLE_EQ(busy.peak_gpu_w, 700);
  EXPECT_NEAR(busy.hbm_peak_seconds, 10 * d.hbm_peak_seconds + p.hbm_peak_seconds, 1e-15);
}

// Llama 3.1 8B decode on one H100, 1,000 tokens of context per request:
// the step's kernels draw more as the batch grows (the tensor term grows
// while HBM stays busy), and a 4,096-token prefill draws more than any of
// them, at most the board limit.
TEST(Energy, DecodePowerRisesWithTheBatchOnH100) {
  auto prof = hw::LoadHardwareProfile("h100-sxm");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  auto model = MakeCostModel("roofline", *prof);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto card = models::LoadModelCard("llama-3.1-8b");
  ASSERT_TRUE(card.ok()) << card.status().message();
  models::ParallelLayout layout;
  layout.gpus = 1;
  layout.tp = 1;
  auto sharded = models::ShardModel(*card, layout, models::PrecisionChoice{});
  ASSERT_TRUE(sharded.ok()) << sharded.status().message();
  ModelPricerOptions opt;
  opt.cuda_graph_max_bs = 512;
  opt.page_size = 16;
  opt.power = &prof->power;
  ModelStepPricer pricer(&*sharded, model->get(), opt);
  const hw::PowerModel& pm = prof->power;
  double last = 0;
  for (int64_t n : {1, 4, 16, 64, 128, 256}) {
    StepWork w;
    w.decode_n = n;
    w.decode_ctx_sum = 1000 * n;
    const StepCost c = pricer.Price(w);
    const double watts = pm.KernelWatts(KernelUtilization(c));
    EXPECT_GT(watts, last) << "batch " << n;
    EXPECT_GT(c.gpu_joules, 0);
    last = watts;
  }
  StepWork pre;
  pre.prefill = {{4096, 0}};
  const double prefill_w = pm.KernelWatts(KernelUtilization(pricer.Price(pre)));
  EXPECT_GT(prefill_w, last);
  EXPECT_LE(prefill_w, pm.tdp_w.value);
}

TEST(Energy, RunFiguresPerTokenPerNodeAndPerMegawatt) {
  schema::RunSummary s;
  s.output_throughput = 1000;
  s.total_token_throughput = 3000;
  schema::PoolSummary pool;
  StepCost busy;
  busy.bound_seconds = {10, 20, 5, 5};
  busy.gpu_joules = 13750;
  busy.peak_gpu_w = 600;
  AddPoolPower(PoolPowerOf(Model(), busy, 8, 2, 100, 0), &pool);
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
