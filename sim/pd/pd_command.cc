#include "sim/pd/pd_command.h"

#include <cstdio>
#include <sstream>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/pd/pd_run.h"

namespace capplan {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string Csv(const std::vector<PdRequest>& reqs) {
  std::ostringstream os;
  os << "id,arrival_ms,prefill_done_ms,transfer_ms,decode_arrival_ms,first_token_ms,finish_ms,"
        "input_tokens,output_tokens,ttft_ms,e2el_ms,warmup,status,reserve_ms,prefill_admit_ms,"
        "decode_admit_ms\n";
  os.precision(9);
  for (const auto& q : reqs) {
    os << q.id << ',' << Ms(q.arrival_ns) << ',' << Ms(q.prefill_done_ns) << ','
       << Ms(q.transfer_ns) << ',' << Ms(q.decode_arrival_ns) << ',' << Ms(q.first_token_ns)
       << ',' << Ms(q.finish_ns) << ',' << q.input << ',' << q.generated << ','
       << (q.done ? Ms(q.first_token_ns - q.arrival_ns) : 0) << ','
       << (q.done ? Ms(q.finish_ns - q.arrival_ns) : 0) << ',' << (q.warmup ? 1 : 0) << ','
       << (q.done ? "completed" : "failed") << ',' << Ms(q.reserve_ns) << ','
       << Ms(q.prefill_admit_ns) << ',' << Ms(q.decode_admit_ns) << '\n';
  }
  return os.str();
}

// One track per stage (prefill pool, transfer, decode pool), one span per
// request per stage: shows where requests wait.
nlohmann::json Trace(const std::vector<PdRequest>& reqs) {
  nlohmann::json ev = nlohmann::json::array();
  const char* names[4] = {"decode reservation wait", "prefill pool (queue + prefill)",
                          "kv transfer (prefill pool holds the KV)", "decode pool (queue + decode)"};
  for (int i = 0; i < 4; ++i) {
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", i}, {"args", {{"name", names[i]}}}});
  }
  for (const auto& q : reqs) {
    if (q.decode_arrival_ns < 0) continue;
    const int64_t t[5] = {q.arrival_ns, q.reserve_ns, q.prefill_done_ns, q.decode_arrival_ns,
                          q.finish_ns >= 0 ? q.finish_ns : q.decode_arrival_ns};
    for (int i = 0; i < 4; ++i) {
      ev.push_back({{"name", "req " + std::to_string(q.id)}, {"ph", "X"}, {"pid", i},
                    {"tid", q.id}, {"ts", t[i] / 1e3}, {"dur", (t[i + 1] - t[i]) / 1e3}});
    }
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace

bool IsPdScenarioFile(const std::string& path) {
  auto doc = ReadJsonFile(path);
  return doc.ok() && IsPdScenario(*doc);
}

Status RunPdSimulateCommand(const std::string& path, const std::vector<std::string>& sets,
                            const PdCommandOptions& options, CommandContext& ctx) {
  CAPPLAN_ASSIGN_OR_RETURN(auto pd, LoadPdScenarioFile(path, sets));
  CAPPLAN_ASSIGN_OR_RETURN(PdRunResult r, RunPd(*pd));
  CAPPLAN_RETURN_IF_ERROR(RequireCompletions(*pd, r));
  if (!options.out_dir.empty()) {
    // Complete or absent, as for a co-located run.
    CAPPLAN_RETURN_IF_ERROR(WriteDirAtomic(options.out_dir,
                                           {{"summary.json", DumpJson(r.summary) + "\n"},
                                            {"requests.csv", Csv(r.requests)}}));
  }
  if (!options.trace_out.empty()) {
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(options.trace_out, Trace(r.requests).dump()));
  }
  const nlohmann::json& s = r.summary;
  if (options.json) {
    *ctx.out << DumpJson(s) << "\n";
    return Status::Ok();
  }
  char buf[1024];
  const auto& p = s["pools"];
  std::snprintf(buf, sizeof(buf),
                "%s (PD, %d GPUs): %lld completed, %lld failed in %.2f s | output %.1f tok/s "
                "(%.1f /GPU) | TTFT median %.1f ms p99 %.1f ms (transfer mean %.2f ms) | TPOT "
                "median %.2f ms | prefill pool util %.0f%% KV peak %.0f%% | decode pool util "
                "%.0f%% KV peak %.0f%% | $%.3f per M output tokens\n",
                s["scenario"].get<std::string>().c_str(), s["gpus"].get<int>(),
                static_cast<long long>(s["completed"].get<int64_t>()),
                static_cast<long long>(s["failed"].get<int64_t>()), s["duration_s"].get<double>(),
                s["output_throughput"].get<double>(), s["output_throughput_per_gpu"].get<double>(),
                s["median_ttft_ms"].get<double>(), s["p99_ttft_ms"].get<double>(),
                s["transfer"]["mean_exposed_transfer_ms"].get<double>(),
                s["median_tpot_ms"].get<double>(),
                100 * p["prefill"]["utilization"].get<double>(),
                100 * p["prefill"]["peak_kv_fraction"].get<double>(),
                100 * p["decode"]["utilization"].get<double>(),
                100 * p["decode"]["peak_kv_fraction"].get<double>(),
                s["cost_usd_per_million_output_tokens"].get<double>());
  *ctx.out << buf;
  return Status::Ok();
}

}  // namespace capplan
