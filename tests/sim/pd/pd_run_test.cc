// End-to-end PD runs on Llama 3.1 8B, one GPU per pool (small and fast):
// hand-checked TTFT decomposition for one request, a full decode pool
// holding requests back without losing any, a prefill pool back-pressured by
// KV it holds for slow transfers, request/token conservation for co-located
// and PD runs of the same workload, the end-to-end concurrency cap, and
// determinism.
#include "sim/pd_link.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/data_path.h"
#include "common/json_util.h"
#include "sim/prepared_run.h"
#include "sim/scenario.h"
#include "sim/sim_state.h"
#include "sim/simulate.h"
#include "tests/test_util/pd_run.h"
#include "tests/test_util/temp_dir.h"

namespace capplan::sim::pd {
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

std::shared_ptr<const Scenario> MustParse(const nlohmann::json& doc) {
  auto pd = ParseScenario(doc, "pd-test.json");
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
  EXPECT_NEAR(schema::ToJson(r->summary)["mean_ttft_ms"].get<double>(),
              (prefill_ns + transfer_ns + first_step_ns) / 1e6, 1e-9);
  EXPECT_EQ(q.generated, 4);
}

// Nanoseconds of one iteration as the simulator rounds it.
int64_t StepNs(StepPricer& pricer, const StepWork& w) {
  return std::max<int64_t>(1, std::llround(pricer.Price(w).seconds * 1e9));
}

// The same single request, every term computed outside the event loop: the
// prefill pool's pricer for one 2048-token chunk (2048 < the 8192-token
// chunk budget), the transfer by hand from the card and the profile, the
// decode pool's pricer for one decode of context 2049. No queueing: the
// decode pool reserves at arrival, the prefill pool is idle.
TEST(PdRun, TtftHandCheckedFromThePricersAndTheLink) {
  const nlohmann::json w = Workload(1, 0, 2048, 4);
  auto pd = MustParse(PdDoc(w));
  ASSERT_TRUE(pd);
  auto pre = PrepareRun(*pd, 0, RunOptions{});
  auto dec = PrepareRun(*pd, 1, RunOptions{});
  ASSERT_TRUE(pre.ok() && dec.ok());
  StepWork pw;
  pw.prefill.push_back({2048, 0});
  const int64_t prefill_ns = StepNs((*pre)->pricer(), pw);
  StepWork dw;
  dw.decode_n = 1;
  dw.decode_ctx_sum = 2048 + 1;
  const int64_t decode_ns = StepNs((*dec)->pricer(), dw);
  // Llama 3.1 8B, TP1, FP8 KV on the wire (decode pool's dtype, narrower
  // than the prefill pool's BF16): 2 (K, V) * 8 KV heads * 128 dims * 1 B *
  // 32 layers = 65536 B/token (+ FP8 scales, if the layout has any). NVLink:
  // 30 us (link_defaults.json) + bytes / 450e9 B/s (h200-sxm profile), no
  // layer overlap.
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t scales = r->transfer.wire_bytes_per_token - 65536;
  EXPECT_GE(scales, 0);
  EXPECT_LT(scales, 65536 / 8);
  const int64_t transfer_ns = std::llround(
      (30e-6 + 2048.0 * r->transfer.wire_bytes_per_token / 450e9) * 1e9);
  const PdRequest& q = r->requests[0];
  ASSERT_TRUE(q.done);
  EXPECT_EQ(q.arrival_ns, 0);
  EXPECT_EQ(q.reserve_ns, 0);
  EXPECT_EQ(q.prefill_admit_ns, 0);
  EXPECT_EQ(q.prefill_done_ns, prefill_ns);
  EXPECT_NEAR(q.transfer_ns, transfer_ns, 1);
  EXPECT_EQ(q.decode_arrival_ns, q.prefill_done_ns + q.transfer_ns);
  EXPECT_EQ(q.decode_admit_ns, q.decode_arrival_ns);
  EXPECT_EQ(q.first_token_ns - q.arrival_ns, prefill_ns + q.transfer_ns + decode_ns);
  EXPECT_NEAR(schema::ToJson(r->summary)["mean_ttft_ms"].get<double>(),
              (prefill_ns + q.transfer_ns + decode_ns) / 1e6, 1e-9);
  const nlohmann::json pools = schema::ToJson(r->summary)["pools"];
  EXPECT_EQ(pools["decode"]["mean_reservation_wait_ms"].get<double>(), 0.0);
  EXPECT_EQ(pools["prefill"]["mean_prefill_queue_ms"].get<double>(), 0.0);
  EXPECT_EQ(pools["decode"]["mean_decode_queue_ms"].get<double>(), 0.0);
  EXPECT_NEAR(pools["decode"]["mean_first_decode_step_ms"].get<double>(), decode_ns / 1e6, 1e-9);
  // The prompt's 32 pages were held by the prefill pool for the transfer
  // and reserved in the decode pool before it.
  EXPECT_EQ(pools["prefill"]["peak_transfer_pages"].get<int64_t>(), 2048 / 64);
  EXPECT_EQ(pools["decode"]["peak_transfer_pages"].get<int64_t>(), 2048 / 64);
}

int64_t MaxReservationWait(const PdRunResult& r) {
  int64_t m = 0;
  for (const auto& q : r.requests) m = std::max(m, q.reserve_ns - q.arrival_ns);
  return m;
}

// A decode pool with room for about two requests' KV: the rest wait in its
// prealloc queue -- before their prefill, holding no prefill KV -- with no
// failure and no loss, and the wait shows in TTFT.
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
  const int64_t cap =
      schema::ToJson(b->summary)["pools"]["decode"]["kv_capacity_tokens"].get<int64_t>();
  ASSERT_GE(cap, 16384 + 1024) << "the tight pool must still fit one request";
  ASSERT_LT(cap, 6 * (16384 + 64)) << "the tight pool must fit under half of the 12 requests";
  for (const auto* r : {&*a, &*b}) {
    EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), 12);
    EXPECT_EQ(schema::ToJson(r->summary)["failed"].get<int64_t>(), 0);
    for (const auto& q : r->requests) {
      EXPECT_TRUE(q.done);
      EXPECT_EQ(q.generated, 1024);
    }
  }
  // The roomy pool reserves everything at arrival; the tight one makes
  // requests wait for pages that decodes free.
  EXPECT_EQ(MaxReservationWait(*a), 0);
  EXPECT_GT(MaxReservationWait(*b), 1000000000) << "some request waited over a second";
  EXPECT_GT(schema::ToJson(b->summary)["mean_ttft_ms"].get<double>(),
            schema::ToJson(a->summary)["mean_ttft_ms"].get<double>());
  // Never more reserved than the pool holds.
  const nlohmann::json dp = schema::ToJson(b->summary)["pools"]["decode"];
  EXPECT_LE(dp["peak_kv_pages_per_rank"].get<int64_t>(), dp["kv_pages_per_rank"].get<int64_t>());
  // Waiting for a reservation happens before the prefill: a held-back
  // request is prefilled only after it got its pages.
  for (const auto& q : b->requests) {
    EXPECT_LE(q.reserve_ns, q.prefill_admit_ns);
    EXPECT_LT(q.prefill_admit_ns, q.prefill_done_ns);
  }
}

