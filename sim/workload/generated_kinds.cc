// closed_loop and open_loop: requests with lengths drawn from distributions.
#include <cmath>
#include <limits>
#include <sstream>

#include "common/huge_pages.h"
#include "common/memory_budget.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/clients.h"
#include "sim/workload/length_dist.h"
#include "sim/workload/random.h"
#include "sim/workload/workload_kinds.h"

namespace capplan::sim {

namespace {

// What one request costs a run that streams its requests (RunScenario,
// `simulate --out`): its 32-byte spec, its 24 bytes of latency samples and
// the request table's 8-byte pointer; simulator state and requests.csv rows
// are held only while a request is in flight. Measured: a 10,000,000-row
// trace replay peaks at 826 MB RSS (while the trace loads: its rows and the
// workload side by side), 610 MB above the 216 MB of `capplan --help`, 61
// bytes a request; rounded up for vectors' slack.
constexpr int64_t kBytesPerRequest = 96;

Status ReadNumRequests(JsonObject& w, int64_t* n) {
  CAPPLAN_RETURN_IF_ERROR(w.Get("num_requests", n, true));
  CAPPLAN_RETURN_IF_ERROR(w.CheckRange("num_requests", static_cast<double>(*n), 1, kMaxRequests));
  return CheckMemoryEstimate(*n * kBytesPerRequest,
                             w.origin() + ": " + w.PathOf("num_requests") + " = " +
                                 std::to_string(*n) + " requests",
                             "run fewer requests");
}

// The length distribution at `key`, as `client` samples it (none: as
// given).
Result<std::unique_ptr<LengthDist>> ClientLength(JsonObject& w, const char* key,
                                                 const std::string& dir,
                                                 const BenchmarkClient* client, double ratio) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject spec, w.Child(key, true));
  if (client == nullptr) return ParseLengthDist(spec, dir);
  const nlohmann::json sampled = ClientLengthSpec(*w.Raw(key), *client, ratio);
  JsonObject as_sampled(sampled, w.origin(), w.PathOf(key));
  return ParseLengthDist(as_sampled, dir);
}

// Fills requests with ids and lengths; arrivals are left at 0.
Status GenerateLengths(JsonObject& w, const std::string& dir, int64_t n, Workload* out,
                       const BenchmarkClient* client = nullptr, double ratio = 0) {
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<LengthDist> in_dist,
                           ClientLength(w, "input_tokens", dir, client, ratio));
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<LengthDist> out_dist,
                           ClientLength(w, "output_tokens", dir, client, ratio));
  WorkloadRng in_rng(out->seed, kInputLengthStream);
  WorkloadRng out_rng(out->seed, kOutputLengthStream);
  common::ReserveHugePages(&out->requests, static_cast<size_t>(n));
  out->requests.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    RequestSpec& r = out->requests[static_cast<size_t>(i)];
    r.id = i;
    r.arrival_ns = 0;
    r.input_tokens = in_dist->Sample(in_rng);
    r.output_tokens = out_dist->Sample(out_rng);
  }
  out->source = "input=" + in_dist->Describe() + " output=" + out_dist->Describe();
  return Status::Ok();
}

}  // namespace

// A closed loop without num_requests measures whole waves after a warm-up
// of one (kClosedLoopDefaultWaves, sim/steady_state.h says why).
Status ReadClosedLoopLength(JsonObject& w, int64_t concurrency, int64_t* n, Workload* out) {
  // Null (`--set workload.num_requests=null`) asks for the default too.
  const nlohmann::json* given = w.Raw("num_requests");
  if (given != nullptr && !given->is_null()) return ReadNumRequests(w, n);
  *n = concurrency * (1 + kClosedLoopDefaultWaves);
  const nlohmann::json* warmup = w.Raw("warmup_requests");
  if (warmup == nullptr || warmup->is_null()) out->warmup_requests = concurrency;
  return CheckMemoryEstimate(*n * kBytesPerRequest,
                             w.origin() + ": " + w.PathOf("concurrency") + " = " +
                                 std::to_string(concurrency) + " (num_requests " +
                                 std::to_string(*n) + " by default)",
                             "give a smaller num_requests");
}

Status LoadClosedLoop(JsonObject& w, const std::string& dir, Workload* out) {
  int64_t concurrency = 0, n = 0;
  CAPPLAN_RETURN_IF_ERROR(w.Get("concurrency", &concurrency, true));
  CAPPLAN_RETURN_IF_ERROR(w.CheckRange("concurrency", static_cast<double>(concurrency), 1, 1e9));
  CAPPLAN_RETURN_IF_ERROR(ReadClosedLoopLength(w, concurrency, &n, out));
  out->concurrency = concurrency;
  // A loop that issues requests as others finish is a serving benchmark;
  // one batch of requests (a latency probe) is sent exactly as given.
  std::string name = n > concurrency ? "inferencex" : "lock_step";
  CAPPLAN_RETURN_IF_ERROR(w.Get("client", &name));
  CAPPLAN_RETURN_IF_ERROR(w.CheckOneOf("client", name, BenchmarkClients().Names()));
  const BenchmarkClient client = *BenchmarkClients().Find(name);
  double ratio = client.default_range_ratio;
  if (w.Has("range_ratio")) {
    if (client.convention.empty()) {
      return w.Error("range_ratio", "client '" + name + "' sends the lengths as given; " +
                                        "a range ratio needs a benchmark client");
    }
    CAPPLAN_RETURN_IF_ERROR(w.Get("range_ratio", &ratio));
    CAPPLAN_RETURN_IF_ERROR(w.CheckRange("range_ratio", ratio, 0, client.max_range_ratio));
  }
  CAPPLAN_RETURN_IF_ERROR(GenerateLengths(w, dir, n, out, &client, ratio));
  std::ostringstream os;
  os << " client=" << name;
  if (!client.convention.empty()) os << "(range_ratio=" << ratio << ")";
  out->source += os.str();
  return Status::Ok();
}

