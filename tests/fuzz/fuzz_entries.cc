#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "calibrate/measurements.h"
#include "calibrate/public_validation_peer.h"
#include "calibrate/refit.h"
#include "calibrate/runs/case_builder.h"
#include "calibrate/runs/metrics_scrape.h"
#include "calibrate/runs/run_file.h"
#include "calibrate/runs/server_log.h"
#include "calibrate/validate.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "common/utf8.h"
#include "common/memory_budget.h"
#include "common/status.h"
#include "hw/profile.h"
#include "models/card.h"
#include "report/summary.h"
#include "sim/calibration_overlay.h"
#include "sim/prediction_intervals.h"
#include "sim/sweep/grid.h"
#include "sim/sweep/search_space.h"
#include "sim/sweep/sim_hooks.h"
#include "sim/sweep/slo.h"
#include "sim/workload/length_dist.h"
#include "sim/workload/trace_reader.h"

namespace capplan::fuzz {

namespace {

// The verdict every entry gives: an accepted input, or an error that is one
// bounded line. Anything else aborts, which libFuzzer and the replay test
// both report with the input.
void Check(const Status& st) {
  if (st.ok()) return;
  const std::string& m = st.message();
  // Valid UTF-8 too: errors are also written into JSON (a sweep point's
  // "error"), and nlohmann::json refuses to dump anything else.
  if (m.find('\n') != std::string::npos || m.find('\r') != std::string::npos ||
      m.size() > kMaxErrorBytes || !IsUtf8(m)) {
    std::fprintf(stderr, "error is not one bounded line (%zu bytes): %s\n", m.size(),
                 OneLine(m, 600).c_str());
    std::abort();
  }
}

template <typename T>
void Check(const Result<T>& r) {
  if (!r.ok()) Check(r.status());
}

// Scenarios resolve relative trace and lengths paths against their own
// folder; an origin in scenarios/ lets fuzzed inputs reach the shipped ones.
std::string ScenarioOrigin() { return DataPath("scenarios/fuzz_input.json"); }

// Readers that take a path get the input through a per-process file (one per
// extension), rewritten for every input and removed when the process exits.
std::string WriteTemp(std::string_view input, const char* ext) {
  struct Files {
    std::set<std::string> paths;
    ~Files() {
      for (const std::string& p : paths) std::remove(p.c_str());
    }
  };
  static Files files;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("capplan_fuzz_" + std::to_string(::getpid()) + ext))
                               .string();
  files.paths.insert(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(input.data(), static_cast<std::streamsize>(input.size()));
  return path;
}

// Generated workloads are checked against a small fixed budget, so that a
// fuzzed num_requests is refused up front instead of allocating gigabytes.
// 24 MiB at 96 bytes a request: about 262k requests at most, few enough to
// simulate in a fuzz iteration's time.
const bool kBudgetSet = [] {
  SetMemoryBudgetBytes(int64_t{24} << 20);
  return true;
}();

// Scenario JSON, then up to 8 "\n--set path=value" overrides; validated by
// the sweep's validator (ParseScenario, or ParsePdScenario for `pd`).
void ScenarioEntry(std::string_view input) {
  const std::vector<std::string> parts = SplitOn(input, "\n--set ", 9);
  auto doc = ParseJson(parts[0], "fuzz.json");
  Check(doc);
  if (!doc.ok()) return;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& s = parts[i];
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const Status st = SetDotted(&*doc, s.substr(0, eq), s.substr(eq + 1), "--set");
    Check(st);
    if (!st.ok()) return;
  }
  Check(sim::sweep::RealSimHooks(ScenarioOrigin()).validate(*doc));
}

void CardEntry(std::string_view input) {
  Check(models::ParseModelCard(std::string(input), "fuzz_card.json"));
}

void ProfileEntry(std::string_view input) {
  auto doc = ParseJson(input, "fuzz_profile.json");
  Check(doc);
  if (doc.ok()) Check(hw::ParseHardwareProfile(*doc, "fuzz_profile.json"));
}

void MeasurementsEntry(std::string_view input) {
  calibrate::MeasurementSet set;
  Check(calibrate::ReadMeasurementFile(WriteTemp(input, ".json"), &set));
}

void PeerPredictionsEntry(std::string_view input) {
  auto p = calibrate::ParsePeerPredictions(std::string(input), "fuzz_peer.json");
  Check(p);
  if (!p.ok()) return;
  // One validation row for the predictions to meet (a peer file names rows).
  calibrate::PublicValidation v;
  calibrate::PublicValidationRow row;
  row.case_name = "c";
  row.case_class = "serving";
  row.label = "r";
  row.metric = "output_throughput";
  row.measured = 100;
  row.predicted = 110;
  row.error_pct = 10;
  v.rows.push_back(row);
  auto pv = calibrate::ComparePeer(v, *p);
  Check(pv);
  if (pv.ok()) {
    (void)calibrate::FormatPeerValidation(*pv);
    (void)calibrate::PeerValidationToJson(*pv).dump();
  }
}

void VersionDriftEntry(std::string_view input) {
  auto d = calibrate::ParseVersionDrift(std::string(input), "fuzz_drift.json");
  Check(d);
  if (d.ok()) (void)calibrate::TableVersionDrift(*d, {{"H200", "vllm-torch-bf16-gemm"}});
}

// The prediction bands' model (validation/intervals.json), then the bands it
// gives a run priced half measured, half cross-version, in every regime,
// and one step.
void IntervalsEntry(std::string_view input) {
  auto m = sim::ParseBandModel(std::string(input), "fuzz_intervals.json");
  Check(m);
  if (!m.ok()) return;
  sim::BandInputs in;
  in.share[static_cast<int>(sim::OpProvenance::kMeasured)] = 0.5;
  in.share[static_cast<int>(sim::OpProvenance::kCrossVersion)] = 0.5;
  in.spread[static_cast<int>(sim::OpProvenance::kCrossVersion)] = 0.2;
  in.regime.fill(true);
  in.window_occupancy = 0.5;
  for (int g = 0; g < sim::kNumBandGroups; ++g) {
    (void)sim::BandHalfWidth(*m, static_cast<sim::BandGroup>(g), in);
  }
  (void)sim::StepBandSigma(*m, in);
}

void CalibrationOverlayEntry(std::string_view input) {
  auto o = sim::ParseCalibrationOverlayText(input, "fuzz_overlay.json");
  Check(o);
  if (o.ok()) (void)sim::CalibrationOverlayToJson(*o);
}

void EngineRunEntry(std::string_view input) {
  static const hw::HardwareProfile* profile = [] {
    auto p = hw::LoadHardwareProfile("h200-sxm");
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", p.status().message().c_str());
      std::abort();
    }
    return new hw::HardwareProfile(std::move(*p));
  }();
  auto doc = ParseJson(input, "fuzz_run.json");
  Check(doc);
  if (doc.ok()) Check(calibrate::ReplayEngineRun(*doc, "fuzz_run.json", *profile));
}

