// A fake simulator for sweep/search tests: a strict validator over a tiny
// scenario schema and an analytic queueing model whose SLO-limited optimum can
// be worked out by hand (see search_test.cc).
#ifndef CAPPLAN_TESTS_SIM_SWEEP_FAKE_SIM_H_
#define CAPPLAN_TESTS_SIM_SWEEP_FAKE_SIM_H_

#include <atomic>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "common/did_you_mean.h"
#include "sim/sweep/hooks.h"

namespace capplan::sim::sweep::testing {

inline nlohmann::json FakeBase() {
  return nlohmann::json::parse(R"({
    "seed": 1,
    "deployment": {"tp": 2, "replicas": 1, "weights": "fp8"},
    "workload": {"request_rate": 1.0, "num_requests": 100}
  })");
}

// Same shape as FakeBase: every key must exist there with the same kind of
// value (integer, number, string), like the real strict scenario parser.
inline Status FakeValidateNode(const nlohmann::json& doc, const nlohmann::json& schema,
                               const std::string& ptr) {
  for (const auto& [k, v] : doc.items()) {
    const std::string where = "fake.json: " + ptr + "/" + k;
    if (!schema.contains(k)) {
      std::vector<std::string> known;
      for (const auto& [sk, sv] : schema.items()) known.push_back(sk);
      return Status::Usage(where + ": unknown field" + DidYouMean(k, known));
    }
    const nlohmann::json& s = schema[k];
    if (s.is_object()) {
      if (!v.is_object()) return Status::Usage(where + ": must be an object");
      CAPPLAN_RETURN_IF_ERROR(FakeValidateNode(v, s, ptr + "/" + k));
    } else if (s.is_number_integer() && !v.is_number_integer()) {
      return Status::Usage(where + ": must be an integer");
    } else if (s.is_number() && !v.is_number()) {
      return Status::Usage(where + ": must be a number");
    } else if (s.is_string() && !v.is_string()) {
      return Status::Usage(where + ": must be a string");
    }
  }
  return Status::Ok();
}

inline Status FakeValidate(const nlohmann::json& doc) {
  CAPPLAN_RETURN_IF_ERROR(FakeValidateNode(doc, FakeBase(), ""));
  const int tp = doc["deployment"]["tp"].get<int>();
  if (tp < 1 || 64 % tp != 0) {
    return Status::Invalid("fake.json: /deployment/tp: " + std::to_string(tp) +
                           " does not divide 64 attention heads");
  }
  return Status::Ok();
}

// Analytic model. Per-replica capacity C(tp) = 4 req/s at tp 2, 10 at tp 4
// (2 * tp otherwise); utilisation u = rate / (replicas * C);
// p90 TTFT = 100 / (1 - u) ms; p90 TPOT = (40 / tp) / (1 - u) ms;
// mean TPOT = 0.8 * p90 TPOT; 100 output tokens per request; $2 per GPU-hour.
inline nlohmann::json FakeSummary(const nlohmann::json& doc) {
  const int tp = doc["deployment"]["tp"].get<int>();
  const int replicas = doc["deployment"]["replicas"].get<int>();
  const double rate = doc["workload"]["request_rate"].get<double>();
  const double cap = tp == 2 ? 4.0 : tp == 4 ? 10.0 : 2.0 * tp;
  const double u = rate / (replicas * cap);
  const double q = u < 1 ? 1.0 / (1.0 - u) : 1e9;
  const int gpus = tp * replicas;
  const double out_tps = rate * 100.0;
  nlohmann::json s;
  s["completed"] = doc["workload"]["num_requests"];
  s["request_throughput"] = rate;
  s["output_throughput"] = out_tps;
  s["output_throughput_per_gpu"] = out_tps / gpus;
  s["p90_ttft_ms"] = 100.0 * q;
  s["p90_tpot_ms"] = 40.0 / tp * q;
  s["mean_tpot_ms"] = 0.8 * 40.0 / tp * q;
  s["gpus"] = gpus;
  s["cost_usd_per_million_output_tokens"] = 2.0 * gpus / (out_tps * 3600.0) * 1e6;
  // 700 W per GPU, 1 kW provisioned per GPU.
  s["joules_per_output_token"] = 700.0 * gpus / out_tps;
  s["output_tokens_per_s_per_mw"] = out_tps / (gpus * 1e-3);
  s["seed"] = doc["seed"];
  return s;
}

struct CountingRunner {
  std::atomic<int> calls{0};
  // Fails (Internal) on the call whose scenario has this tp, when >= 0.
  int fail_tp = -1;
  PointRunner Runner() {
    return [this](const nlohmann::json& doc) -> Result<schema::RunSummary> {
      ++calls;
      if (doc["deployment"]["tp"].get<int>() == fail_tp) {
        return Status::Internal("injected failure");
      }
      return schema::FromJson(FakeSummary(doc), "fake summary");
    };
  }
  SimHooks Hooks() { return SimHooks{FakeValidate, Runner(), nullptr}; }
};

}  // namespace capplan::sim::sweep::testing

#endif  // CAPPLAN_TESTS_SIM_SWEEP_FAKE_SIM_H_