int64_t MaxPrefillQueueWait(const PdRunResult& r) {
  int64_t m = 0;
  for (const auto& q : r.requests) m = std::max(m, q.prefill_admit_ns - q.reserve_ns);
  return m;
}

// The h200-sxm profile with RDMA slowed to `bytes_per_s`, as a file: a link
// slow enough that transfers outlast prefills.
std::string SlowLinkProfile(double bytes_per_s) {
  auto doc = ReadJsonFile(DataPath("calibrate/profiles/h200-sxm.json"));
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  if (!doc.ok()) return "";
  (*doc)["collectives"]["rdma_bytes_per_s"]["value"] = bytes_per_s;
  const std::string path = test_util::TestTempPath("pd_slow_link.json");
  std::ofstream(path) << doc->dump();
  return path;
}

// Transfers slower than prefills (RDMA at 0.25 GB/s, no layer overlap): the
// prefill pool keeps each computed prompt's KV until its transfer ends, so
// its pool fills with held pages and later prompts wait to be admitted. The
// controls: the same tight pool on a fast link, and the slow link with a
// roomy prefill pool, wait only for prefill compute (the same as each other).
TEST(PdRun, SlowTransfersBackPressureThePrefillPool) {
  const nlohmann::json w = Workload(8, 0, 8192, 16);
  nlohmann::json fast = PdDoc(w);
  fast["pd"]["transfer"] = {{"link", "rdma"}, {"layerwise_overlap", false}};
  // Prefill pool KV for about three 8K prompts (16 GB of BF16 weights).
  fast["pd"]["prefill"]["mem_fraction_static"] = 0.135;
  nlohmann::json slow = fast;
  const std::string profile = SlowLinkProfile(0.25e9);
  ASSERT_FALSE(profile.empty());
  slow["hardware"] = profile;
  nlohmann::json slow_roomy = slow;
  slow_roomy["pd"]["prefill"].erase("mem_fraction_static");
  auto f = MustParse(fast);
  auto s = MustParse(slow);
  auto sr = MustParse(slow_roomy);
  ASSERT_TRUE(f && s && sr);
  auto a = RunPd(*f);
  auto b = RunPd(*s);
  auto c = RunPd(*sr);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(c.ok()) << c.status().message();
  const nlohmann::json pp = schema::ToJson(b->summary)["pools"]["prefill"];
  const int64_t prompt_pages = 8192 / 64;
  ASSERT_LT(pp["kv_pages_per_rank"].get<int64_t>(), 4 * prompt_pages)
      << "the prefill pool must hold under four prompts";
  ASSERT_GE(pp["kv_pages_per_rank"].get<int64_t>(), 2 * prompt_pages);
  // Slow link: 8192 * 65.5 kB / 0.25 GB/s = 2.1 s per transfer, far more
  // than a prefill: held prompts pile up, and they count in the pool's KV use.
  EXPECT_GE(pp["peak_transfer_pages"].get<int64_t>(), 2 * prompt_pages);
  EXPECT_GE(pp["peak_kv_pages_per_rank"].get<int64_t>(), pp["peak_transfer_pages"].get<int64_t>());
  EXPECT_LE(pp["peak_kv_pages_per_rank"].get<int64_t>(), pp["kv_pages_per_rank"].get<int64_t>());
  // Back-pressure: prompts waited in the prefill queue for held KV to leave,
  // much longer than with the fast link.
  EXPECT_GT(MaxPrefillQueueWait(*b), 2 * MaxPrefillQueueWait(*a))
      << MaxPrefillQueueWait(*b) << " vs " << MaxPrefillQueueWait(*a);
  EXPECT_EQ(MaxPrefillQueueWait(*c), MaxPrefillQueueWait(*a));
  EXPECT_EQ(schema::ToJson(a->summary)["pools"]["prefill"]["peak_transfer_pages"].get<int64_t>(),
            prompt_pages);
  for (const auto* r : {&*a, &*b, &*c}) {
    EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), 8);
    for (const auto& q : r->requests) {
      EXPECT_TRUE(q.done);
      EXPECT_EQ(q.generated, 16);
    }
  }
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
  for (const auto& q : pd->workload.requests) {
    want_in += q.input_tokens;
    want_out += q.output_tokens;
  }
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>() +
                schema::ToJson(r->summary)["failed"].get<int64_t>(),
            40);
  EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), 40);
  EXPECT_EQ(schema::ToJson(r->summary)["total_input_tokens"].get<int64_t>(), want_in);
  EXPECT_EQ(schema::ToJson(r->summary)["total_output_tokens"].get<int64_t>(), want_out);
  for (const auto& q : r->requests) {
    EXPECT_LE(q.arrival_ns, q.prefill_done_ns);
    EXPECT_LT(q.prefill_done_ns, q.decode_arrival_ns);
    EXPECT_LT(q.decode_arrival_ns, q.first_token_ns);
    EXPECT_LE(q.first_token_ns, q.finish_ns);
  }
  EXPECT_EQ(schema::ToJson(r->summary)["gpus"].get<int>(), 2);
  for (const char* pool : {"prefill", "decode"}) {
    const double u = schema::ToJson(r->summary)["pools"][pool]["utilization"].get<double>();
    EXPECT_GT(u, 0.0) << pool;
    EXPECT_LE(u, 1.0) << pool;
  }

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
  auto bad = ParseScenario(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.json: /pd/decode"), std::string::npos)
      << bad.status().message();
  doc = PdDoc(Workload(1, 0, 128, 4));
  doc["pd"]["transfer"]["link"] = "rdmaa";
  bad = ParseScenario(doc, "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rdma"), std::string::npos);
}

