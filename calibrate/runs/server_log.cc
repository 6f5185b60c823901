#include "calibrate/runs/server_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "calibrate/runs/tool_json.h"

namespace capplan::calibrate::runs {

namespace {

// The number right after `label` in `line` (spaces skipped; thousands
// separators allowed), or nullopt when the label is absent or no number
// follows ("n/a").
std::optional<double> NumberAfter(std::string_view line, std::string_view label) {
  const size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + label.size();
  while (i < line.size() && line[i] == ' ') ++i;
  std::string digits;
  while (i < line.size() && digits.size() < 40 &&
         (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == '.' || line[i] == ',' ||
          line[i] == '-' || line[i] == 'e' || line[i] == 'E' || line[i] == '+')) {
    if (line[i] != ',') digits += line[i];
    ++i;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end == digits.data() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A count: a number that is a whole value in [0, 1e15].
std::optional<int64_t> CountAfter(std::string_view line, std::string_view label) {
  const auto v = NumberAfter(line, label);
  if (!v || *v < 0 || *v > 1e15 || *v != std::floor(*v)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

void AddStep(StepLineStats* s, int64_t running, int64_t waiting, std::optional<int64_t> tokens,
             std::optional<double> throughput, std::optional<double> usage) {
  ++s->lines;
  s->running_sum += static_cast<double>(running);
  s->waiting_sum += static_cast<double>(waiting);
  s->running_max = std::max(s->running_max, running);
  s->waiting_max = std::max(s->waiting_max, waiting);
  if (tokens) {
    ++s->tokens_lines;
    s->tokens_sum += static_cast<double>(*tokens);
    s->tokens_max = std::max(s->tokens_max, *tokens);
  }
  if (throughput && *throughput >= 0) {
    ++s->throughput_lines;
    s->throughput_sum += *throughput;
  }
  if (usage && *usage >= 0) s->kv_usage_max = std::max(s->kv_usage_max, *usage);
}

// Which engine a line is from ("" for neither), with the facts it carries.
std::string ReadVllmLine(std::string_view line, ServerLog* log) {
  constexpr std::string_view kVersion = "vLLM API server version ";
  if (const size_t at = line.find(kVersion); at != std::string_view::npos) {
    std::string_view v = line.substr(at + kVersion.size());
    v = v.substr(0, std::min(v.find_first_of(" \t\r"), size_t{40}));
    log->engine_version = EchoValue(v, 40);
    return "vllm";
  }
  if (auto t = CountAfter(line, "GPU KV cache size:")) {
    log->kv_tokens = *t;
    log->kv_line = EchoValue(line.substr(line.find("GPU KV cache size:")), 60);
    return "vllm";
  }
  if (auto g = NumberAfter(line, "Available KV cache memory:")) {
    log->available_kv_gib = *g;
    return "vllm";
  }
  for (std::string_view label : {"# GPU blocks:", "# cuda blocks:"}) {
    if (auto b = CountAfter(line, label)) {
      log->gpu_blocks = *b;
      return "vllm";
    }
  }
  if (line.find("Avg prompt throughput:") != std::string_view::npos) {
    const auto running = CountAfter(line, "Running:");
    const auto waiting = CountAfter(line, "Waiting:");
    if (!running || !waiting) return "";
    const auto prompt = NumberAfter(line, "Avg prompt throughput:");
    const auto gen = NumberAfter(line, "Avg generation throughput:");
    auto usage = NumberAfter(line, "GPU KV cache usage:");
    if (usage) *usage /= 100;
    std::optional<double> tput;
    if (prompt && gen) tput = *prompt + *gen;
    AddStep(&log->periodic, *running, *waiting, std::nullopt, tput, usage);
    return "vllm";
  }
  return "";
}

std::string ReadSglangLine(std::string_view line, ServerLog* log) {
  if (auto f = NumberAfter(line, "mem_fraction_static=")) {
    if (*f > 0 && *f <= 1) log->mem_fraction_static = *f;
  }
  if (auto t = CountAfter(line, "max_total_num_tokens=")) {
    log->kv_tokens = *t;
    log->kv_line = EchoValue(line.substr(line.find("max_total_num_tokens=")), 60);
    return "sglang";
  }
  if (auto t = CountAfter(line, "KV Cache is allocated. #tokens:")) {
    if (!log->kv_tokens) {
      log->kv_tokens = *t;
      log->kv_line = EchoValue(line.substr(line.find("KV Cache is allocated.")), 60);
    }
    return "sglang";
  }
  const bool prefill = line.find("Prefill batch.") != std::string_view::npos;
  const bool decode = line.find("Decode batch.") != std::string_view::npos;
  if (!prefill && !decode) return "";
  const auto running = CountAfter(line, "#running-req:");
  const auto waiting = CountAfter(line, "#queue-req:");
  if (!running || !waiting) return "";
  auto tokens = CountAfter(line, "#token:");
  if (!tokens) tokens = CountAfter(line, "#full token:");
  auto usage = NumberAfter(line, "token usage:");
  const auto tput = NumberAfter(line, "gen throughput (token/s):");
  if (prefill) {
    AddStep(&log->prefill, *running, *waiting, CountAfter(line, "#new-token:"), std::nullopt,
            usage);
    return "sglang";
  }
  AddStep(&log->decode, *running, *waiting, tokens, tput, usage);
  DecodeGroup& g = log->decode_by_running[*running];
  ++g.lines;
  if (tokens) g.tokens_sum += static_cast<double>(*tokens);
  if (tput && *tput >= 0) {
    g.throughput_sum += *tput;
    ++g.throughput_lines;
  }
  return "sglang";
}

nlohmann::json StatsJson(const StepLineStats& s, const char* throughput_key) {
  nlohmann::json j;
  const double n = static_cast<double>(s.lines);
  j["lines"] = s.lines;
  j["mean_running_requests"] = s.running_sum / n;
  j["max_running_requests"] = s.running_max;
  j["mean_waiting_requests"] = s.waiting_sum / n;
  j["max_waiting_requests"] = s.waiting_max;
  j["max_kv_usage_fraction"] = s.kv_usage_max;
  if (s.tokens_lines > 0) {
    j["mean_tokens"] = s.tokens_sum / static_cast<double>(s.tokens_lines);
    j["max_tokens"] = s.tokens_max;
  }
  if (s.throughput_lines > 0) {
    j[throughput_key] = s.throughput_sum / static_cast<double>(s.throughput_lines);
  }
  return j;
}

}  // namespace

Result<ServerLog> ParseServerLog(std::string_view text, const std::string& origin) {
  ServerLog log;
  CAPPLAN_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, int64_t line_no) {
    std::string engine = ReadVllmLine(line, &log);
    if (engine.empty()) engine = ReadSglangLine(line, &log);
    if (engine.empty()) return Status::Ok();
    if (!log.engine.empty() && log.engine != engine) {
      return Status::Usage(origin + ":" + std::to_string(line_no) + ": a " + engine +
                           " line in a " + log.engine +
                           " log; give one engine's log of the benchmarked run");
    }
    log.engine = engine;
    ++log.lines_read;
    return Status::Ok();
  }));
  if (log.engine.empty()) {
    return Status::Usage(
        origin +
        ": no engine line found; expected vLLM's 'GPU KV cache size: N tokens' or 'Avg prompt "
        "throughput: ...' lines, or SGLang's 'max_total_num_tokens=N' or 'Decode batch. "
        "#running-req: ...' lines (the server's own log of the run)");
  }
  return log;
}

nlohmann::json ServerLogToJson(const ServerLog& log) {
  nlohmann::json j;
  j["engine"] = log.engine;
  j["lines_read"] = log.lines_read;
  if (!log.engine_version.empty()) j["engine_version"] = log.engine_version;
  if (log.kv_tokens) {
    j["kv_tokens"] = *log.kv_tokens;
    j["kv_line"] = log.kv_line;
  }
  if (log.gpu_blocks) j["gpu_blocks"] = *log.gpu_blocks;
  if (log.available_kv_gib) j["available_kv_gib"] = *log.available_kv_gib;
  if (log.mem_fraction_static) j["mem_fraction_static"] = *log.mem_fraction_static;
  if (log.periodic.lines > 0) {
    j["stats_lines"] = StatsJson(log.periodic, "mean_prompt_plus_generation_throughput");
  }
  if (log.prefill.lines > 0) j["prefill_lines"] = StatsJson(log.prefill, "unused");
  if (log.decode.lines > 0) {
    j["decode_lines"] = StatsJson(log.decode, "mean_gen_throughput");
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& [running, g] : log.decode_by_running) {
      nlohmann::json row = {{"running_requests", running},
                            {"lines", g.lines},
                            {"mean_tokens", g.tokens_sum / static_cast<double>(g.lines)}};
      if (g.throughput_lines > 0) {
        row["mean_gen_throughput"] = g.throughput_sum / static_cast<double>(g.throughput_lines);
      }
      groups.push_back(row);
    }
    j["decode_by_running_requests"] = groups;
  }
  return j;
}

}  // namespace capplan::calibrate::runs
