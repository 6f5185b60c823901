// A record's op is read once, typed, where the file is read; calibration
// prices it by that type alone. These tables hold the reader and the pricing
// input to what the string matching in the fit gave before the type existed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "tests/test_util/measurement_doc.h"
#include "tests/test_util/shell.h"

namespace capplan::calibrate {
namespace {

// One record of `op_class` and `kernel`, shaped so that every pricing rule
// finds the fields it reads.
nlohmann::json Record(const std::string& op_class, const std::string& kernel) {
  return {{"kernel", kernel},
          {"op_class", op_class},
          {"dtype", "bf16"},
          {"weight_dtype", "bf16"},
          {"shape",
           {{"m", 64},
            {"rows", 64},
            {"touched_experts", 8},
            {"tokens", 32},
            {"batch", 4},
            {"chunk", 256},
            {"q_heads", 16},
            {"nodes", 10}}},
          {"median_us", 12.5},
          {"bytes", 3.0e5},
          {"flops", 1.6e7}};
}

nlohmann::json Doc(const std::vector<nlohmann::json>& records) {
  return test_util::MeasurementDoc(records);
}

Result<MeasurementSet> ReadOne(const std::string& name, const nlohmann::json& doc) {
  return ReadMeasurements({test_util::WriteTemp(name, doc.dump())}, {});
}

TEST(MeasuredOp, AnUnknownOpClassIsAOneLineErrorNamingFileFieldAndClasses) {
  auto r = ReadOne("unknown_op_class.json", Doc({Record("tensor_core", "gemm_bf16")}));
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("unknown_op_class.json"), std::string::npos) << m;
  EXPECT_NE(m.find("/records/0/op_class"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown value 'tensor_core'"), std::string::npos) << m;
  for (const char* name :
       {"attention", "dense_gemm", "moe", "communication", "elementwise", "overhead"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name << ": " << m;
  }
}

TEST(MeasuredOp, AMisspeltOpClassSuggestsTheClassMeant) {
  auto r = ReadOne("misspelt_op_class.json",
                   Doc({Record("dense_gemm", "gemm_bf16"), Record("atention", "mla_decode")}));
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("/records/1/op_class"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'attention'"), std::string::npos) << m;
}

struct ReadCase {
  const char* op_class;
  const char* kernel;
  MeasuredOp op;
};

// The kernel names the fit told apart by string before (and those it did
// not: a kernel name decides only inside attention and overhead).
const ReadCase kReadCases[] = {
    {"dense_gemm", "gemm_bf16", MeasuredOp::kDenseGemm},
    {"dense_gemm", "prefill_gemm", MeasuredOp::kDenseGemm},
    {"moe", "fused_moe", MeasuredOp::kMoe},
    {"attention", "mla_decode", MeasuredOp::kAttentionDecode},
    {"attention", "flash_mla_decode", MeasuredOp::kAttentionDecode},
    {"attention", "paged_decode_attention", MeasuredOp::kAttentionDecode},
    {"attention", "kv_integrity_verify", MeasuredOp::kAttentionDecode},
    {"attention", "attention_prefill", MeasuredOp::kAttentionPrefill},
    {"attention", "mla_prefill_absorbed", MeasuredOp::kAttentionPrefill},
    {"attention", "prefill_attention", MeasuredOp::kAttentionPrefill},
    {"attention", "paged_kv_append", MeasuredOp::kKvAppend},
    {"elementwise", "fused_add_rmsnorm", MeasuredOp::kElementwise},
    {"elementwise", "paged_kv_append", MeasuredOp::kElementwise},
    {"overhead", "kv_integrity_verify", MeasuredOp::kKvVerify},
    {"overhead", "kernel_launch", MeasuredOp::kKernelLaunch},
    {"overhead", "graph_launch", MeasuredOp::kGraphLaunch},
    {"overhead", "host_sync", MeasuredOp::kOtherOverhead},
    {"overhead", "prefill_launch", MeasuredOp::kOtherOverhead},
    {"communication", "nccl_all_reduce", MeasuredOp::kCommunication},
};

TEST(MeasuredOp, TheReaderTypesEachRecordOnce) {
  std::vector<nlohmann::json> records;
  for (const ReadCase& c : kReadCases) records.push_back(Record(c.op_class, c.kernel));
  auto r = ReadOne("typed_ops.json", Doc(records));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->records.size(), std::size(kReadCases));
  for (size_t i = 0; i < std::size(kReadCases); ++i) {
    EXPECT_EQ(r->records[i].op, kReadCases[i].op)
        << kReadCases[i].op_class << " / " << kReadCases[i].kernel;
  }
}

// What each op priced as before it was typed: the family, or the start of
// the reason the record is not used. No default: a new MeasuredOp fails
// this test's build until its row is written.
struct Priced {
  bool used;
  hw::OpFamily family;
  const char* why;
};
Priced Before(MeasuredOp op) {
  switch (op) {
    case MeasuredOp::kDenseGemm:
      return {true, hw::OpFamily::kDenseGemm, ""};
    case MeasuredOp::kMoe:
      return {true, hw::OpFamily::kGroupedGemm, ""};
    case MeasuredOp::kAttentionDecode:
      return {true, hw::OpFamily::kAttentionDecode, ""};
    case MeasuredOp::kAttentionPrefill:
      return {true, hw::OpFamily::kAttentionPrefill, ""};
    case MeasuredOp::kKvAppend:
      return {true, hw::OpFamily::kElementwise, ""};
    case MeasuredOp::kElementwise:
      return {true, hw::OpFamily::kElementwise, ""};
    case MeasuredOp::kKvVerify:
      return {true, hw::OpFamily::kAttentionDecode, ""};
    case MeasuredOp::kKernelLaunch:
    case MeasuredOp::kGraphLaunch:
    case MeasuredOp::kOtherOverhead:
      return {false, hw::OpFamily::kElementwise, "no efficiency class prices kernel '"};
    case MeasuredOp::kCommunication:
      return {false, hw::OpFamily::kElementwise, "collectives are not fitted"};
  }
  return {false, hw::OpFamily::kElementwise, "?"};
}

TEST(MeasuredOp, EachOpPricesAsTheFamilyItDidBefore) {
  std::vector<nlohmann::json> records;
  for (const ReadCase& c : kReadCases) records.push_back(Record(c.op_class, c.kernel));
  auto r = ReadOne("priced_ops.json", Doc(records));
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const MeasuredKernel& k : r->records) {
    const Priced want = Before(k.op);
    hw::OpPricingInput in;
    std::string why;
    const bool used = PricingInputOf(k, &in, &why);
    ASSERT_EQ(used, want.used) << k.kernel << ": " << why;
    if (used) {
      EXPECT_EQ(in.family, want.family) << k.kernel;
    } else {
      EXPECT_EQ(why.rfind(want.why, 0), 0u) << k.kernel << ": " << why;
    }
  }
}

// The shape each family reads, and the 16-bit rate attention is priced at
// whatever the record's dtype (the KV append and verify keep theirs).
TEST(MeasuredOp, PricingInputsReadTheShapesTheyDidBefore) {
  MeasuredKernel k;
  k.dtype = "fp8";
  k.weight_dtype = "fp8";
  k.shape = {{"batch", 4}, {"chunk", 256}, {"q_heads", 16}, {"tokens", 32}};
  hw::OpPricingInput in;
  std::string why;
  k.op = MeasuredOp::kAttentionPrefill;
  ASSERT_TRUE(PricingInputOf(k, &in, &why)) << why;
  EXPECT_EQ(in.q_tokens, 4 * 256);
  EXPECT_EQ(in.compute, hw::FormatId::kBf16);
  in = {};
  k.op = MeasuredOp::kAttentionDecode;
  ASSERT_TRUE(PricingInputOf(k, &in, &why)) << why;
  EXPECT_EQ(in.q_tokens, 4);
  EXPECT_EQ(in.heads, 16);
  EXPECT_EQ(in.compute, hw::FormatId::kBf16);
  in = {};
  k.op = MeasuredOp::kKvVerify;
  ASSERT_TRUE(PricingInputOf(k, &in, &why)) << why;
  EXPECT_EQ(in.q_tokens, 4);
  EXPECT_EQ(in.compute, hw::FormatId::kFp8E4m3);
  in = {};
  k.op = MeasuredOp::kKvAppend;
  ASSERT_TRUE(PricingInputOf(k, &in, &why)) << why;
  EXPECT_EQ(in.m, 32);
  EXPECT_EQ(in.compute, hw::FormatId::kFp8E4m3);
}

// Records the simulator has no op for keep their reasons, typed.
TEST(MeasuredOp, RefusedRecordsKeepTheirReasons) {
  MeasuredKernel k;
  k.kernel = "host_sync";
  k.op = MeasuredOp::kOtherOverhead;
  hw::OpPricingInput in;
  std::string why;
  EXPECT_FALSE(PricingInputOf(k, &in, &why));
  EXPECT_EQ(why, "no efficiency class prices kernel 'host_sync'");
  k.op = MeasuredOp::kDenseGemm;
  k.weight_dtype = "int8";
  k.shape = {{"m", 64}};
  EXPECT_FALSE(PricingInputOf(k, &in, &why));
  EXPECT_EQ(why, "no efficiency class prices W8A16 GEMMs (the simulator has none)");
  k.op = MeasuredOp::kMoe;
  k.shape = {{"rows", 64}};
  EXPECT_FALSE(PricingInputOf(k, &in, &why));
  EXPECT_EQ(why, "moe record without shape.rows and shape.touched_experts");
}

// A bus bandwidth is a collective's figure only: the reader asks the type.
TEST(MeasuredOp, OnlyCommunicationRecordsGiveABusBandwidth) {
  nlohmann::json rec = Record("moe", "fused_moe");
  rec.erase("median_us");
  rec["bus_bandwidth_bytes_per_s"] = 4e11;
  nlohmann::json doc = Doc({rec});
  doc.erase("driver");
  doc.erase("cuda");
  doc.erase("commit");
  doc.erase("date");
  doc.erase("dry_run");
  doc["gpu"] = "H200";
  doc["source"] = {
      {"url", "https://example.org/nccl"}, {"date", "2026-01"}, {"title", "t"}, {"note", "n"}};
  auto r = ReadOne("moe_bus.json", doc);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only communication records give a bus bandwidth"),
            std::string::npos)
      << r.status().message();
  doc["records"][0]["op_class"] = "communication";
  doc["records"][0]["kernel"] = "nccl_all_reduce";
  r = ReadOne("comm_bus.json", doc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->records[0].op, MeasuredOp::kCommunication);
  EXPECT_EQ(r->records[0].timing, KernelTiming::kBusBandwidth);
}

}  // namespace
}  // namespace capplan::calibrate