// The workload's concurrency cap is end to end: a request holds its slot
// from entering the decode pool's prealloc queue until its last token.
TEST(PdRun, ConcurrencyCapSpansBothPools) {
  nlohmann::json doc = PdDoc(Workload(10, 0, 1024, 32));
  doc["workload"]["max_concurrency"] = 2;
  auto pd = MustParse(doc);
  ASSERT_TRUE(pd);
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), 10);
  std::vector<std::pair<int64_t, int>> ev;
  for (const auto& q : r->requests) {
    ev.push_back({q.arrival_ns, +1});
    ev.push_back({q.finish_ns, -1});
  }
  std::sort(ev.begin(), ev.end());  // a finish (-1) first at equal times
  int in_flight = 0, peak = 0;
  for (const auto& [t, d] : ev) peak = std::max(peak, in_flight += d);
  EXPECT_EQ(peak, 2);
}

// Requests that can never fit fail -- at the decode reservation, or in the
// prefill pool, which then gives the decode reservation back -- and every
// page returns to both pools (RunPd checks conservation and would fail).
TEST(PdRun, TooLargeRequestsFailWithoutLeakingPages) {
  // Decode pool of under 6 * 16.4k tokens (see above); prefill pool of
  // under four 8K prompts (SlowTransfersBackPressureThePrefillPool).
  nlohmann::json dec_tight = PdDoc(Workload(3, 0, 110000, 8));
  dec_tight["pd"]["decode"]["mem_fraction_static"] = 0.14;
  nlohmann::json pre_tight = PdDoc(Workload(3, 0, 60000, 8));
  pre_tight["pd"]["prefill"]["mem_fraction_static"] = 0.135;
  const char* failing_pool[2] = {"decode", "prefill"};
  int k = 0;
  for (const auto& doc : {dec_tight, pre_tight}) {
    const std::string pool = failing_pool[k++];
    const std::string other = pool == "decode" ? "prefill" : "decode";
    auto pd = MustParse(doc);
    ASSERT_TRUE(pd);
    auto r = RunPd(*pd);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), 0);
    EXPECT_EQ(schema::ToJson(r->summary)["failed"].get<int64_t>(), 3);
    for (const auto& q : r->requests) EXPECT_FALSE(q.done);
    EXPECT_EQ(schema::ToJson(r->summary)["pools"]["decode"]["completed"].get<int64_t>(), 0);
    // Each pool reports its own failures only.
    EXPECT_EQ(schema::ToJson(r->summary)["pools"][pool]["failed"].get<int64_t>(), 3) << pool;
    EXPECT_EQ(schema::ToJson(r->summary)["pools"][other]["failed"].get<int64_t>(), 0) << other;
    EXPECT_EQ(schema::ToJson(r->summary)["pools"][other]["warnings"].size(), 0u) << other;
    // What the CLI and sweeps report for it: an impossible configuration.
    const Status st = RequireCompletions(*r);
    EXPECT_EQ(st.code(), StatusCode::kInvalidConfig) << pool;
    EXPECT_NE(st.message().find("/workload: all 3 requests failed"), std::string::npos)
        << st.message();
  }
}

