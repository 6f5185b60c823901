#include "sim/sweep/pd_shape.h"

#include <cstdio>

namespace capplan::sim::sweep {

namespace {

double MeanOf(const schema::PoolSummary& pool, const std::string& stage, double fallback) {
  const auto it = pool.stages.find(stage);
  return it != pool.stages.end() && it->second.mean ? *it->second.mean : fallback;
}

PdPoolShape PoolOf(const schema::PoolSummary& pool) {
  PdPoolShape p;
  const nlohmann::json dep =
      pool.deployment.is_object() ? pool.deployment : nlohmann::json::object();
  p.replicas = dep.value("replicas", 1);
  // The pool summary's gpus already spans its replicas (RunScenario's gpus).
  p.gpus = pool.gpus.value_or(dep.value("gpus", 0) * p.replicas);
  p.utilization = pool.utilization.value_or(0.0);
  p.mean_time_in_pool_ms = MeanOf(pool, "time_in_pool", 0.0);
  double queue = 0;
  bool any = false;
  for (const char* k : {"prefill_queue", "decode_queue", "reservation_wait"}) {
    if (pool.stages.count(k) && pool.stages.at(k).mean) {
      queue += MeanOf(pool, k, 0.0);
      any = true;
    }
  }
  if (any) p.mean_queue_ms = queue;
  return p;
}

std::string Percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%", 100.0 * f);
  return buf;
}

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g ms", v);
  return buf;
}

// The metric of the most violated SLO at the first failing rate, or "".
std::string BindingMetric(const nlohmann::json& binding) {
  if (!binding.is_object() || binding.value("kind", "") != "slo") return "";
  const auto slos = binding.find("slos");
  if (slos == binding.end() || !slos->is_array() || slos->empty()) return "";
  return (*slos)[0].value("metric", "");
}

}  // namespace

std::optional<PdShape> PdShapeOf(const schema::RunSummary& summary, const nlohmann::json& binding) {
  const schema::PoolSummary* pre = summary.pool(schema::PoolRole::kPrefill);
  const schema::PoolSummary* dec = summary.pool(schema::PoolRole::kDecode);
  if (pre == nullptr || dec == nullptr) return std::nullopt;
  PdShape s;
  s.prefill = PoolOf(*pre);
  s.decode = PoolOf(*dec);
  s.ratio = std::to_string(s.prefill.replicas) + "P:" + std::to_string(s.decode.replicas) + "D";
  const std::string metric = BindingMetric(binding);
  const bool token_gap =
      metric.find("tpot") != std::string::npos || metric.find("itl") != std::string::npos;
  const bool queues = s.prefill.mean_queue_ms && s.decode.mean_queue_ms;
  bool prefill_binds = false;
  std::string why;
  if (token_gap) {
    why = metric + " binds";
  } else if (queues && *s.prefill.mean_queue_ms != *s.decode.mean_queue_ms) {
    prefill_binds = *s.prefill.mean_queue_ms > *s.decode.mean_queue_ms;
    why = "mean queue prefill " + Ms(*s.prefill.mean_queue_ms) + " vs decode " +
          Ms(*s.decode.mean_queue_ms);
  } else {
    prefill_binds = s.prefill.utilization > s.decode.utilization;
    why = "busier";
  }
  s.binding_pool = prefill_binds ? "prefill" : "decode";
  s.binding_text = s.binding_pool + " (" + why + "; utilization prefill " +
                   Percent(s.prefill.utilization) + ", decode " + Percent(s.decode.utilization) +
                   ")";
  return s;
}

nlohmann::json PdShapeJson(const PdShape& s) {
  auto pool = [](const PdPoolShape& p) {
    nlohmann::json j = {{"replicas", p.replicas},
                        {"gpus", p.gpus},
                        {"utilization", p.utilization},
                        {"mean_time_in_pool_ms", p.mean_time_in_pool_ms}};
    if (p.mean_queue_ms) j["mean_queue_ms"] = *p.mean_queue_ms;
    return j;
  };
  return {{"ratio", s.ratio},
          {"prefill_gpus", s.prefill.gpus},
          {"decode_gpus", s.decode.gpus},
          {"prefill", pool(s.prefill)},
          {"decode", pool(s.decode)},
          {"binding_pool", s.binding_pool},
          {"binding_pool_text", s.binding_text}};
}

}  // namespace capplan::sim::sweep