void SearchSpaceEntry(std::string_view input) {
  auto doc = ParseJson(input, "fuzz_space.json");
  Check(doc);
  if (doc.ok()) Check(sim::sweep::ParseSearchSpace(*doc, "fuzz_space.json"));
}

// One SLO per line, as repeated --slo flags.
void SloEntry(std::string_view input) {
  for (const std::string& line : SplitOn(input, "\n", 16)) Check(sim::sweep::ParseSlo(line));
}

// A base scenario, then "\n--grid " flags; the plan is expanded and every
// point validated when the cross product is small.
void GridEntry(std::string_view input) {
  const std::vector<std::string> parts = SplitOn(input, "\n--grid ", 5);
  auto base = ParseJson(parts[0], "fuzz.json");
  Check(base);
  if (!base.ok()) return;
  std::vector<sim::sweep::GridAxis> axes;
  size_t points = 1;
  for (size_t i = 1; i < parts.size(); ++i) {
    auto axis = sim::sweep::ParseGridFlag(parts[i]);
    Check(axis);
    if (!axis.ok()) return;
    points *= axis->values.size();
    axes.push_back(std::move(*axis));
  }
  if (points > 16) return;
  Check(sim::sweep::BuildSweepPlan(*base, ScenarioOrigin(), axes,
                                   sim::sweep::RealSimHooks(ScenarioOrigin()).validate));
}