// Same scenario and seed, same run, to the byte.
TEST(PdRun, DeterministicForASeed) {
  nlohmann::json wl = Workload(30, 15, 0, 0);
  wl["input_tokens"] = {{"dist", "uniform"}, {"min", 128}, {"max", 8192}};
  wl["output_tokens"] = {{"dist", "uniform"}, {"min", 1}, {"max", 512}};
  nlohmann::json doc = PdDoc(wl);
  doc["pd"]["decode"]["mem_fraction_static"] = 0.14;  // some requests wait
  doc["workload"]["warmup_requests"] = 5;
  auto pd = MustParse(doc);
  ASSERT_TRUE(pd);
  auto a = RunPd(*pd);
  auto b = RunPd(*pd);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(schema::ToJson(a->summary)["completed"].get<int64_t>(), 25);  // warmup excluded
  // Busy time includes warmup, so does the span utilization divides by.
  EXPECT_LE(schema::ToJson(a->summary)["pools"]["decode"]["utilization"].get<double>(), 1.0);
  EXPECT_EQ(schema::ToJson(a->summary).dump(), schema::ToJson(b->summary).dump());
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].first_token_ns, b->requests[i].first_token_ns);
    EXPECT_EQ(a->requests[i].finish_ns, b->requests[i].finish_ns);
  }
  nlohmann::json other = doc;
  other["workload"]["seed"] = 4;
  auto c = RunPd(**ParseScenario(other, "x.json"));
  ASSERT_TRUE(c.ok());
  EXPECT_NE(schema::ToJson(a->summary).dump(), schema::ToJson(c->summary).dump())
      << "the seed must matter";
}

