// `capplan validate` mechanics: a real CPU-backend engine run is replayed
// iteration by iteration; with measured times rewritten to a known multiple
// of the model's prediction the reported errors are known exactly.
#include "calibrate/validate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <tuple>

#include "engine/serve_bench.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

using test_util::WriteTemp;

nlohmann::json EngineRun(const std::string& model, int tp, const std::string& integrity,
                         int layers = 2) {
  const std::string sc = R"({
    "name": "t", "model": ")" +
                         model + R"(", "hardware": "h200-sxm",
    "deployment": {"tp": )" +
                         std::to_string(tp) +
                         R"(, "weights": "default", "kv_cache": "fp8", "page_size": 16,
                   "chunked_prefill_tokens": 32, "kv_integrity": ")" +
                         integrity + R"("},
    "workload": {"kind": "closed_loop", "concurrency": 3,
                 "input_tokens": {"dist": "uniform", "min": 20, "max": 40},
                 "output_tokens": {"dist": "fixed", "value": 4},
                 "num_requests": 5, "seed": 7}
  })";
  auto s = engine::ReadEngineScenario(
      WriteTemp(model.substr(model.rfind('/') + 1) + "_sc.json", sc));
  EXPECT_TRUE(s.ok()) << s.status().message();
  engine::ServeBenchOptions o;
  o.layers = layers;
  auto run = engine::RunServeBench(*s, o);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run->doc;
}

hw::HardwareProfile Shipped() {
  auto p = hw::LoadHardwareProfile("h200-sxm");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

TEST(CalibValidate, ReplaysEveryIterationOfACpuRun) {
  const nlohmann::json run = EngineRun("kimi-k2.6", 8, "verify");
  auto r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rel_err.size(), run["iterations"].size());
  EXPECT_EQ(r->backend, "cpu");
  EXPECT_EQ(r->dims, "small");
  int64_t tokens = 0;
  for (size_t i = 0; i < r->rel_err.size(); ++i) {
    EXPECT_GT(r->predicted_s[i], 0);
    EXPECT_DOUBLE_EQ(r->measured_s[i], run["iterations"][i]["measured_us"].get<double>() * 1e-6);
    for (const auto& c : run["iterations"][i]["prefill"]) tokens += c["new_tokens"].get<int64_t>();
    tokens += static_cast<int64_t>(run["iterations"][i]["decode_contexts"].size());
  }
  EXPECT_EQ(r->tokens, tokens);
  EXPECT_NE(FormatReplay(*r, "run.json", Shipped()).find("CPU backend"), std::string::npos);
}

// A dry-run (CPU backend) run file carries the forward split by op class;
// the replay sums it per class beside the simulator's price of the same ops.
TEST(CalibValidate, ReplaysTheOpClassSplitOfADryRun) {
  nlohmann::json run = EngineRun("kimi-k2.6", 8, "verify");
  std::map<std::string, double> want;
  double host = 0;
  for (const auto& it : run["iterations"]) {
    ASSERT_TRUE(it.contains("op_us")) << it.dump();
    double sum = 0;
    for (const auto& [k, v] : it["op_us"].items()) {
      want[k] += v.get<double>();
      sum += v.get<double>();
    }
    // The classes partition the forward (up to the timer's own cost).
    EXPECT_LE(sum, it["forward_us"].get<double>() * 1.001 + 1.0);
    host += it["host_us"].get<double>();
  }
  auto r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->class_split.size(), 5u);
  for (const auto& cs : r->class_split) {
    ASSERT_TRUE(want.count(cs.op_class)) << cs.op_class;
    EXPECT_NEAR(cs.measured_s, want[cs.op_class] * 1e-6, 1e-12) << cs.op_class;
    EXPECT_GE(cs.predicted_s, 0) << cs.op_class;
    if (cs.op_class == "attention" || cs.op_class == "moe" || cs.op_class == "dense_gemm") {
      EXPECT_GT(cs.measured_s, 0) << cs.op_class;
      EXPECT_GT(cs.predicted_s, 0) << cs.op_class;
    }
  }
  EXPECT_NEAR(r->host_s, host * 1e-6, 1e-12);
  EXPECT_NE(FormatReplay(*r, "run.json", Shipped()).find("by op class"), std::string::npos);
  EXPECT_TRUE(ReplayToJson(*r, "run.json", Shipped()).contains("op_classes"));

  // A run without the split replays as before, with no class table.
  nlohmann::json plain = run;
  for (auto& it : plain["iterations"]) {
    it.erase("op_us");
    it.erase("host_us");
  }
  auto p = ReplayEngineRun(plain, "run.json", Shipped());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->class_split.empty());
  EXPECT_EQ(p->rel_err, r->rel_err);

  // A malformed split names the iteration and the class.
  nlohmann::json bad = run;
  bad["iterations"][1]["op_us"]["moe"] = -1.0;
  auto b = ReplayEngineRun(bad, "run.json", Shipped());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("/iterations/1/op_us/moe"), std::string::npos)
      << b.status().message();
}