template <const char* kFormat>
void TraceEntry(std::string_view input) {
  sim::TraceReadOptions options;
  // The first byte picks the BurstGPT filters, so both paths are reached.
  if (!input.empty()) {
    options.drop_failed = (input[0] & 1) == 0;
    if (input[0] & 2) options.model_filter = "ChatGPT";
  }
  Check(sim::ParseTraceText(kFormat, input, "fuzz_trace", options));
}
constexpr char kAzure2023[] = "azure_2023";
constexpr char kAzure2024[] = "azure_2024";
constexpr char kMooncake[] = "mooncake";
constexpr char kBurstGpt[] = "burstgpt";

void LengthsEntry(std::string_view input) {
  std::vector<int64_t> values;
  std::vector<double> weights;
  Check(sim::ReadLengthsFile(WriteTemp(input, ".txt"), &values, &weights));
}

// What `capplan report FILE` does with a file: detect the kind of result
// (summary, PD summary, search winner) and parse it.
void SummaryEntry(std::string_view input) {
  Check(report::LoadResults({WriteTemp(input, ".json")}));
}

// A benchmark result as `capplan import-run --format F` reads it, then the
// validation case it would write (calibrate/runs/).
template <const char* kFormat>
void RunResultEntry(std::string_view input) {
  auto runs = calibrate::runs::ReadRunText(input, "fuzz_result", kFormat);
  Check(runs);
  if (!runs.ok()) return;
  calibrate::runs::CaseInputs in;
  in.name = "fuzz";
  in.run_file = "fuzz_result";
  in.scenario = {{"model", "llama-3.1-8b"},
                 {"hardware", "h100-sxm"},
                 {"deployment", {{"engine", "vllm"}, {"gpus", 1}, {"tp", 1}}}};
  in.runs = std::move(*runs);
  auto c = calibrate::runs::BuildCase(in);
  Check(c);
  if (c.ok()) (void)DumpJson(*c);
}
constexpr char kVllm[] = "vllm";
constexpr char kSglang[] = "sglang";
constexpr char kGuidellm[] = "guidellm";
constexpr char kInferencex[] = "inferencex";

// `import-run --log`: an engine's server log.
void ServerLogEntry(std::string_view input) {
  auto log = calibrate::runs::ParseServerLog(input, "fuzz_log");
  Check(log);
  if (log.ok()) (void)DumpJson(calibrate::runs::ServerLogToJson(*log));
}

// `import-run --metrics`: a Prometheus /metrics scrape.
void MetricsScrapeEntry(std::string_view input) {
  auto s = calibrate::runs::ParseMetricsScrape(input, "fuzz_metrics");
  Check(s);
  if (s.ok()) (void)DumpJson(calibrate::runs::MetricsScrapeToJson(*s));
}

}  // namespace

std::vector<std::string> SplitOn(std::string_view input, std::string_view marker,
                                 size_t max_parts) {
  std::vector<std::string> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = input.find(marker);
    if (at == std::string_view::npos) break;
    parts.emplace_back(input.substr(0, at));
    input.remove_prefix(at + marker.size());
  }
  parts.emplace_back(input);
  return parts;
}

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      {"scenario", ScenarioEntry},
      {"card", CardEntry},
      {"profile", ProfileEntry},
      {"measurements", MeasurementsEntry},
      {"engine_run", EngineRunEntry},
      {"search_space", SearchSpaceEntry},
      {"slo", SloEntry},
      {"grid", GridEntry},
      {"trace_azure_2023", TraceEntry<kAzure2023>},
      {"trace_azure_2024", TraceEntry<kAzure2024>},
      {"trace_mooncake", TraceEntry<kMooncake>},
      {"trace_burstgpt", TraceEntry<kBurstGpt>},
      {"lengths", LengthsEntry},
      {"summary", SummaryEntry},
      {"import_vllm", RunResultEntry<kVllm>},
      {"import_sglang", RunResultEntry<kSglang>},
      {"import_guidellm", RunResultEntry<kGuidellm>},
      {"import_inferencex", RunResultEntry<kInferencex>},
      {"server_log", ServerLogEntry},
      {"metrics_scrape", MetricsScrapeEntry},
      {"version_drift", VersionDriftEntry},
      {"calibration_overlay", CalibrationOverlayEntry},
      {"peer_predictions", PeerPredictionsEntry},
      {"intervals", IntervalsEntry},
  };
  return targets;
}

const Target* FindTarget(std::string_view name) {
  for (const Target& t : Targets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace capplan::fuzz