// A decode pool that over-admits (the new-token reservation decays to 0.098
// of the remaining output) must retract running decodes when they outgrow it.
// As in SGLang's decode server, a retracted request's KV goes to host memory
// and the request re-reserves before any new prealloc, then resumes without a
// second prefill. Before this existed, a retracted request put back at the
// head of the decode waiting queue waited for pages held by reserved
// requests queued behind it, and the run stalled with requests in flight.
TEST(PdRun, RetractedDecodesResumeWithoutStallingThePool) {
  const int n = 32;
  nlohmann::json doc = PdDoc(Workload(n, 0, 2048, 4096));
  doc["pd"]["decode"]["mem_fraction_static"] = 0.14;
  auto pd = MustParse(doc);
  ASSERT_TRUE(pd);
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json dp = schema::ToJson(r->summary)["pools"]["decode"];
  const int64_t cap = dp["kv_capacity_tokens"].get<int64_t>();
  ASSERT_LT(cap, n * (2048 + 4096) / 2) << "the pool must be too small for the whole batch";
  EXPECT_GT(dp["retractions"].get<int64_t>(), 0) << "the setup must make the decode pool retract";
  EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>(), n);
  EXPECT_EQ(schema::ToJson(r->summary)["failed"].get<int64_t>(), 0);
  for (const auto& q : r->requests) {
    EXPECT_TRUE(q.done);
    EXPECT_EQ(q.generated, 4096) << "a resumed request continues where it stopped";
  }
  // Each prompt was prefilled once: the prefill pool completed each request
  // exactly once and nothing else.
  EXPECT_EQ(schema::ToJson(r->summary)["pools"]["prefill"]["completed"].get<int64_t>(), n);

  // The configuration a PD ratio search hit (shipped GLM-5.2 PD scenario, FP8
  // decode weights, 16 req/s): it stalled with 7 of 135 requests in flight.
  auto glm = LoadScenarioFile(
      DataPath("scenarios/pd-glm-5.2.json"),
      {"pd.decode.weights=fp8", "workload.request_rate=16", "workload.num_requests=135"});
  ASSERT_TRUE(glm.ok()) << glm.status().message();
  auto g = RunPd(**glm);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_GT(schema::ToJson(g->summary)["pools"]["decode"]["retractions"].get<int64_t>(), 0);
  EXPECT_EQ(schema::ToJson(g->summary)["failed"].get<int64_t>(), 0);
  for (const auto& q : g->requests) EXPECT_TRUE(q.done);
}

