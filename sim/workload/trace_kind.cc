// trace: replay of a request trace file (formats in trace_reader.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "sim/workload/length_dist.h"
#include "sim/workload/trace_reader.h"
#include "sim/workload/workload_kinds.h"

namespace capplan::sim {

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;
// The longest replay, as for generated workloads (1e8 s, about 3 years):
// far beyond any trace, and far inside int64 nanoseconds, so that the
// simulator's clock cannot overflow.
constexpr long double kMaxReplayNs = 1e8L * kNsPerSecond;

Status SecondsToNs(JsonObject& w, std::string_view key, double s, int64_t* ns) {
  if (!(s >= 0) || s > 1e9)
    return w.Error(key, "must be in [0, 1e9] seconds, got " + std::to_string(s));
  *ns = std::llround(s * kNsPerSecond);
  return Status::Ok();
}

// The replay's settings from the workload block.
struct Replay {
  std::string format, path;
  double time_scale = 1.0;
  int64_t start_ns = 0, duration_ns = INT64_MAX;
  std::optional<int64_t> cap_requests;
  TraceReadOptions read;
};

Status ReadWindow(JsonObject& w, Replay* r) {
  double start_s = 0.0;
  std::optional<double> duration_s;
  CAPPLAN_RETURN_IF_ERROR(w.Get("time_scale", &r->time_scale));
  if (!(r->time_scale > 0) || r->time_scale > 1e6) {
    return w.Error("time_scale",
                   "must be in (0, 1e6] (multiplies gaps: 0.5 replays twice as fast), got " +
                       std::to_string(r->time_scale));
  }
  CAPPLAN_RETURN_IF_ERROR(w.Get("start_s", &start_s));
  CAPPLAN_RETURN_IF_ERROR(w.Get("duration_s", &duration_s));
  CAPPLAN_RETURN_IF_ERROR(w.Get("num_requests", &r->cap_requests));
  if (r->cap_requests && *r->cap_requests < 1) {
    return w.Error("num_requests", "must be >= 1 (a cap on replayed requests), got " +
                                       std::to_string(*r->cap_requests));
  }
  CAPPLAN_RETURN_IF_ERROR(SecondsToNs(w, "start_s", start_s, &r->start_ns));
  if (duration_s) {
    if (!(*duration_s > 0)) return w.Error("duration_s", "must be > 0 seconds");
    CAPPLAN_RETURN_IF_ERROR(SecondsToNs(w, "duration_s", *duration_s, &r->duration_ns));
  }
  return Status::Ok();
}

Status ReadReplay(JsonObject& w, Replay* r, Workload* out) {
  CAPPLAN_RETURN_IF_ERROR(w.Get("format", &r->format, true));
  CAPPLAN_RETURN_IF_ERROR(w.CheckOneOf("format", r->format, TraceFormatRegistry().Names()));
  CAPPLAN_RETURN_IF_ERROR(w.Get("path", &r->path, true));
  CAPPLAN_RETURN_IF_ERROR(ReadWindow(w, r));
  if ((w.Has("model_filter") || w.Has("drop_failed")) && r->format != "burstgpt") {
    return w.Error(w.Has("model_filter") ? "model_filter" : "drop_failed",
                   "only applies to format \"burstgpt\" (this trace is \"" + r->format + "\")");
  }
  CAPPLAN_RETURN_IF_ERROR(w.Get("model_filter", &r->read.model_filter));
  CAPPLAN_RETURN_IF_ERROR(w.Get("drop_failed", &r->read.drop_failed));
  int64_t cap = 0;
  CAPPLAN_RETURN_IF_ERROR(w.Get("max_concurrency", &cap));
  if (w.Has("max_concurrency")) {
    CAPPLAN_RETURN_IF_ERROR(w.CheckRange("max_concurrency", static_cast<double>(cap), 1, 1e9));
  }
  out->concurrency = cap;
  return Status::Ok();
}

// Replay in time order; a stable sort keeps file order for equal times.
// Traces are usually written in time order, and then need no index (empty).
std::vector<size_t> TimeOrder(const TraceData& data) {
  const auto earlier = [](const TraceRow& a, const TraceRow& b) {
    return a.timestamp_ns < b.timestamp_ns;
  };
  std::vector<size_t> order;
  if (!std::is_sorted(data.rows.begin(), data.rows.end(), earlier)) {
    order.resize(data.rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return earlier(data.rows[a], data.rows[b]); });
  }
  return order;
}

