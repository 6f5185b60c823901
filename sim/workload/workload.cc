#include "sim/workload/workload.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/workload/random.h"
#include "sim/workload/workload_kinds.h"

namespace capplan::sim {

const Registry<WorkloadKindFactory>& WorkloadKindRegistry() {
  static const Registry<WorkloadKindFactory>* registry = [] {
    auto* r = new Registry<WorkloadKindFactory>("workload kind");
    r->Add("closed_loop", LoadClosedLoop, "concurrency requests kept in flight");
    r->Add("open_loop", LoadOpenLoop, "Poisson/gamma arrivals at request_rate");
    r->Add("trace", LoadTrace, "replay an Azure/Mooncake/BurstGPT trace");
    r->Add("sessions", LoadSessions, "multi-turn conversations sharing a system prompt");
    return r;
  }();
  return *registry;
}

Result<Workload> LoadWorkload(JsonObject& w, const std::string& scenario_dir) {
  CAPPLAN_RETURN_IF_ERROR(w.CheckObject());
  Workload out;
  CAPPLAN_RETURN_IF_ERROR(w.Get("kind", &out.kind, true));
  auto factory = WorkloadKindRegistry().Find(out.kind);
  if (!factory.ok()) return factory.status().WithPrefix(w.origin() + ": " + w.PathOf("kind"));
  int64_t seed = 0;
  CAPPLAN_RETURN_IF_ERROR(w.Get("seed", &seed));
  if (seed < 0) return w.Error("seed", "must be >= 0, got " + std::to_string(seed));
  out.seed = static_cast<uint64_t>(seed);
  CAPPLAN_RETURN_IF_ERROR(w.Get("warmup_requests", &out.warmup_requests));
  if (out.warmup_requests < 0) {
    return w.Error("warmup_requests", "must be >= 0, got " + std::to_string(out.warmup_requests));
  }
  CAPPLAN_RETURN_IF_ERROR((*factory)(w, scenario_dir, &out));
  CAPPLAN_RETURN_IF_ERROR(w.Finish());
  const int64_t n = static_cast<int64_t>(out.requests.size());
  if (out.warmup_requests >= n) {
    return w.Error("warmup_requests",
                   "must be less than the number of requests (" + std::to_string(n) + "), got " +
                       std::to_string(out.warmup_requests) + ": no request would be measured");
  }
  return out;
}

namespace {

struct LengthStats {
  double mean = 0;
  int64_t min = 0, max = 0;
};

template <typename Get>
LengthStats Stats(const std::vector<RequestSpec>& rs, Get get) {
  LengthStats s;
  if (rs.empty()) return s;
  s.min = s.max = get(rs.front());
  double sum = 0;
  for (const auto& r : rs) {
    const int64_t v = get(r);
    sum += static_cast<double>(v);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean = sum / static_cast<double>(rs.size());
  return s;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void ContentBlocks(const Workload& w, int64_t i, int64_t n_blocks, std::vector<int64_t>* out) {
  out->clear();
  const size_t idx = static_cast<size_t>(i);
  if (idx < w.prefix_block_ids.size()) {
    const std::vector<int64_t>& ids = w.prefix_block_ids[idx];
    out->assign(ids.begin(), ids.begin() + std::min<int64_t>(n_blocks, std::ssize(ids)));
    return;
  }
  if (idx >= w.session.size() || w.prefix_block_tokens <= 0) return;
  // Blocks wholly inside the shared system prompt are the same in every
  // session (ids 0, 1, ...); the rest belong to the session's own stream
  // (a well-mixed 62-bit id with the top bit set, so never a shared id).
  const int64_t shared_blocks = w.shared_prefix_tokens / w.prefix_block_tokens;
  const uint64_t session = static_cast<uint64_t>(w.session[idx]);
  out->reserve(static_cast<size_t>(n_blocks));
  for (int64_t j = 0; j < n_blocks; ++j) {
    out->push_back(j < shared_blocks
                       ? j
                       : static_cast<int64_t>((uint64_t{1} << 62) |
                                              (MixSeed(session, static_cast<uint64_t>(j)) >> 2)));
  }
}

std::string DescribeWorkload(const Workload& w) {
  std::ostringstream os;
  const auto in = Stats(w.requests, [](const RequestSpec& r) { return r.input_tokens; });
  const auto out = Stats(w.requests, [](const RequestSpec& r) { return r.output_tokens; });
  int64_t span_ns = 0;
  for (const auto& r : w.requests) span_ns = std::max(span_ns, r.arrival_ns);
  os << w.kind << ": " << w.requests.size() << " requests (" << w.warmup_requests << " warmup)";
  if (w.kind == "closed_loop") {
    os << ", concurrency " << w.concurrency;
  } else if (w.concurrency > 0) {
    os << ", max concurrency " << w.concurrency;
  }
  os << ", input mean " << Fmt("%.0f", in.mean) << " [" << in.min << ".." << in.max
     << "] tokens, output mean " << Fmt("%.0f", out.mean) << " [" << out.min << ".." << out.max
     << "] tokens, arrivals span " << Fmt("%.3f", static_cast<double>(span_ns) * 1e-9)
     << " s, seed " << w.seed;
  if (!w.source.empty()) os << "; " << w.source;
  return os.str();
}

}  // namespace capplan::sim
