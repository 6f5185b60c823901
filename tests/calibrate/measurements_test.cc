// The strict measurement reader: every bad record is a one-line error naming
// the file, the record index and the field.
#include "calibrate/measurements.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace capplan {
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
  return {{"format", "capplan.measurements.v1"},
          {"gpu", "NVIDIA H200"},
          {"driver", "580.1"},
          {"cuda", "13.0"},
          {"commit", "abc1234"},
          {"date", "2026-11-29T23:10:00Z"},
          {"dry_run", false},
          {"records", {rec, rec}}};
}

std::string Write(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("capplan_calib_meas_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
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

}  // namespace
}  // namespace capplan
