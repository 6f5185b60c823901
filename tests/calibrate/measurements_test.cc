// The strict measurement reader: every bad record is a one-line error naming
// the file, the record index and the field.
#include "calibrate/measurements.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/data_path.h"
#include "tests/test_util/measurement_doc.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

nlohmann::json ValidDoc() {
  nlohmann::json rec = {{"kernel", "gemm_bf16"},
                        {"op_class", "dense_gemm"},
                        {"dtype", "bf16"},
                        {"weight_dtype", "bf16"},
                        {"shape", {{"m", 64}, {"n", 256}, {"k", 512}}},
                        {"median_us", 12.5},
                        {"p10_us", 12.0},
                        {"p90_us", 13.0},
                        {"repeats", 20},
                        {"bytes", 3.0e5},
                        {"flops", 1.6e7},
                        {"check", "pass"}};
  return test_util::MeasurementDoc({rec, rec});
}

std::string Write(const std::string& name, const std::string& text) {
  return test_util::WriteTemp(name, text);
}

std::string ErrorOf(const std::vector<std::string>& paths, bool allow_dry = false) {
  ReadOptions o;
  o.allow_dry_run = allow_dry;
  auto r = ReadMeasurements(paths, o);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

TEST(CalibMeasurements, ReadsValidFile) {
  const std::string p = Write("ok.json", ValidDoc().dump());
  auto r = ReadMeasurements({p}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->records.size(), 2u);
  EXPECT_EQ(r->records[1].index, 1);
  EXPECT_EQ(r->records[0].Shape("m"), 64);
  EXPECT_NE(r->sources[0].Describe().find("driver 580.1"), std::string::npos);
}

TEST(CalibMeasurements, NanIsOneLineErrorNamingFile) {
  std::string text = ValidDoc().dump();
  const std::string key = "\"median_us\":12.5";
  text.replace(text.find(key), key.size(), "\"median_us\":NaN");
  const std::string p = Write("nan.json", text);
  EXPECT_NE(ErrorOf({p}).find("nan.json"), std::string::npos);
}

TEST(CalibMeasurements, NegativeAndZeroTimesNameRecordAndField) {
  nlohmann::json d = ValidDoc();
  d["records"][1]["median_us"] = -3.0;
  std::string e = ErrorOf({Write("neg.json", d.dump())});
  EXPECT_NE(e.find("neg.json"), std::string::npos) << e;
  EXPECT_NE(e.find("/records/1/median_us"), std::string::npos) << e;
  d["records"][1]["median_us"] = 0.0;
  e = ErrorOf({Write("zero.json", d.dump())});
  EXPECT_NE(e.find("/records/1/median_us"), std::string::npos) << e;
}

TEST(CalibMeasurements, ExtremeTimesAndShapesAreRangeErrors) {
  nlohmann::json d = ValidDoc();
  d["records"][0]["median_us"] = INT64_MAX;
  d["records"][0]["p90_us"] = 1e19;
  std::string e = ErrorOf({Write("huge.json", d.dump())});
  EXPECT_NE(e.find("/records/0/median_us: must be in (0, 1e9]"), std::string::npos) << e;
  d = ValidDoc();
  d["records"][1]["shape"]["m"] = INT64_MAX;
  e = ErrorOf({Write("shape.json", d.dump())});
  EXPECT_NE(e.find("/records/1/shape"), std::string::npos) << e;
  d["records"][1]["shape"]["m"] = UINT64_MAX;
  e = ErrorOf({Write("shape_u.json", d.dump())});
  EXPECT_NE(e.find("/records/1/shape"), std::string::npos) << e;
}

TEST(CalibMeasurements, PercentilesMustBeOrdered) {
  nlohmann::json d = ValidDoc();
  d["records"][1]["p10_us"] = 14.0;
  d["records"][1]["p90_us"] = 11.0;
  std::string e = ErrorOf({Write("p10.json", d.dump())});
  EXPECT_NE(e.find("/records/1/p10_us: must be <= median_us"), std::string::npos) << e;
  d["records"][1]["p10_us"] = 12.0;
  e = ErrorOf({Write("p90.json", d.dump())});
  EXPECT_NE(e.find("/records/1/p90_us: must be >= median_us"), std::string::npos) << e;
}

TEST(CalibMeasurements, DuplicateKeysAndOverflowingNumbersAreErrors) {
  std::string text = ValidDoc().dump();
  const std::string key = "\"median_us\":12.5";
  std::string dup = text;
  dup.replace(dup.find(key), key.size(), key + ",\"median_us\":99.0");
  EXPECT_NE(ErrorOf({Write("dup.json", dup)}).find("/records/0/median_us: duplicate key"),
            std::string::npos);
  std::string big = text;
  big.replace(big.find(key), key.size(), "\"median_us\":1e309");
  EXPECT_NE(ErrorOf({Write("big.json", big)}).find("/records/0/median_us: number 1e309"),
            std::string::npos);
}

TEST(CalibMeasurements, MissingFieldNamesIt) {
  nlohmann::json d = ValidDoc();
  d["records"][0].erase("bytes");
  const std::string e = ErrorOf({Write("missing.json", d.dump())});
  EXPECT_NE(e.find("/records/0/bytes"), std::string::npos) << e;
}

TEST(CalibMeasurements, UnknownKeyAndFailedCheckAreErrors) {
  nlohmann::json d = ValidDoc();
  d["records"][0]["median_usec"] = 3.0;
  EXPECT_NE(ErrorOf({Write("unknown.json", d.dump())}).find("median_usec"), std::string::npos);
  d = ValidDoc();
  d["records"][1]["check"] = "fail";
  EXPECT_NE(ErrorOf({Write("fail.json", d.dump())}).find("/records/1/check"), std::string::npos);
}

TEST(CalibMeasurements, MixedGpusOrDriversRefused) {
  nlohmann::json a = ValidDoc(), b = ValidDoc(), c = ValidDoc();
  b["gpu"] = "NVIDIA H100 80GB HBM3";
  c["driver"] = "575.0";
  const std::string pa = Write("a.json", a.dump()), pb = Write("b.json", b.dump()),
                    pc = Write("c.json", c.dump());
  std::string e = ErrorOf({pa, pb});
  EXPECT_NE(e.find("b.json"), std::string::npos) << e;
  EXPECT_NE(e.find("H100"), std::string::npos) << e;
  e = ErrorOf({pa, pc});
  EXPECT_NE(e.find("575.0"), std::string::npos) << e;
}

TEST(CalibMeasurements, DryRunRefusedUnlessAllowed) {
  nlohmann::json d = ValidDoc();
  d["dry_run"] = true;
  d["gpu"] = "cpu";
  const std::string p = Write("dry.json", d.dump());
  EXPECT_NE(ErrorOf({p}).find("--allow-dry-run"), std::string::npos);
  ReadOptions o;
  o.allow_dry_run = true;
  auto r = ReadMeasurements({p}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->sources[0].dry_run);
}

// A public file (MEASUREMENTS.md "Public measurements"): a source instead of
// driver/cuda/commit, a GPU model name, one kernel and one step record.
nlohmann::json PublicDoc() {
  nlohmann::json kernel = {{"kernel", "dense_gemm_small_m"},
                           {"op_class", "dense_gemm"},
                           {"dtype", "bf16"},
                           {"weight_dtype", "bf16"},
                           {"shape", {{"m", 16}, {"n", 12288}, {"k", 5376}}},
                           {"achieved_flops_per_s", 46.54e12},
                           {"bytes", 1.3e8},
                           {"flops", 2.0 * 16 * 12288 * 5376}};
  nlohmann::json step = {{"kind", "step"},
                         {"step", "decode"},
                         {"engine", "sglang"},
                         {"engine_version", "0.4.5.post3"},
                         {"model", "DeepSeek-R1"},
                         {"model_card", "deepseek-v3"},
                         {"tp", 8},
                         {"weights", "fp8"},
                         {"kv_dtype", "bf16"},
                         {"batch", {{"running_requests", 50}, {"kv_tokens", 53142}}},
                         {"step_ms", 33.37}};
  return {
      {"format", "capplan.measurements.v1"},
      {"gpu", "H100"},
      {"source",
       {{"url", "https://example.org/run"}, {"date", "2025-04-22"}, {"title", "t"}, {"note", "n"}}},
      {"records", {kernel, step}}};
}

TEST(CalibMeasurements, PublicFileReadsKernelAndStepRecords) {
  auto r = ReadMeasurements({Write("pub.json", PublicDoc().dump())}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->records.size(), 1u);
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_TRUE(r->sources[0].is_public);
  EXPECT_EQ(r->sources[0].gpu_model, "H100");
  const MeasuredKernel& k = r->records[0];
  EXPECT_EQ(k.timing, KernelTiming::kFlopRate);
  // The time is derived from the printed rate: flops / rate.
  EXPECT_NEAR(k.median_us, k.flops / 46.54e12 * 1e6, 1e-9);
  EXPECT_EQ(r->steps[0].running_requests, 50);
  EXPECT_EQ(r->steps[0].kv_tokens, 53142);
  EXPECT_DOUBLE_EQ(r->steps[0].step_ms, 33.37);
  EXPECT_NE(r->sources[0].Describe().find("public: https://example.org/run"), std::string::npos);
}

// A file may name the engine and version its kernels ran in; never one
// without the other, and only engines and release names it can mean.
TEST(CalibMeasurements, EngineAndVersionAreReadTogether) {
  nlohmann::json d = PublicDoc();
  d["engine"] = "trtllm";
  d["engine_version"] = "1.3.0rc20";
  auto r = ReadMeasurements({Write("eng.json", d.dump())}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sources[0].engine, "trtllm");
  EXPECT_EQ(r->sources[0].engine_version, "1.3.0rc20");
  nlohmann::json v = ValidDoc();
  v["engine"] = "sglang";
  v["engine_version"] = "0.4.5.post3";
  r = ReadMeasurements({Write("eng_local.json", v.dump())}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sources[0].engine_version, "0.4.5.post3");
  r = ReadMeasurements({Write("no_eng.json", PublicDoc().dump())}, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sources[0].engine, "");

  nlohmann::json bad = d;
  bad.erase("engine");
  EXPECT_NE(ErrorOf({Write("ver_only.json", bad.dump())}).find("ver_only.json: /engine"),
            std::string::npos);
  bad = d;
  bad.erase("engine_version");
  EXPECT_NE(ErrorOf({Write("eng_only.json", bad.dump())}).find("eng_only.json: /engine_version"),
            std::string::npos);
  bad = d;
  bad["engine"] = "tgi";
  std::string e = ErrorOf({Write("tgi.json", bad.dump())});
  EXPECT_NE(e.find("tgi.json: /engine"), std::string::npos) << e;
  EXPECT_NE(e.find("tgi"), std::string::npos) << e;
  bad = d;
  bad["engine_version"] = "latest";
  e = ErrorOf({Write("latest.json", bad.dump())});
  EXPECT_NE(e.find("latest.json: /engine_version"), std::string::npos) << e;
  bad = d;
  bad["engine_version"] = 24;
  EXPECT_NE(ErrorOf({Write("ver_num.json", bad.dump())}).find("/engine_version"),
            std::string::npos);
}

TEST(CalibMeasurements, PublicFilesMayMixGpusEngineFilesMayNot) {
  nlohmann::json h800 = PublicDoc();
  h800["gpu"] = "H800";
  auto r = ReadMeasurements(
      {Write("ok.json", ValidDoc().dump()), Write("pub100.json", PublicDoc().dump()),
       Write("pub800.json", h800.dump())},
      {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->sources.size(), 3u);
}

TEST(CalibMeasurements, UnknownGpuNamesFileAndPath) {
  nlohmann::json d = PublicDoc();
  d["gpu"] = "A100";
  std::string e = ErrorOf({Write("a100.json", d.dump())});
  EXPECT_NE(e.find("a100.json: /gpu"), std::string::npos) << e;
  EXPECT_NE(e.find("A100"), std::string::npos) << e;
  nlohmann::json v = ValidDoc();
  v["gpu"] = "NVIDIA A100-SXM4-80GB";
  e = ErrorOf({Write("a100_engine.json", v.dump())});
  EXPECT_NE(e.find("a100_engine.json: /gpu: unknown GPU"), std::string::npos) << e;
}

TEST(CalibMeasurements, StepBatchThatDoesNotParseNamesTheField) {
  nlohmann::json d = PublicDoc();
  d["records"][1]["batch"]["running_requests"] = "50";
  std::string e = ErrorOf({Write("step_str.json", d.dump())});
  EXPECT_NE(e.find("step_str.json: /records/1/batch/running_requests"), std::string::npos) << e;
  d = PublicDoc();
  d["records"][1]["batch"] = {{"batch_size", 8}, {"input_tokens", 32}, {"output_tokens", 128}};
  e = ErrorOf({Write("step_kind.json", d.dump())});
  EXPECT_NE(e.find("step_kind.json: /records/1/batch/running_requests"), std::string::npos) << e;
  d = PublicDoc();
  d["records"][1]["batch"]["kv_tokens"] = 10;  // fewer KV tokens than requests
  e = ErrorOf({Write("step_kv.json", d.dump())});
  EXPECT_NE(e.find("/records/1/batch/kv_tokens"), std::string::npos) << e;
  d = PublicDoc();
  d["records"][1]["batch"]["prefill_tokens"] = 10;
  e = ErrorOf({Write("step_extra.json", d.dump())});
  EXPECT_NE(e.find("/records/1/batch/prefill_tokens"), std::string::npos) << e;
  d = PublicDoc();
  d["records"][1].erase("batch");
  e = ErrorOf({Write("step_nobatch.json", d.dump())});
  EXPECT_NE(e.find("/records/1/batch"), std::string::npos) << e;
}

TEST(CalibMeasurements, PublicTimingRules) {
  nlohmann::json d = PublicDoc();
  d["records"][0]["median_us"] = 10.0;  // a time and a rate: which one?
  EXPECT_NE(ErrorOf({Write("two.json", d.dump())}).find("/records/0/median_us"), std::string::npos);
  d = PublicDoc();
  d["records"][0].erase("achieved_flops_per_s");
  d["records"][0]["bus_bandwidth_bytes_per_s"] = 4.8e11;  // not a collective
  EXPECT_NE(ErrorOf({Write("bw.json", d.dump())}).find("/records/0/bus_bandwidth_bytes_per_s"),
            std::string::npos);
  d["records"][0]["op_class"] = "communication";
  d["records"][0]["bus_bandwidth_bytes_per_s"] = {3.7e11, 3.65e11};  // lo > hi
  EXPECT_NE(ErrorOf({Write("bw2.json", d.dump())}).find("/records/0/bus_bandwidth_bytes_per_s"),
            std::string::npos);
  // An engine file states times, never rates.
  nlohmann::json v = ValidDoc();
  v["records"][0].erase("median_us");
  v["records"][0]["achieved_flops_per_s"] = 1e12;
  EXPECT_NE(ErrorOf({Write("rate_engine.json", v.dump())}).find("/records/0/median_us"),
            std::string::npos);
  d = PublicDoc();
  d["source"]["url"] = "/work/somewhere/file.md";
  EXPECT_NE(ErrorOf({Write("url.json", d.dump())}).find("/source/url"), std::string::npos);
  d = PublicDoc();
  d["source"].erase("date");
  EXPECT_NE(ErrorOf({Write("date.json", d.dump())}).find("/source/date"), std::string::npos);
}

// Every shipped public file parses, holds every row of its source table, and
// names its source by address (a user's clone has no local facts files).
TEST(CalibMeasurements, ShippedPublicFilesParse) {
  const std::map<std::string, std::pair<size_t, size_t>> expected = {
      // file: {kernel records, step records}
      {"k1-flashmla-decode-h100.json", {4, 0}},
      {"k2-deepgemm-fp8-gemm-h100.json", {7, 0}},
      {"k2-deepgemm-fp8-gemm-h800.json", {4, 0}},
      {"k3-fp8-vs-bf16-gemm-h100.json", {15, 0}},
      {"k4-marlin-w4a16-h100.json", {9, 0}},
      {"k5-nccl-allreduce-h100.json", {6, 0}},
      {"s1-sglang-deepseek-r1-decode-h200.json", {0, 7}},
      {"s2-vllm-latency-h100.json", {0, 3}},
      {"s2-vllm-latency-h200.json", {0, 3}},
      {"s3-vllm-llama-3.1-8b-itl-h100.json", {0, 2}},
  };
  const std::string dir = DataPath("calibrate/measurements/public");
  std::vector<std::string> all;
  int kernel_db_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    MeasurementSet set;
    const Status st = ReadMeasurementFile(e.path().string(), &set);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(set.sources[0].is_public) << name;
    if (name.rfind("aic-", 0) == 0) {
      // AIConfigurator's kernel database: every record names the kernel
      // implementation it timed, and the file its parquet source at a commit.
      ++kernel_db_files;
      EXPECT_GT(set.records.size(), 10u) << name;
      for (const MeasuredKernel& k : set.records) {
        EXPECT_FALSE(k.implementation.empty()) << name << " /records/" << k.index;
      }
      EXPECT_NE(set.sources[0].source.url.find("ai-dynamo/aiconfigurator/blob/"), std::string::npos)
          << name;
      // Each table was measured in one engine at one version: the file says
      // which, as AIC's path does (<gpu>/<op>/<engine>/<version>/<table>).
      const MeasurementSource& src = set.sources[0];
      EXPECT_FALSE(src.engine.empty()) << name;
      EXPECT_NE(src.source.url.find("/" + src.engine + "/" + src.engine_version + "/"),
                std::string::npos)
          << name << ": engine " << src.engine << " " << src.engine_version << " vs "
          << src.source.url;
      EXPECT_NE(src.source.title.find(" " + src.engine_version + " "), std::string::npos) << name;
    } else {
      ASSERT_TRUE(expected.count(name)) << "unexpected public file " << name;
      EXPECT_EQ(set.records.size(), expected.at(name).first) << name;
      EXPECT_EQ(set.steps.size(), expected.at(name).second) << name;
    }
    for (const MeasuredStep& s : set.steps) {
      if (s.model_card.empty()) continue;
      EXPECT_TRUE(std::filesystem::exists(DataPath("models/cards/" + s.model_card + ".json")))
          << name << ": model_card " << s.model_card;
    }
    if (set.sources[0].gpu != "H200") {
      EXPECT_NE(set.sources[0].source.note.find("fraction of the"), std::string::npos)
          << name << ": a cross-GPU file says how it informs H200";
    }
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text.find("/work/"), std::string::npos) << name;
    EXPECT_EQ(text.find("facts"), std::string::npos) << name;
    all.push_back(e.path().string());
  }
  EXPECT_EQ(all.size(), expected.size() + kernel_db_files);
  EXPECT_GT(kernel_db_files, 0);
  auto r = ReadMeasurements(all, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
}

}  // namespace
}  // namespace capplan::calibrate