// Conservation under stress: tight decode pools, bursty rates, mixed
// lengths and both schedulers. Every run must end with every request
// completed or failed and every page back (RunPd returns an Internal error
// otherwise); a stall like the retraction one above shows up here.
TEST(PdRun, StressRunsConserveRequests) {
  int runs = 0;
  for (const char* sched : {"sglang", "vllm"}) {
    for (double mfs : {0.14, 0.2}) {
      for (double rate : {4.0, 32.0}) {
        for (int seed : {1, 2}) {
          nlohmann::json wl = Workload(60, rate, 0, 0);
          wl["input_tokens"] = {{"dist", "uniform"}, {"min", 256}, {"max", 12000}};
          wl["output_tokens"] = {{"dist", "uniform"}, {"min", 1}, {"max", 3000}};
          wl["seed"] = seed;
          nlohmann::json doc = PdDoc(wl);
          doc["pd"]["decode"]["mem_fraction_static"] = mfs;
          doc["pd"]["prefill"]["engine"] = sched;
          doc["pd"]["decode"]["engine"] = sched;
          auto pd = MustParse(doc);
          ASSERT_TRUE(pd);
          auto r = RunPd(*pd);
          ASSERT_TRUE(r.ok()) << sched << " mfs " << mfs << " rate " << rate << " seed " << seed
                              << ": " << r.status().message();
          EXPECT_EQ(schema::ToJson(r->summary)["completed"].get<int64_t>() +
                        schema::ToJson(r->summary)["failed"].get<int64_t>(),
                    60);
          ++runs;
        }
      }
    }
  }
  EXPECT_EQ(runs, 16);
}

// Multi-turn sessions across a PD pair: the decode pool, where a request
// enters and leaves, issues each next turn think time after the previous
// one finished; the prefill pool's prefix cache serves the re-sent history.
TEST(PdRun, SessionsIssueEachTurnAfterThePreviousOneAndHitThePrefillCache) {
  const nlohmann::json w = nlohmann::json::parse(R"({"kind": "sessions", "sessions": 4,
      "num_sessions": 8, "turns": {"dist": "fixed", "value": 3}, "system_prompt_tokens": 1024,
      "user_tokens": {"dist": "fixed", "value": 256}, "output_tokens": {"dist": "fixed", "value": 32},
      "think_time_s": 0.5, "warmup_requests": 0, "seed": 3})");
  auto pd = MustParse(PdDoc(w));
  ASSERT_TRUE(pd);
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& wl = pd->workload;
  ASSERT_EQ(r->requests.size(), 24u);
  ASSERT_EQ(wl.after.size(), 24u);
  int64_t follow_ups = 0;
  for (size_t i = 0; i < r->requests.size(); ++i) {
    const PdRequest& q = r->requests[i];
    ASSERT_TRUE(q.done) << i;
    if (wl.after[i] < 0) continue;
    ++follow_ups;
    const PdRequest& prev = r->requests[static_cast<size_t>(wl.after[i])];
    EXPECT_EQ(q.arrival_ns, prev.finish_ns + wl.think_ns[i]) << i;
  }
  // 4 sessions open at once: the other 4 each start when one of them ends,
  // so only the first 4 requests are issued by arrival time.
  EXPECT_EQ(follow_ups, 20);
  const schema::PoolSummary* pre = nullptr;
  for (const auto& p : r->summary.pools) {
    if (p.role == schema::PoolRole::kPrefill) pre = &p;
  }
  ASSERT_NE(pre, nullptr);
  // Turns 2 and 3 find at least the system prompt and the first turn cached.
  EXPECT_GT(pre->prefix_cache_hit_rate.value_or(0), 0.3);
}

