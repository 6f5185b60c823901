// Property test of the simulator's semantics: scenarios drawn at random from
// a seed (shipped models, TP layouts, precisions, engines and schedulers,
// workload kinds, PD or co-located; tens of requests) must either run and
// keep the conservation laws, or fail with a one-line error. Every run is
// repeated and must give the same summary byte for byte.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/data_path.h"
#include "common/json_util.h"
#include "schema/run_summary.h"
#include "sim/scenario.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "sim/sweep/sim_hooks.h"

namespace capplan {
namespace {

using nlohmann::json;

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int64_t Int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int64_t>(v.size()) - 1))];
  }
  bool Coin() { return Int(0, 1) == 1; }

 private:
  std::mt19937_64 rng_;
};

json Lengths(Draw& d, int64_t scale) {
  switch (d.Int(0, 3)) {
    case 0:
      return {{"dist", "fixed"}, {"value", d.Int(1, scale)}};
    case 1: {
      const int64_t lo = d.Int(1, scale);
      return {{"dist", "uniform"}, {"min", lo}, {"max", lo + d.Int(0, scale)}};
    }
    case 2:
      return {{"dist", "lognormal"}, {"median", d.Int(2, scale)}, {"sigma", 0.5}};
    default:
      return {{"dist", "empirical"}, {"values", {d.Int(1, scale), d.Int(1, scale)}}};
  }
}

json Deployment(Draw& d, const std::string& phase_pool) {
  const int tp = static_cast<int>(d.Pick<int64_t>({1, 2, 4, 8}));
  json dep = {{"engine", d.Pick<std::string>({"sglang", "vllm"})},
              {"tp", tp},
              {"gpus", tp},
              {"replicas", d.Int(1, 2)},
              {"weights", d.Pick<std::string>({"default", "fp8", "int4"})},
              {"kv_cache", d.Pick<std::string>({"bf16", "fp8"})}};
  if (phase_pool.empty() && d.Coin()) dep["scheduler"] = d.Pick<std::string>({"sglang", "vllm"});
  if (d.Coin()) dep["chunked_prefill_tokens"] = d.Pick<int64_t>({256, 2048, 8192});
  if (d.Coin()) dep["cuda_graphs"] = false;
  return dep;
}

json Workload(Draw& d) {
  const int64_t n = d.Int(10, 60);
  json w;
  switch (d.Int(0, 2)) {
    case 0:
      w = {{"kind", "closed_loop"}, {"concurrency", d.Int(1, 16)}, {"num_requests", n}};
      break;
    case 1:
      w = {{"kind", "open_loop"}, {"num_requests", n}};
      w["request_rate"] = d.Coin() ? json("inf") : json(static_cast<double>(d.Int(1, 40)));
      if (d.Coin()) w["max_concurrency"] = d.Int(1, 32);
      break;
    default:
      return {{"kind", "trace"},
              {"format", "mooncake"},
              {"path", "traces/mooncake_sample.jsonl"},
              {"num_requests", n},
              {"time_scale", d.Pick<double>({0.1, 1.0})}};
  }
  w["input_tokens"] = Lengths(d, 2048);
  w["output_tokens"] = Lengths(d, 128);
  w["warmup_requests"] = d.Int(0, 3);
  w["seed"] = d.Int(0, 1000);
  return w;
}

json RandomScenario(uint64_t seed) {
  Draw d(seed);
  json doc = {{"name", "property-" + std::to_string(seed)},
              {"model", d.Pick<std::string>({"llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b",
                                             "deepseek-v2-lite", "llama-3.1-70b", "qwen3-235b-a22b",
                                             "glm-5.2", "kimi-k2.6"})},
              {"hardware", "h200-sxm"},
              {"workload", Workload(d)}};
  if (d.Int(0, 3) == 0) {
    doc["pd"] = {{"prefill", Deployment(d, "prefill")},
                 {"decode", Deployment(d, "decode")},
                 {"transfer", {{"link", d.Pick<std::string>({"rdma", "nvlink", "auto"})}}}};
  } else {
    doc["deployment"] = Deployment(d, "");
  }
  return doc;
}

// Scenario files resolve relative trace paths against their own folder.
std::string Origin() { return DataPath("scenarios/property.json"); }

void ExpectOneLine(const Status& st, const json& doc) {
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message() << "\n" << doc.dump();
  EXPECT_FALSE(st.message().empty()) << doc.dump();
}

double Sum(const json& shares) {
  double s = 0;
  for (const auto& [k, v] : shares.items()) s += v.get<double>();
  return s;
}

