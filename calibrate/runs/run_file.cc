#include "calibrate/runs/run_file.h"

#include "calibrate/runs/guidellm_report.h"
#include "calibrate/runs/inferencex_result.h"
#include "calibrate/runs/sglang_bench_result.h"
#include "calibrate/runs/tool_json.h"
#include "calibrate/runs/vllm_bench_result.h"
#include "common/atomic_file.h"
#include "common/did_you_mean.h"

namespace capplan::calibrate::runs {

namespace {

// The first non-blank line: SGLang's files are JSON Lines.
std::string_view FirstLine(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) return line;
    start = end + 1;
  }
  return {};
}

// `vllm bench serve --append-result` appends each run's object after a
// newline (vllm/benchmarks/serve.py): one run per non-blank line, labelled
// "run N" after the label the file gives.
Result<std::vector<ImportedRun>> ReadVllmLines(std::string_view text, const std::string& origin) {
  std::vector<ImportedRun> runs;
  CAPPLAN_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, int64_t line_no) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Status::Ok();
    const std::string where = origin + ":" + std::to_string(line_no);
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseToolJson(line, where));
    CAPPLAN_ASSIGN_OR_RETURN(ImportedRun r, ReadVllmBenchResult(doc, where));
    r.label = "run " + std::to_string(runs.size() + 1) + " " + r.label;
    runs.push_back(std::move(r));
    return Status::Ok();
  }));
  return runs;
}

Result<std::string> Detect(std::string_view text, const std::string& origin) {
  if (FirstLine(text).empty()) {
    return Status::Usage(origin +
                         ": empty file; expected a benchmark result (vllm bench serve, "
                         "sglang bench_serving, GuideLLM or InferenceX)");
  }
  // A file of several lines that is not one JSON document is JSON Lines.
  auto doc = ParseToolJson(text, origin);
  if (!doc.ok()) {
    auto line = ParseToolJson(FirstLine(text), origin + ":1");
    if (!line.ok()) return doc.status();
    doc = std::move(line);
  }
  const nlohmann::json& j = *doc;
  if (!j.is_object()) {
    return Status::Usage(origin + ": expected a JSON object (a benchmark result), got " +
                         std::string(j.type_name()));
  }
  if (j.contains("benchmarks")) return std::string("guidellm");
  if (j.contains("tput_per_gpu")) return std::string("inferencex");
  if (j.contains("mean_e2e_latency_ms")) return std::string("sglang");
  if (j.contains("total_token_throughput")) return std::string("vllm");
  return Status::Usage(
      origin +
      ": not a benchmark result capplan knows: expected the key 'total_token_throughput' "
      "(vllm bench serve --save-result), 'mean_e2e_latency_ms' (sglang bench_serving "
      "--output-file), 'benchmarks' (GuideLLM benchmarks.json) or 'tput_per_gpu' (InferenceX "
      "agg_*.json); give --format to read it as one of them");
}

}  // namespace

const std::vector<std::string>& RunFormats() {
  static const std::vector<std::string> kFormats = {"vllm", "sglang", "guidellm", "inferencex"};
  return kFormats;
}

Result<std::vector<ImportedRun>> ReadRunText(std::string_view text, const std::string& origin,
                                             const std::string& format) {
  std::string f = format;
  if (f.empty() || f == "auto") {
    CAPPLAN_ASSIGN_OR_RETURN(f, Detect(text, origin));
  }
  if (f == "sglang") return ReadSglangBenchLines(text, origin);
  bool known = false;
  for (const std::string& k : RunFormats()) known = known || k == f;
  if (!known) {
    return Status::Usage("--format: unknown format '" + EchoValue(f) + "'" +
                         DidYouMean(f, RunFormats()) +
                         " (one of vllm, sglang, guidellm, "
                         "inferencex or auto)");
  }
  if (FirstLine(text).empty()) {
    return Status::Usage(origin + ": empty file; expected a " + f + " benchmark result");
  }
  auto parsed = ParseToolJson(text, origin);
  if (!parsed.ok() && f == "vllm" && FirstLine(text).size() < text.size()) {
    return ReadVllmLines(text, origin);
  }
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, std::move(parsed));
  if (f == "guidellm") return ReadGuidellmReport(doc, origin);
  std::vector<ImportedRun> runs;
  if (f == "vllm") {
    CAPPLAN_ASSIGN_OR_RETURN(ImportedRun r, ReadVllmBenchResult(doc, origin));
    runs.push_back(std::move(r));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(ImportedRun r, ReadInferencexResult(doc, origin));
    runs.push_back(std::move(r));
  }
  return runs;
}

Result<std::vector<ImportedRun>> ReadRunFile(const std::string& path, const std::string& format) {
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ReadRunText(text, path, format);
}

}  // namespace capplan::calibrate::runs