// Speculative decoding in the decode pool only: every request completes,
// the pools conserve their pages (RunPd fails otherwise), the decode pool
// reports its accept length near 1 + 0.8 + 0.64 = 2.44, and TPOT drops.
TEST(PdRun, SpeculativeDecodePoolEmitsSeveralTokensPerStep) {
  nlohmann::json doc = PdDoc(Workload(40, 4.0, 1024, 256));
  auto plain = MustParse(doc);
  doc["pd"]["decode"]["speculative"] = {
      {"method", "eagle"}, {"draft_tokens", 2}, {"acceptance", {0.8, 0.8}}};
  auto spec = MustParse(doc);
  ASSERT_TRUE(plain && spec);
  auto a = RunPd(*plain);
  auto b = RunPd(*spec);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  const nlohmann::json ja = schema::ToJson(a->summary), jb = schema::ToJson(b->summary);
  EXPECT_EQ(jb["completed"], 40);
  EXPECT_NEAR(jb["pools"]["decode"]["accept_length_mean"].get<double>(), 2.44, 0.1);
  EXPECT_FALSE(jb["pools"]["prefill"].contains("accept_length_mean"));
  EXPECT_LT(jb["median_tpot_ms"].get<double>(), ja["median_tpot_ms"].get<double>());
}

}  // namespace
}  // namespace capplan::sim::pd

namespace capplan::sim::pd {
namespace {

// requests.csv of linked pools: streamed by the run driver through the
// request log's block writer, one row per request in workload order with
// its time in each stage, each time as an iostream with precision 9 writes
// it (the format the file has always had).
TEST(PdRun, RequestsCsvRowsAreEachRequestsStages) {
  auto pd = MustParse(PdDoc(Workload(40, 20, 1500, 30)));
  ASSERT_TRUE(pd);
  RunOptions o;
  o.want_requests_csv = true;
  auto run = RunScenario(*pd, o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto r = RunPd(*pd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  std::ostringstream want;
  want.precision(9);
  want << "id,arrival_ms,prefill_done_ms,transfer_ms,decode_arrival_ms,first_token_ms,finish_ms,"
          "input_tokens,output_tokens,ttft_ms,e2el_ms,warmup,status,reserve_ms,prefill_admit_ms,"
          "decode_admit_ms\n";
  for (const PdRequest& q : r->requests) {
    want << q.id << ',' << ms(q.arrival_ns) << ',' << ms(q.prefill_done_ns) << ','
         << ms(q.transfer_ns) << ',' << ms(q.decode_arrival_ns) << ',' << ms(q.first_token_ns)
         << ',' << ms(q.finish_ns) << ',' << q.input << ',' << q.generated << ','
         << (q.done ? ms(q.first_token_ns - q.arrival_ns) : 0) << ','
         << (q.done ? ms(q.finish_ns - q.arrival_ns) : 0) << ',' << (q.warmup ? 1 : 0) << ','
         << (q.done ? "completed" : "failed") << ',' << ms(q.reserve_ns) << ','
         << ms(q.prefill_admit_ns) << ',' << ms(q.decode_admit_ns) << '\n';
  }
  EXPECT_EQ(r->requests.size(), 40u);
  EXPECT_TRUE(run->requests_csv == want.str()) << run->requests_csv.substr(0, 400);
  // Both pools' summaries come from one driver: the run names its profile
  // as a co-located run does, and each pool reports only its own failures.
  ASSERT_TRUE(run->summary.profile.has_value());
  EXPECT_EQ(run->summary.profile->name, "h200-sxm");
  for (const auto& p : run->summary.pools) EXPECT_EQ(p.failed.value_or(-1), 0) << p.name;
}

}  // namespace
}  // namespace capplan::sim::pd