// The run's per-op-id times replay against the simulator's price of the ops
// of the same ids in the same batches, summed over the run.
TEST(CalibValidate, ReplaysTheOpIdSplitOfADryRun) {
  const nlohmann::json run = EngineRun("kimi-k2.6", 8, "verify");
  std::map<std::string, double> want;
  for (const auto& it : run["iterations"]) {
    ASSERT_TRUE(it.contains("op_id_us")) << it.dump();
    for (const auto& [id, us] : it["op_id_us"].items()) want[id] += us.get<double>();
  }
  const hw::HardwareProfile prof = Shipped();
  auto r = ReplayEngineRun(run, "run.json", prof);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->op_id_split.size(), want.size());
  std::map<std::string, OpIdSplit> got;
  for (const OpIdSplit& s : r->op_id_split) {
    ASSERT_TRUE(want.count(s.id)) << s.id;
    EXPECT_TRUE(s.measured) << s.id;
    EXPECT_NEAR(s.measured_s, want[s.id] * 1e-6, 1e-12) << s.id;
    got[s.id] = s;
  }
  // TP 8: the engine's slice is one rank, so its collectives are timed and
  // priced by nothing; every other op is priced.
  for (const char* id : {"embed_tokens", "attn.q_a_proj", "attn.kv_append", "attn.mla_decode",
                         "dense.gate_up_proj", "moe.gate", "moe.experts", "lm_head", "sampling"}) {
    ASSERT_TRUE(got.count(id)) << id;
    EXPECT_TRUE(got[id].priced) << id;
    EXPECT_GT(got[id].predicted_s, 0) << id;
  }
  ASSERT_TRUE(got.count("attn.all_reduce"));
  EXPECT_FALSE(got["attn.all_reduce"].priced);
  for (const std::string& w : r->warnings) EXPECT_EQ(w.find("op id"), std::string::npos) << w;
  // The prices are what ExplainOps gives the replayed ops: below the
  // iterations' prices, which add the launches and the verification.
  double pred = 0, step_pred = 0;
  for (const OpIdSplit& s : r->op_id_split) pred += s.predicted_s;
  for (double p : r->predicted_s) step_pred += p;
  EXPECT_GT(pred, 0);
  EXPECT_LT(pred, step_pred);
  const std::string text = FormatReplay(*r, "run.json", prof);
  EXPECT_NE(text.find("by op id"), std::string::npos) << text;
  for (const char* id : {"moe.experts", "attn.mla_decode", "attn.all_reduce"}) {
    EXPECT_NE(text.find(std::string("\n  ") + id + " "), std::string::npos) << id << "\n" << text;
  }
  const nlohmann::json j = ReplayToJson(*r, "run.json", prof);
  ASSERT_TRUE(j.contains("op_ids"));
  EXPECT_NEAR(j["op_ids"]["moe.experts"]["measured_us"].get<double>(), want["moe.experts"], 1e-6);
  EXPECT_GT(j["op_ids"]["moe.experts"]["predicted_us"].get<double>(), 0);
  EXPECT_FALSE(j["op_ids"]["attn.all_reduce"].contains("predicted_us"));

  // A run without op_id_us replays as before, with no op-id table.
  nlohmann::json plain = run;
  plain["iterations"][2].erase("op_id_us");
  auto p = ReplayEngineRun(plain, "run.json", prof);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->op_id_split.empty());
  EXPECT_EQ(p->rel_err, r->rel_err);
  EXPECT_EQ(FormatReplay(*p, "run.json", prof).find("by op id"), std::string::npos);

  // A renamed op: measured with nothing to compare, and the op of the old
  // id priced with no measurement; both warned about by id.
  nlohmann::json renamed = run;
  for (auto& it : renamed["iterations"]) {
    auto& ids = it["op_id_us"];
    ids["moe.routed_experts"] = ids["moe.experts"];
    ids.erase("moe.experts");
  }
  auto n = ReplayEngineRun(renamed, "run.json", prof);
  ASSERT_TRUE(n.ok()) << n.status().message();
  int warned = 0;
  for (const std::string& w : n->warnings) {
    warned += w.find("engine op id 'moe.routed_experts' has no op") != std::string::npos;
    warned += w.find("op id 'moe.experts' is priced but the engine timed no op") !=
              std::string::npos;
  }
  EXPECT_EQ(warned, 2);

  // A bad value names the iteration and the op id.
  for (const nlohmann::json& v : {nlohmann::json(-1.0), nlohmann::json("fast")}) {
    nlohmann::json bad = run;
    bad["iterations"][1]["op_id_us"]["moe.experts"] = v;
    auto b = ReplayEngineRun(bad, "run.json", prof);
    ASSERT_FALSE(b.ok()) << v.dump();
    EXPECT_NE(b.status().message().find("run.json: /iterations/1/op_id_us/moe.experts"),
              std::string::npos)
        << b.status().message();
  }
  nlohmann::json not_object = run;
  not_object["iterations"][1]["op_id_us"] = 3;
  auto b = ReplayEngineRun(not_object, "run.json", prof);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("/iterations/1/op_id_us"), std::string::npos)
      << b.status().message();
}

