// serve-bench (scenario reading, the ENGINE_RUN file) and numerics on the CPU
// backend.
#include "engine/serve_bench.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/data_path.h"
#include "engine/cpu_backend.h"
#include "engine/numerics.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/run_suites.h"
#include "kernels/harness/suite.h"
#include "models/card.h"
#include "models/ops.h"
#include "tests/test_util/shell.h"

namespace capplan::engine {
namespace {

using test_util::WriteTemp;

const char* kScenario = R"({
  "name": "t", "model": "kimi-k2.6", "hardware": "h200-sxm",
  "deployment": {"tp": 8, "weights": "default", "kv_cache": "fp8", "page_size": 16,
                 "chunked_prefill_tokens": 48, "kv_integrity": "verify", "engine": "sglang"},
  "workload": {"kind": "closed_loop", "concurrency": 4,
               "input_tokens": {"dist": "uniform", "min": 20, "max": 40},
               "output_tokens": {"dist": "fixed", "value": 6},
               "num_requests": 10, "seed": 3}
})";

TEST(ReadEngineScenarioTest, ShippedScenarioReads) {
  auto s = ReadEngineScenario(DataPath("scenarios/kimi-k2.6-kv-fp8.json"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model, "kimi-k2.6");
  EXPECT_EQ(s->tp, 8);
  EXPECT_EQ(s->choice.kv_cache, models::Dtype::kFp8E4m3);
  EXPECT_GE(s->input.min, 1);
}

TEST(ReadEngineScenarioTest, ErrorsNameFileAndPath) {
  std::string bad = kScenario;
  bad.replace(bad.find("\"uniform\""), 9, "\"lognormal\"");
  const std::string path = WriteTemp("bad_dist.json", bad);
  auto s = ReadEngineScenario(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUsage);
  EXPECT_NE(s.status().message().find(path + ": /workload/input_tokens/dist"), std::string::npos)
      << s.status().message();

  std::string typo = kScenario;
  typo.replace(typo.find("\"verify\""), 8, "\"verfy\"");
  auto t = ReadEngineScenario(WriteTemp("typo.json", typo));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("/deployment/kv_integrity"), std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("did you mean 'verify'"), std::string::npos)
      << t.status().message();
}

