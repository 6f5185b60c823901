// End-to-end PD runs on Llama 3.1 8B, one GPU per pool (small and fast):
// hand-checked TTFT decomposition for one request, a full decode pool
// holding requests back without losing any, and request/token conservation
// for co-located and PD runs of the same workload.
#include "sim/pd/pd_run.h"

#include <gtest/gtest.h>

#include "sim/sim_state.h"
#include "sim/simulate.h"

namespace capplan {
namespace {

nlohmann::json Pool(const char* kv) {
  return {{"engine", "sglang"}, {"gpus", 1}, {"tp", 1}, {"weights", "bf16"},
          {"kv_cache", kv}, {"page_size", 64}};
}

nlohmann::json Workload(int n, double rate, int64_t in, int64_t out) {
  nlohmann::json w = {{"kind", "open_loop"},
                      {"input_tokens", {{"dist", "fixed"}, {"value", in}}},
                      {"output_tokens", {{"dist", "fixed"}, {"value", out}}},
                      {"num_requests", n},
                      {"seed", 3}};
  if (rate > 0) {
    w["request_rate"] = rate;
  } else {
    w["request_rate"] = nullptr;  // every request at t = 0
  }
  return w;
}

nlohmann::json PdDoc(const nlohmann::json& workload) {
  return {{"name", "pd-test"},
          {"model", "llama-3.1-8b"},
          {"hardware", "h200-sxm"},
          {"pd",
           {{"prefill", Pool("bf16")},
            {"decode", Pool("fp8")},
            {"transfer", {{"link", "nvlink"}, {"layerwise_overlap", false}}}}},
          {"workload", workload}};
}

std::shared_ptr<const PdScenario> MustParse(const nlohmann::json& doc) {
  auto pd = ParsePdScenario(doc, "pd-test.json");
  EXPECT_TRUE(pd.ok()) << pd.status().message();
  return pd.ok() ? *pd : nullptr;
}

// One pool alone, as the simulator's own scenario (for the hand check).
std::vector<ReqState> RunAlone(const nlohmann::json& pool, const char* phase,
                               const nlohmann::json& workload) {
  nlohmann::json doc = {{"name", "alone"}, {"model", "llama-3.1-8b"}, {"hardware", "h200-sxm"},
                        {"deployment", pool}, {"workload", workload}};
  doc["deployment"]["phase"] = phase;
  auto sc = ParseScenario(doc, "alone.json");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  std::vector<ReqState> reqs;
  RunOptions o;
  o.requests_out = &reqs;
  auto r = RunScenario(**sc, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return reqs;
}

// TTFT = queue + prefill + transfer + first decode step, each term from an
// independent run: the prefill pool alone (queue 0 + prefill), the transfer
// formula (hand-checked in kv_transfer_test), the decode pool alone (queue 0
// + first decode step).
TEST(PdRun, TtftIsPrefillPlusTransferPlusFirstDecodeStep) {
  const nlohmann::json w = Workload(1, 0, 2048, 4);
  auto pd = MustParse(PdDoc(w));
  ASSERT_TRUE(pd);
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->requests.size(), 1u);
  const PdRequest& q = r->requests[0];
  ASSERT_TRUE(q.done);

  const auto pre = RunAlone(Pool("bf16"), "prefill_only", w);
  const auto dec = RunAlone(Pool("fp8"), "decode_only", w);
  ASSERT_EQ(pre.size(), 1u);
  ASSERT_EQ(dec.size(), 1u);
  const int64_t prefill_ns = pre[0].finish_ns - pre[0].arrival_ns;
  const int64_t first_step_ns = dec[0].first_token_ns - dec[0].arrival_ns;
  // BF16 -> FP8: the FP8 layout's bytes go on the wire.
  const int64_t transfer_ns = r->transfer.ExposedNs(2048);
  EXPECT_LT(r->transfer.wire_bytes_per_token, r->transfer.src_bytes_per_token);
  EXPECT_EQ(q.transfer_ns, transfer_ns);
  EXPECT_GT(prefill_ns, 0);
  EXPECT_GT(first_step_ns, 0);
  EXPECT_GT(transfer_ns, 30000);  // more than the link latency alone
  EXPECT_EQ(q.first_token_ns - q.arrival_ns, prefill_ns + transfer_ns + first_step_ns);
  EXPECT_NEAR(r->summary["mean_ttft_ms"].get<double>(),
              (prefill_ns + transfer_ns + first_step_ns) / 1e6, 1e-9);
  EXPECT_EQ(q.generated, 4);
}

int64_t MaxDecodeWait(const PdRunResult& r) {
  int64_t m = 0;
  for (const auto& q : r.requests) m = std::max(m, q.first_token_ns - q.decode_arrival_ns);
  return m;
}

// A decode pool with room for about two requests' KV: the rest wait in its
// queue (no failure, no loss) and the wait shows in TTFT.
TEST(PdRun, FullDecodePoolHoldsRequestsBackWithoutLosingAny) {
  // Long outputs, so decodes outlast the prefill pool's spacing of arrivals.
  const nlohmann::json w = Workload(12, 0, 16384, 1024);
  auto roomy = MustParse(PdDoc(w));
  nlohmann::json tight_doc = PdDoc(w);
  // KV pool sized by mem_fraction_static: weights (16 GB BF16) + ~2 requests
  // of 16.4k tokens at FP8: the pool holds under half of the 12 requests.
  tight_doc["pd"]["decode"]["mem_fraction_static"] = 0.14;
  auto tight = MustParse(tight_doc);
  ASSERT_TRUE(roomy && tight);
  auto a = RunPd(*roomy);
  auto b = RunPd(*tight);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  const int64_t cap = b->summary["pools"]["decode"]["kv_capacity_tokens"].get<int64_t>();
  ASSERT_GE(cap, 16384 + 1024) << "the tight pool must still fit one request";
  ASSERT_LT(cap, 6 * (16384 + 64)) << "the tight pool must fit under half of the 12 requests";
  for (const auto* r : {&*a, &*b}) {
    EXPECT_EQ(r->summary["completed"].get<int64_t>(), 12);
    EXPECT_EQ(r->summary["failed"].get<int64_t>(), 0);
    for (const auto& q : r->requests) {
      EXPECT_TRUE(q.done);
      EXPECT_EQ(q.generated, 1024);
    }
  }
  // Held back: some request waited in the decode queue for others to finish
  // (ten times the longest decode-queue wait in the roomy pool).
  EXPECT_GT(MaxDecodeWait(*b), 10 * MaxDecodeWait(*a));
  EXPECT_GT(b->summary["mean_ttft_ms"].get<double>(), a->summary["mean_ttft_ms"].get<double>());
}

// Same workload co-located (one pool, both phases) and disaggregated: every
// request completes exactly once with its output tokens, in both.
TEST(PdRun, ColocatedAndPdConserveRequestsAndTokens) {
  const nlohmann::json w = Workload(40, 20, 0, 0);
  nlohmann::json wl = w;
  wl["input_tokens"] = {{"dist", "uniform"}, {"min", 128}, {"max", 4096}};
  wl["output_tokens"] = {{"dist", "uniform"}, {"min", 1}, {"max", 256}};
  auto pd = MustParse(PdDoc(wl));
  ASSERT_TRUE(pd);
  int64_t want_in = 0, want_out = 0;
  for (const auto& q : pd->prefill->workload.requests) {
    want_in += q.input_tokens;
    want_out += q.output_tokens;
  }
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->summary["completed"].get<int64_t>() + r->summary["failed"].get<int64_t>(), 40);
  EXPECT_EQ(r->summary["completed"].get<int64_t>(), 40);
  EXPECT_EQ(r->summary["total_input_tokens"].get<int64_t>(), want_in);
  EXPECT_EQ(r->summary["total_output_tokens"].get<int64_t>(), want_out);
  for (const auto& q : r->requests) {
    EXPECT_LE(q.arrival_ns, q.prefill_done_ns);
    EXPECT_LT(q.prefill_done_ns, q.decode_arrival_ns);
    EXPECT_LT(q.decode_arrival_ns, q.first_token_ns);
    EXPECT_LE(q.first_token_ns, q.finish_ns);
  }
  EXPECT_EQ(r->summary["gpus"].get<int>(), 2);

  const auto co = RunAlone(Pool("bf16"), "both", wl);
  int64_t in = 0, out = 0, done = 0;
  for (const auto& q : co) {
    done += q.status == ReqStatus::kDone;
    in += q.input;
    out += q.generated;
  }
  EXPECT_EQ(done, 40);
  EXPECT_EQ(in, want_in);
  EXPECT_EQ(out, want_out);
}

TEST(PdRun, ErrorsNameTheFileAndPath) {
  nlohmann::json doc = PdDoc(Workload(1, 0, 128, 4));
  doc["pd"]["decode"]["tpp"] = 2;
  auto bad = ParsePdScenario(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.json: /pd/decode"), std::string::npos)
      << bad.status().message();
  doc = PdDoc(Workload(1, 0, 128, 4));
  doc["pd"]["transfer"]["link"] = "rdmaa";
  bad = ParsePdScenario(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rdma"), std::string::npos);
  doc = PdDoc(Workload(4, 0, 128, 4));
  doc["workload"]["max_concurrency"] = 2;
  bad = ParsePdScenario(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/workload"), std::string::npos);
}

}  // namespace
}  // namespace capplan