// A hybrid slice's run says which of its layers are linear or
// window-limited and their small shapes, so the replay prices the ops the
// slice ran: every op id the engine timed has a price (collectives aside).
TEST(CalibValidate, HybridSlicesReplayTheLayersTheyRan) {
  for (const auto& [model, key, op] :
       {std::tuple<std::string, std::string, std::string>{
            "qwen3-next-80b-a3b", "linear_attention_layers", "linear_attn.conv1d"},
        {"llama-4-scout-17b-16e-instruct", "sliding_window_layers", "attn.decode.window"}}) {
    SCOPED_TRACE(model);
    const nlohmann::json run = EngineRun(std::string(HF_TEST_DATA) + "/" + model, 2, "none", 4);
    ASSERT_TRUE(run["slice"].contains(key)) << run["slice"].dump();
    EXPECT_EQ(run["slice"][key].get<int>(), 3);
    auto r = ReplayEngineRun(run, "run.json", Shipped());
    ASSERT_TRUE(r.ok()) << r.status().message();
    bool found = false;
    for (const OpIdSplit& s : r->op_id_split) {
      found |= s.id == op && s.priced && s.measured;
      if (s.id.find("all_") == std::string::npos) {
        EXPECT_TRUE(s.priced) << s.id;
      }
    }
    EXPECT_TRUE(found) << op;
    for (const std::string& w : r->warnings) EXPECT_EQ(w.find("op id"), std::string::npos) << w;
    // Without the counts the replay's layers are not the slice's: it says so.
    nlohmann::json old = run;
    old["slice"].erase(key);
    auto o = ReplayEngineRun(old, "run.json", Shipped());
    ASSERT_TRUE(o.ok()) << o.status().message();
    int op_id_warnings = 0;
    for (const std::string& w : o->warnings) op_id_warnings += w.find("op id") != std::string::npos;
    EXPECT_GT(op_id_warnings, 0);
  }
}

TEST(CalibValidate, KnownErrorsWhenMeasuredIsAMultipleOfPredicted) {
  for (const auto& [model, tp] :
       {std::pair<std::string, int>{"kimi-k2.6", 8}, {"glm-5.2", 8}, {"llama-3.1-8b", 1}}) {
    SCOPED_TRACE(model);
    nlohmann::json run = EngineRun(model, tp, "none");
    const hw::HardwareProfile prof = Shipped();
    auto first = ReplayEngineRun(run, "run.json", prof);
    ASSERT_TRUE(first.ok()) << first.status().message();
    const size_t n = first->predicted_s.size();
    ASSERT_GE(n, 3u);
    // Every iteration measured 1.25x the prediction, one 2x.
    for (size_t i = 0; i < n; ++i) {
      run["iterations"][i]["measured_us"] = first->predicted_s[i] * 1e6 * (i == 2 ? 2.0 : 1.25);
    }
    auto r = ReplayEngineRun(run, "run.json", prof);
    ASSERT_TRUE(r.ok()) << r.status().message();
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(r->rel_err[i], i == 2 ? -0.5 : -0.2, 1e-9) << i;
    }
    EXPECT_NEAR(r->median_abs_err, 0.2, 1e-9);
    EXPECT_NEAR(r->worst_abs_err, 0.5, 1e-9);
    EXPECT_EQ(r->worst_iteration, 2);
    double meas = 0, pred = 0;
    for (size_t i = 0; i < n; ++i) meas += r->measured_s[i], pred += r->predicted_s[i];
    EXPECT_NEAR(r->tokens_per_s_rel_err, meas / pred - 1, 1e-9);
    EXPECT_GT(r->tokens_per_s_rel_err, 0.25);  // the model is faster than "measured"
  }
}

TEST(CalibValidate, BadRunNamesIterationAndField) {
  nlohmann::json run = EngineRun("llama-3.1-8b", 1, "none");
  run["iterations"][1]["measured_us"] = 0.0;
  auto r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json: /iterations/1/measured_us"), std::string::npos)
      << r.status().message();
  run = EngineRun("llama-3.1-8b", 1, "none");
  run.erase("slice");
  r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/slice"), std::string::npos) << r.status().message();
}

TEST(CalibValidate, ContextsNearInt64AreRangeErrors) {
  nlohmann::json run = EngineRun("llama-3.1-8b", 1, "none");
  run["iterations"][0]["decode_contexts"] = {INT64_MAX - 1, INT64_MAX - 1};
  auto r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run.json: /iterations/0/decode_contexts: every context "
                                      "must be an integer in [1, 1e9]"),
            std::string::npos)
      << r.status().message();
  run = EngineRun("llama-3.1-8b", 1, "none");
  run["iterations"][0]["prefill"] = {{{"new_tokens", INT64_MAX}, {"cached_tokens", 0}}};
  r = ReplayEngineRun(run, "run.json", Shipped());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/iterations/0/prefill/0/new_tokens"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace capplan::calibrate