TEST(ServeBenchTest, EngineRunFileMapsOntoBatchShapes) {
  auto sc = ReadEngineScenario(WriteTemp("ok.json", kScenario));
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ServeBenchOptions o;
  o.layers = 2;
  auto run = RunServeBench(*sc, o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const nlohmann::json& d = run->doc;
  EXPECT_EQ(d["format"], "capplan.engine_run.v1");
  EXPECT_EQ(d["backend"], "cpu");
  EXPECT_EQ(d["gpu"], "cpu");
  EXPECT_EQ(d["slice"]["dims"], "small");
  EXPECT_EQ(d["deployment"]["kv_integrity"], "verify");
  EXPECT_EQ(d["completed"], 10);
  EXPECT_EQ(d["failed"], 0);
  int64_t prefill = 0, decode = 0;
  double total = 0;
  ASSERT_FALSE(d["iterations"].empty());
  for (const auto& it : d["iterations"]) {
    int64_t step_prefill = 0;
    for (const auto& c : it["prefill"]) {
      step_prefill += c["new_tokens"].get<int64_t>();
      EXPECT_GE(c["cached_tokens"].get<int64_t>(), 0);
    }
    EXPECT_LE(step_prefill, 48);
    prefill += step_prefill;
    decode += it["decode_contexts"].size();
    EXPECT_GT(it["verify_us"].get<double>(), 0.0);
    total += it["measured_us"].get<double>();
  }
  EXPECT_EQ(prefill, d["prefill_tokens"].get<int64_t>());
  EXPECT_EQ(decode, 10 * (6 - 1));
  EXPECT_EQ(d["output_tokens"], 60);
  EXPECT_NEAR(total, d["total_measured_us"].get<double>(), 1e-6 * total);
  EXPECT_GT(run->output_tokens_per_s, 0.0);
}

// Every iteration's op_id_us has exactly the op ids of the slice's layer
// program that run for its batch (the ops the pricer instantiates for the
// same batch: a renamed or missing op fails), and op_us is their sum by each
// op's class, communication left out.
TEST(ServeBenchTest, OpIdTimesAreTheProgramsOpsForEachBatch) {
  auto sc = ReadEngineScenario(WriteTemp("op_ids.json", kScenario));
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ServeBenchOptions o;
  o.layers = 2;
  auto run = RunServeBench(*sc, o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto card = models::LoadModelCard(sc->model);
  ASSERT_TRUE(card.ok());
  auto slice = MakeSliceConfig(*card, sc->tp, o.layers, o.dims, sc->choice, sc->seed);
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  bool decode = false, prefill = false;
  for (const auto& it : run->doc["iterations"]) {
    SCOPED_TRACE(it.dump());
    models::BatchShape shape;
    for (const auto& c : it["prefill"]) {
      shape.prefill.push_back({c["new_tokens"].get<int64_t>(), c["cached_tokens"].get<int64_t>()});
    }
    shape.decode_context = it["decode_contexts"].get<std::vector<int64_t>>();
    decode |= !shape.decode_context.empty();
    prefill |= !shape.prefill.empty();
    std::vector<models::Op> priced;
    models::BuildStepOps(*slice->program, shape, &priced);
    std::set<std::string> want;
    std::map<std::string, models::OpClass> cls;
    for (const models::Op& op : priced) want.insert(op.name), cls[op.name] = op.op_class;
    ASSERT_TRUE(it.contains("op_id_us"));
    std::set<std::string> got;
    std::map<std::string, double> by_class;
    double sum = 0;
    for (const auto& [id, us] : it["op_id_us"].items()) {
      got.insert(id);
      ASSERT_TRUE(cls.contains(id)) << id;
      EXPECT_GE(us.get<double>(), 0.0) << id;
      if (cls[id] != models::OpClass::kCommunication) {
        by_class[models::OpClassName(cls[id])] += us.get<double>();
      }
      sum += us.get<double>();
    }
    EXPECT_EQ(got, want);
    ASSERT_EQ(it["op_us"].size(), 5u);
    for (const auto& [c, us] : it["op_us"].items()) {
      EXPECT_NEAR(us.get<double>(), by_class[c], 1e-9 * (1 + by_class[c])) << c;
    }
    EXPECT_LE(sum, it["forward_us"].get<double>());
  }
  EXPECT_TRUE(decode && prefill) << "the run should hold decode and prefill steps";
}

TEST(ServeBenchTest, NoneIntegrityCostsNothingAndCudaIsTheGpuOrUnavailable) {
  auto sc = ReadEngineScenario(WriteTemp("ok2.json", kScenario));
  ASSERT_TRUE(sc.ok());
  ServeBenchOptions o;
  o.layers = 1;
  o.kv_integrity = "none";
  o.num_requests = 3;
  auto run = RunServeBench(*sc, o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  for (const auto& it : run->doc["iterations"]) EXPECT_EQ(it["verify_us"].get<double>(), 0.0);
  o.backend = "cuda";
  auto cuda = RunServeBench(*sc, o);
  if (cuda.ok()) {  // a device machine: never a CPU run labelled otherwise
    EXPECT_EQ(cuda->doc["backend"], "cuda");
    EXPECT_NE(cuda->doc["gpu"], "cpu");
    return;
  }
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cuda.status().message().rfind("no CUDA device: use --backend cpu", 0), 0u);
}

TEST(ServeBenchTest, SliceDescribesIndexShareAndBothFfnWidths) {
  auto glm = models::LoadModelCard("glm-5.2");
  ASSERT_TRUE(glm.ok());
  models::PrecisionChoice choice;
  auto s = MakeSliceConfig(*glm, 8, 3, "full", choice, 1);
  ASSERT_TRUE(s.ok()) << s.status().message();
  // GLM-5.2 IndexShare (https://lambda.ai/inference-models/zai-org/glm-5.2;
  // card index_share_every 4): layer 0
  // runs the indexer, layers 1-2 reuse its top-k and hold no indexer weights.
  EXPECT_EQ(s->index_share_every, 4);
  const models::LayerProgram& p = *s->program->program;
  EXPECT_TRUE(p.GroupOf(0)->index_fresh);
  EXPECT_FALSE(p.GroupOf(1)->index_fresh);
  EXPECT_FALSE(p.GroupOf(2)->index_fresh);
  EXPECT_EQ(p.GroupOf(3), nullptr);  // a 3-layer slice
  const nlohmann::json j = SliceToJson(*s);
  EXPECT_EQ(j["index_share_every"], 4);
  EXPECT_EQ(j["moe_intermediate_size"].get<int>(), glm->moe_intermediate_size / 8);
  EXPECT_EQ(j["intermediate_size"].get<int>(), glm->intermediate_size / 8);
  auto kimi = models::LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(kimi.ok());
  auto k = MakeSliceConfig(*kimi, 8, 2, "small", choice, 1);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->program->program->GroupOf(0)->index_fresh);  // no DSA
  EXPECT_FALSE(SliceToJson(*k).contains("index_share_every"));
  // Small GLM slices keep the sharing: the weights of layer 1 have no indexer.
  auto small = MakeSliceConfig(*glm, 8, 2, "small", choice, 1);
  ASSERT_TRUE(small.ok());
  auto w = MakeSliceWeights(*small);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_NE(w->Find(0, models::op_ids::kIndexerWqB), nullptr);
  EXPECT_GT(w->Find(0, models::op_ids::kIndexerWqB)->gemm.n, 0);
  EXPECT_EQ(w->Find(1, models::op_ids::kIndexerWqB), nullptr);
}

TEST(NumericsTest, FormatsPerturbButDoNotDestroyAndAreReproducible) {
  auto card = models::LoadModelCard("kimi-k2.6");
  ASSERT_TRUE(card.ok());
  NumericsOptions o;
  o.streams = 2;
  o.prompt_tokens = 12;
  o.generated_tokens = 8;
  auto a = RunNumerics(*card, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->comparisons.size(), 2u);
  for (const auto& c : a->comparisons) {
    EXPECT_EQ(c.positions, 2 * (8 + 1)) << c.name;
    ASSERT_EQ(c.layer_rel_err.size(), 2u);
    for (double e : c.layer_rel_err) {
      EXPECT_GT(e, 0.0) << c.name;  // the format did change the math
      EXPECT_LT(e, 0.5) << c.name;  // but not beyond recognition
    }
    EXPECT_GE(c.Top1Agreement(), 0.0);
    EXPECT_LE(c.Top1Agreement(), 1.0);
  }
  auto b = RunNumerics(*card, o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->ToJson(), b->ToJson());
  EXPECT_NE(a->ToJson()["label"].get<std::string>().find("synthetic-weight"), std::string::npos);
}

}  // namespace
}  // namespace capplan::engine

namespace capplan::engine {
namespace {

// `capplan engine microbench` writes what calibration reads: run one quick
// dry suite through the same path and validate the file.
TEST(MicrobenchTest, DryRunWritesAValidMeasurementFile) {
  kernels::SuiteOptions opt;
  opt.dry_run = true;
  opt.quick = true;
  kernels::RegisterAllSuites();
  const std::vector<std::string> names = kernels::SuiteRegistry().Names();
  ASSERT_FALSE(names.empty());
  auto run = kernels::RunSuites({names.front()}, opt, "test", "");  // one suite: keep it fast
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_FALSE(run->records.empty());
  const std::string path = test_util::TestTempPath("mb.json");
  ASSERT_TRUE(kernels::WriteMeasurements(path, run->info, run->records).ok());
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_TRUE(kernels::ValidateMeasurementsJson(doc, path).ok());
  EXPECT_EQ(doc["dry_run"], true);
  EXPECT_EQ(doc["gpu"], "cpu");
}

}  // namespace
}  // namespace capplan::engine
