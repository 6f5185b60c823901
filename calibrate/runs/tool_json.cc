#include "calibrate/runs/tool_json.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "schema/run_summary.h"

namespace capplan::calibrate::runs {

namespace {

bool StartsWith(std::string_view text, size_t at, std::string_view word) {
  return text.substr(at, word.size()) == word;
}

// A bare word ends where an identifier character cannot follow it
// ("Infinityx" is not Infinity).
bool WordEnds(std::string_view text, size_t end) {
  return end >= text.size() ||
         !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
}

}  // namespace

Result<nlohmann::json> ParseToolJson(std::string_view text, const std::string& origin) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    if (StartsWith(text, i, "-Infinity") && WordEnds(text, i + 9)) {
      out += "\"-inf\"";
      i += 8;
    } else if (StartsWith(text, i, "Infinity") && WordEnds(text, i + 8)) {
      out += "\"inf\"";
      i += 7;
    } else if (StartsWith(text, i, "NaN") && WordEnds(text, i + 3)) {
      out += "null";
      i += 2;
    } else {
      out += c;
    }
  }
  return ParseJson(out, origin);
}

Status WithHint(const Status& st, const std::string& hint) {
  if (st.ok()) return st;
  const std::string m = st.message() + " (" + hint + ")";
  switch (st.code()) {
    case StatusCode::kInvalidConfig:
      return Status::Invalid(m);
    case StatusCode::kNotFound:
      return Status::NotFound(m);
    case StatusCode::kIoError:
      return Status::Io(m);
    default:
      return Status::Usage(m);
  }
}

Status GetRate(JsonObject& o, std::string_view key, std::optional<double>* out) {
  const nlohmann::json* v = o.Raw(key);
  *out = std::nullopt;
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "inf" || s == "Infinity") return Status::Ok();
    return o.Error(key, "must be a number > 0 or \"inf\", got '" + EchoValue(s) + "'");
  }
  if (!v->is_number() || !(v->get<double>() > 0) || !std::isfinite(v->get<double>())) {
    return o.Error(key, "must be a number > 0 or \"inf\", got " + EchoValue(v->dump()));
  }
  *out = v->get<double>();
  return Status::Ok();
}

Status GetOptional(JsonObject& o, std::string_view key, std::optional<double>* out) {
  const nlohmann::json* v = o.Raw(key);
  *out = std::nullopt;
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (v->is_string() && v->get<std::string>() == "inf") {
    *out = std::numeric_limits<double>::infinity();
    return Status::Ok();
  }
  if (!v->is_number()) return o.Error(key, "must be a number, got " + EchoValue(v->dump()));
  *out = v->get<double>();
  return Status::Ok();
}

void AddMetric(ImportedRun* run, const std::string& key, const std::optional<double>& value,
               const std::string& from) {
  if (value && std::isfinite(*value) && *value > 0) {
    run->measured.push_back({key, *value});
    return;
  }
  run->notes.push_back("'" + from + "' is " + (value ? "not > 0" : "absent") + ": " + key +
                       " not compared");
}

Status AddLatencyMetrics(JsonObject& o, const std::string& file_name,
                         const std::string& capplan_name, ImportedRun* run) {
  // The tools name their statistics as the summary does (a p95 only when
  // asked for with --metric-percentiles / --percentiles).
  for (const std::string& stat : schema::StatNames()) {
    const std::string key = stat + "_" + file_name + "_ms";
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(GetOptional(o, key, &v));
    const std::string name = stat + "_" + capplan_name + "_ms";
    if (stat == "mean" || (v && *v > 0)) AddMetric(run, name, v, key);
  }
  return Status::Ok();
}

std::string IsoDate(std::string_view t) {
  auto digits = [&](size_t at, size_t n) {
    if (t.size() < at + n) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
    }
    return true;
  };
  if (digits(0, 8) && (t.size() == 8 || t[8] == '-' || t[8] == 'T' || t[8] == '_')) {
    return std::string(t.substr(0, 4)) + "-" + std::string(t.substr(4, 2)) + "-" +
           std::string(t.substr(6, 2));
  }
  if (digits(0, 4) && t.size() >= 10 && t[4] == '-' && digits(5, 2) && t[7] == '-' &&
      digits(8, 2)) {
    return std::string(t.substr(0, 10));
  }
  return "";
}

Status ReadRequestLengths(JsonObject& o, ImportedRun* run) {
  std::vector<double> in, out;
  CAPPLAN_RETURN_IF_ERROR(o.Get("input_lens", &in));
  CAPPLAN_RETURN_IF_ERROR(o.Get("output_lens", &out));
  if (in.empty() && out.empty()) return Status::Ok();
  if (in.size() != out.size()) {
    return o.Error("output_lens", "has " + std::to_string(out.size()) + " entries, input_lens " +
                                      std::to_string(in.size()) + "; one per request in both");
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (!(in[i] >= 0 && in[i] <= 1e9 && out[i] >= 0 && out[i] <= 1e9) ||
        in[i] != std::floor(in[i]) || out[i] != std::floor(out[i])) {
      return o.Error("input_lens", "entry " + std::to_string(i) +
                                       " is not a token count in [0, 1e9] (input and output)");
    }
    if (in[i] >= 1 && out[i] >= 1) {
      run->workload.input_lens.push_back(static_cast<int64_t>(in[i]));
      run->workload.output_lens.push_back(static_cast<int64_t>(out[i]));
    }
  }
  return Status::Ok();
}

Status ForEachLine(std::string_view text,
                   const std::function<Status(std::string_view, int64_t)>& fn) {
  size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    CAPPLAN_RETURN_IF_ERROR(fn(text.substr(start, end - start), ++line_no));
    start = end + 1;
  }
  return Status::Ok();
}

}  // namespace capplan::calibrate::runs