// Laws on one co-located run, request by request.
void CheckColocated(const json& doc, int* ran) {
  auto sc = sim::ParseScenario(doc, Origin());
  if (!sc.ok()) return ExpectOneLine(sc.status(), doc);
  std::vector<sim::ReqState> reqs;
  sim::RunOptions opt;
  opt.requests_out = &reqs;
  auto r = sim::RunScenario(**sc, opt);
  if (!r.ok()) return ExpectOneLine(r.status(), doc);
  ++*ran;
  const json s = schema::ToJson(r->summary);
  const auto& w = (*sc)->workload;
  ASSERT_EQ(reqs.size(), w.requests.size()) << doc.dump();
  int64_t done = 0, failed = 0, measured_done = 0, measured_failed = 0;
  for (const sim::ReqState& q : reqs) {
    ASSERT_TRUE(q.status == sim::ReqStatus::kDone || q.status == sim::ReqStatus::kFailed)
        << doc.dump();
    const bool ok = q.status == sim::ReqStatus::kDone;
    (ok ? done : failed) += 1;
    if (!q.warmup) (ok ? measured_done : measured_failed) += 1;
    if (!ok) continue;
    // Every token was produced, in causal order, after the request arrived.
    EXPECT_EQ(q.generated, q.output) << doc.dump();
    EXPECT_LE(q.arrival_ns, q.admit_ns) << doc.dump();
    EXPECT_LE(q.admit_ns, q.first_token_ns) << doc.dump();
    EXPECT_LE(q.first_token_ns, q.last_token_ns) << doc.dump();
    EXPECT_LE(q.last_token_ns, q.finish_ns) << doc.dump();
  }
  EXPECT_EQ(done + failed, static_cast<int64_t>(w.requests.size()));
  EXPECT_EQ(s["completed"].get<int64_t>(), measured_done) << doc.dump();
  EXPECT_EQ(s["failed"].get<int64_t>(), measured_failed) << doc.dump();
  EXPECT_LE(s["peak_kv_tokens"].get<int64_t>(), s["kv_capacity_tokens"].get<int64_t>());
  EXPECT_GE(s["duration_s"].get<double>(), 0.0);
  EXPECT_NEAR(Sum(s["op_time_share"]), 1.0, 1e-6) << doc.dump();
  EXPECT_NEAR(Sum(s["bound_time_share"]), 1.0, 1e-6) << doc.dump();
  for (const char* k : {"output_throughput", "cost_usd_per_million_output_tokens",
                        "median_ttft_ms", "p99_e2el_ms"}) {
    EXPECT_TRUE(std::isfinite(s[k].get<double>()) && s[k].get<double>() >= 0) << k << doc.dump();
  }
}

TEST(SimProperty, RandomScenariosKeepConservationLawsOrFailInOneLine) {
  int ran = 0, pd_ran = 0;
  constexpr uint64_t kSeeds = 48;
  const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(Origin());
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const json doc = RandomScenario(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + doc.dump());
    if (doc.contains("pd")) {
      const Status valid = hooks.validate(doc);
      if (!valid.ok()) {
        ExpectOneLine(valid, doc);
        continue;
      }
      auto first = hooks.run(doc);
      if (!first.ok()) {
        ExpectOneLine(first.status(), doc);
        continue;
      }
      ++pd_ran;
      auto second = hooks.run(doc);
      ASSERT_TRUE(second.ok()) << second.status().message();
      EXPECT_EQ(DumpJson(schema::ToJson(*first)), DumpJson(schema::ToJson(*second)));
      continue;
    }
    CheckColocated(doc, &ran);
    if (HasFatalFailure()) return;
  }
  // Most drawn scenarios are runnable, so the laws are checked on many runs
  // (the others exercise the one-line errors).
  EXPECT_GE(ran, static_cast<int>(kSeeds) / 3);
  EXPECT_GE(pd_ran, 1);
}

TEST(SimProperty, SameSeedTwiceGivesIdenticalSummaries) {
  const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(Origin());
  int compared = 0;
  for (uint64_t seed = 100; seed < 116; ++seed) {
    const json doc = RandomScenario(seed);
    EXPECT_EQ(doc, RandomScenario(seed));
    auto a = hooks.run(doc);
    auto b = hooks.run(RandomScenario(seed));
    ASSERT_EQ(a.ok(), b.ok()) << doc.dump();
    if (!a.ok()) {
      EXPECT_EQ(a.status().message(), b.status().message());
      continue;
    }
    EXPECT_EQ(DumpJson(schema::ToJson(*a)), DumpJson(schema::ToJson(*b))) << doc.dump();
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

// summary.json is DumpJson(summary) + "\n", so equal dumps are equal files.
// Every scenario under scenarios/ runs (a shipped scenario that fails is a
// bug), except the search specs of scenarios/search (`capplan search`).
TEST(SimProperty, EveryShippedScenarioTwiceGivesTheSameSummary) {
  int compared = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(DataPath("scenarios"))) {
    if (e.path().extension() != ".json" || e.path().parent_path().filename() == "search") continue;
    const std::string path = e.path().string();
    SCOPED_TRACE(path);
    auto doc = ReadJsonFile(path);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    const sim::sweep::SimHooks hooks = sim::sweep::RealSimHooks(path);
    auto a = hooks.run(*doc);
    ASSERT_TRUE(a.ok()) << a.status().message();
    auto b = hooks.run(*doc);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(DumpJson(schema::ToJson(*a)), DumpJson(schema::ToJson(*b)));
    ++compared;
  }
  EXPECT_GE(compared, 30);
}

}  // namespace
}  // namespace capplan