namespace {

// request_rate: req/s > 0, or "inf"/null for every request at t = 0 (the
// benchmarks' default --request-rate inf). Absent is an error: a silent
// burst is rarely what was meant.
Status ReadRequestRate(JsonObject& w, int64_t n, double* rate) {
  const nlohmann::json* rate_json = w.Raw("request_rate");
  *rate = std::numeric_limits<double>::infinity();
  if (rate_json == nullptr) {
    return w.Error("request_rate", "required field is missing (req/s, or \"inf\")");
  }
  if (rate_json->is_null()) return Status::Ok();
  if (rate_json->is_string()) {
    if (rate_json->get<std::string>() == "inf") return Status::Ok();
  } else if (rate_json->is_number()) {
    *rate = rate_json->get<double>();
    if (!(*rate > 0) || !std::isfinite(*rate)) {
      return w.Error("request_rate",
                     "must be > 0 req/s (or \"inf\" for all at t=0), got " + rate_json->dump());
    }
    // Keeps arrival times well inside int64 ns (N / rate <= ~3 years).
    if (static_cast<double>(n) / *rate > 1e8) {
      return w.Error("request_rate",
                     "too low: " + std::to_string(n) + " requests would span more than 1e8 s");
    }
    return Status::Ok();
  }
  return w.Error("request_rate", "must be a number of req/s or \"inf\", got " + rate_json->dump());
}

// burstiness: gamma shape, or "inf" for evenly spaced arrivals (the
// infinite-shape limit, which vLLM also accepts).
Status ReadBurstiness(JsonObject& w, double* burstiness) {
  *burstiness = 1.0;
  const nlohmann::json* b = w.Raw("burstiness");
  if (b == nullptr || b->is_null()) return Status::Ok();
  if (b->is_string() && b->get<std::string>() == "inf") {
    *burstiness = std::numeric_limits<double>::infinity();
    return Status::Ok();
  }
  if (!b->is_number()) {
    return w.Error("burstiness", "must be a number or \"inf\", got " + b->dump());
  }
  *burstiness = b->get<double>();
  if (!(*burstiness > 0)) {
    return w.Error("burstiness",
                   "must be > 0 (gamma shape: 1 = Poisson, < 1 burstier, > 1 smoother, "
                   "\"inf\" evenly spaced), got " +
                       b->dump());
  }
  return w.CheckRange("burstiness", *burstiness, 1e-3, 1e3);
}

}  // namespace

Status LoadOpenLoop(JsonObject& w, const std::string& dir, Workload* out) {
  int64_t n = 0;
  CAPPLAN_RETURN_IF_ERROR(ReadNumRequests(w, &n));
  double rate = 0, burstiness = 0;
  CAPPLAN_RETURN_IF_ERROR(ReadRequestRate(w, n, &rate));
  CAPPLAN_RETURN_IF_ERROR(ReadBurstiness(w, &burstiness));
  std::string convention = "sglang";
  CAPPLAN_RETURN_IF_ERROR(w.Get("arrival_convention", &convention));
  CAPPLAN_RETURN_IF_ERROR(w.CheckOneOf("arrival_convention", convention, {"sglang", "vllm"}));
  int64_t cap = 0;
  CAPPLAN_RETURN_IF_ERROR(w.Get("max_concurrency", &cap));
  if (w.Has("max_concurrency")) {
    CAPPLAN_RETURN_IF_ERROR(w.CheckRange("max_concurrency", static_cast<double>(cap), 1, 1e9));
  }
  out->concurrency = cap;
  CAPPLAN_RETURN_IF_ERROR(GenerateLengths(w, dir, n, out));
  WorkloadRng arrival_rng(out->seed, kArrivalStream);
  const std::vector<int64_t> arrivals = OpenLoopArrivalsNs(
      n, rate, burstiness,
      convention == "vllm" ? ArrivalConvention::kVllm : ArrivalConvention::kSglang, arrival_rng);
  for (size_t i = 0; i < arrivals.size(); ++i) out->requests[i].arrival_ns = arrivals[i];
  std::ostringstream os;
  os << " rate=" << rate << "/s burstiness=" << burstiness << " (" << convention << ")";
  out->source += os.str();
  return Status::Ok();
}

}  // namespace capplan::sim
