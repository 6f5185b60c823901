// Runs capplan-kernel-bench as the device script does, in --dry-run --quick
// mode (CPU references only), and validates the measurements file it writes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "common/json_util.h"
#include "kernels/harness/measurement.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::kernels {
namespace {

std::string TempPath(const std::string& name) { return test_util::TestTempPath(name); }

int RunBench(const std::string& args, std::string* output) {
  const std::string log = TempPath("bench.log");
  const std::string cmd = std::string(CAPPLAN_KERNEL_BENCH_BIN) + " " + args + " >" + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  FILE* f = std::fopen(log.c_str(), "r");
  output->clear();
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) output->append(buf, n);
    std::fclose(f);
  }
  std::remove(log.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(KernelBenchDryRun, WritesValidMeasurementsForAttentionSuites) {
  const std::string out = TempPath("m.json");
  std::string log;
  const int rc = RunBench(
      "--dry-run --quick --commit abc1234 --suite paged_decode_attention "
      "--suite mla_decode_attention --suite dsa_decode_attention "
      "--suite prefill_attention --suite paged_kv_append "
      "--suite kv_integrity_verify --suite elementwise --out " +
          out,
      &log);
  ASSERT_EQ(rc, 0) << log;
  auto doc = ReadJsonFile(out);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const Status st = ValidateMeasurementsJson(*doc, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ((*doc)["dry_run"], true);
  EXPECT_EQ((*doc)["gpu"], "cpu");
  EXPECT_EQ((*doc)["commit"], "abc1234");
  std::set<std::string> kernels, kv;
  for (const auto& r : (*doc)["records"]) {
    kernels.insert(r["kernel"].get<std::string>());
    if (r.contains("kv_dtype")) kv.insert(r["kv_dtype"].get<std::string>());
    EXPECT_GT(r["median_us"].get<double>(), 0.0);
    EXPECT_GT(r["bytes"].get<double>(), 0.0);
  }
  for (const char* k : {"paged_decode_attention", "mla_decode_attention", "dsa_decode_attention",
                        "prefill_attention", "paged_kv_append", "kv_integrity_verify",
                        "fused_add_rmsnorm", "silu_and_mul", "rope"}) {
    EXPECT_TRUE(kernels.count(k)) << "no record for " << k;
  }
  EXPECT_EQ(kv, (std::set<std::string>{"bf16", "fp8"}));
  EXPECT_NE(log.find("DRY RUN"), std::string::npos) << log;
}

// The smoke gate lists every kernel family and dtype, runs the suites as one
// interleaved case list and exits 0 when every check passed.
TEST(KernelBenchDryRun, SmokeCoversEveryKernelFamilyAndDtype) {
  const std::string out = TempPath("smoke.json");
  std::string log;
  ASSERT_EQ(RunBench("--dry-run --smoke --out " + out, &log), 0) << log;
  auto doc = ReadJsonFile(out);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_TRUE(ValidateMeasurementsJson(*doc, out).ok());
  std::set<std::string> kernels, attn_kv, moe_w;
  std::vector<std::string> order;
  for (const auto& r : (*doc)["records"]) {
    const std::string k = r["kernel"].get<std::string>();
    kernels.insert(k);
    if (order.empty() || order.back() != k) order.push_back(k);
    if (k == "prefill_attention") attn_kv.insert(r["kv_dtype"].get<std::string>());
    if (k.rfind("moe_", 0) == 0) moe_w.insert(r["weight_dtype"].get<std::string>());
    EXPECT_NE(r["check"], "fail") << r.dump();
    EXPECT_NE(r["check"], "error") << r.dump();
  }
  for (const char* k : {"paged_decode_attention", "mla_decode_attention", "dsa_decode_attention",
                        "prefill_attention", "paged_kv_append", "kv_integrity_verify",
                        "fused_add_rmsnorm", "silu_and_mul", "rope", "gemm_bf16", "gemm_fp8",
                        "gemm_w4a16", "moe_grouped_bf16", "moe_grouped_fp8", "moe_grouped_w4a16"}) {
    EXPECT_TRUE(kernels.count(k)) << "no record for " << k;
  }
  EXPECT_EQ(attn_kv, (std::set<std::string>{"bf16", "fp8"}));
  EXPECT_EQ(moe_w, (std::set<std::string>{"bf16", "fp8_block", "int4"}));
  // Round-robin: the first suites' records interleave rather than run in
  // blocks, so the first few records come from different kernel families.
  ASSERT_GE(order.size(), 3u);
  EXPECT_NE(order[0], order[1]);
  EXPECT_NE(log.find("0 failed"), std::string::npos) << log;
}

TEST(KernelBenchDryRun, UnknownSuiteIsAUsageErrorWithSuggestion) {
  std::string log;
  const int rc =
      RunBench("--dry-run --suite paged_decode_atention --out " + TempPath("x.json"), &log);
  EXPECT_EQ(rc, 2) << log;
  EXPECT_NE(log.find("paged_decode_attention"), std::string::npos) << log;
}

TEST(KernelBenchDryRun, MissingOutIsAUsageError) {
  std::string log;
  EXPECT_EQ(RunBench("--dry-run", &log), 2) << log;
  EXPECT_NE(log.find("--out"), std::string::npos) << log;
}

}  // namespace
}  // namespace capplan::kernels