// The rows in the window and under the cap, as requests arriving from the
// first one kept, gaps scaled by time_scale.
Status AppendRequests(JsonObject& w, const Replay& rp, const std::string& resolved,
                      TraceData& data, Workload* out) {
  const std::vector<size_t> order = TimeOrder(data);
  const size_t n_rows = data.rows.size();
  auto row_at = [&](size_t k) { return order.empty() ? k : order[k]; };
  const int64_t t0 = data.rows[row_at(0)].timestamp_ns;
  int64_t span_ns = 0;
  if (__builtin_sub_overflow(data.rows[row_at(n_rows - 1)].timestamp_ns, t0, &span_ns)) {
    return w.Error("path", "trace '" + EchoValue(resolved, 256) +
                               "' spans more than 292 years; check its timestamps");
  }
  const bool mooncake = rp.format == "mooncake";
  // Timestamps before 1970 are negative, so "unset" cannot be a sentinel.
  std::optional<int64_t> first_kept;
  out->requests.reserve(
      rp.cap_requests ? std::min<size_t>(n_rows, static_cast<size_t>(*rp.cap_requests)) : n_rows);
  for (size_t k = 0; k < n_rows; ++k) {
    const size_t idx = row_at(k);
    const TraceRow& r = data.rows[idx];
    const int64_t since_start = r.timestamp_ns - t0 - rp.start_ns;
    const bool in_window = since_start >= 0 && since_start < rp.duration_ns;
    const bool under_cap =
        !rp.cap_requests || static_cast<int64_t>(out->requests.size()) < *rp.cap_requests;
    if (!in_window || !under_cap) {
      ++out->trace_rows_dropped;
      continue;
    }
    if (!first_kept) first_kept = r.timestamp_ns;
    const int64_t delta = r.timestamp_ns - *first_kept;
    // Scaling by exactly 1 stays exact; otherwise long double keeps 64 bits
    // of mantissa on x86, so 121 days of ns scale to within 1 ns.
    const long double scaled = static_cast<long double>(delta) * rp.time_scale;
    if (scaled > kMaxReplayNs) {
      return w.Error(rp.time_scale == 1.0 ? "path" : "time_scale",
                     "the replay would span more than 1e8 s (trace gap " +
                         std::to_string(delta / kNsPerSecond) + " s x time_scale " +
                         std::to_string(rp.time_scale) + "); replay a window with duration_s");
    }
    const int64_t arrival =
        rp.time_scale == 1.0 ? delta : static_cast<int64_t>(std::llroundl(scaled));
    out->requests.push_back(RequestSpec{static_cast<int64_t>(out->requests.size()), arrival,
                                        r.input_tokens, r.output_tokens});
    if (mooncake) out->prefix_block_ids.push_back(std::move(data.hash_ids[idx]));
  }
  return Status::Ok();
}

}  // namespace

Status LoadTrace(JsonObject& w, const std::string& dir, Workload* out) {
  Replay rp;
  CAPPLAN_RETURN_IF_ERROR(ReadReplay(w, &rp, out));
  const std::string resolved = ResolvePath(rp.path, dir);
  auto data_or = ReadTraceFile(rp.format, resolved, rp.read);
  if (!data_or.ok()) return data_or.status().WithPrefix(w.origin() + ": " + w.PathOf("path"));
  TraceData& data = *data_or;
  if (data.rows.empty()) {
    return w.Error("path", "trace '" + EchoValue(resolved, 256) + "' has no requests" +
                               (data.rows_dropped > 0 ? " left after filtering" : ""));
  }
  out->trace_rows_dropped = data.rows_dropped;
  CAPPLAN_RETURN_IF_ERROR(AppendRequests(w, rp, resolved, data, out));
  if (out->requests.empty()) {
    return w.Error("start_s",
                   "no trace requests fall in the window [start_s, start_s + "
                   "duration_s) after the first request");
  }
  if (rp.format == "mooncake") out->prefix_block_tokens = kMooncakeBlockTokens;
  out->source = rp.format + " trace " + rp.path;
  if (rp.time_scale != 1.0) out->source += " time_scale=" + std::to_string(rp.time_scale);
  return Status::Ok();
}

}  // namespace capplan::sim
