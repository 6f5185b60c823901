#include "sim/workload/trace_reader.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "sim/workload/timestamp.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

namespace {

// Public traces reach a few GB (Azure 2024's week of requests); beyond this a
// file is surely not a trace.
constexpr int64_t kMaxTraceFileBytes = int64_t{16} << 30;

// Calls fn(line_number, line) for each line without its "\r\n"; blank lines
// are skipped (trailing newlines are common). Stops at the first error.
template <typename Fn>
Status ForEachLine(std::string_view text, Fn fn) {
  int64_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    if (!line.empty()) CAPPLAN_RETURN_IF_ERROR(fn(line_no, line));
    start = end + 1;
  }
  return Status::Ok();
}

// Splits one CSV line. Handles double-quoted fields (quotes stripped, ""
// inside unescaped is not needed by any supported trace, so it is kept
// verbatim).
void SplitCsv(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    if (i < line.size() && line[i] == '"') {
      const size_t close = line.find('"', i + 1);
      if (close != std::string_view::npos) {
        fields->push_back(line.substr(i + 1, close - i - 1));
        i = close + 1;
        const size_t comma = line.find(',', i);
        if (comma == std::string_view::npos) return;
        i = comma + 1;
        continue;
      }
    }
    const size_t comma = line.find(',', i);
    if (comma == std::string_view::npos) {
      fields->push_back(line.substr(i));
      return;
    }
    fields->push_back(line.substr(i, comma - i));
    i = comma + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Where(const std::string& origin, int64_t line) {
  return origin + ":" + std::to_string(line);
}

// The error names the file and line; built only on error, since a day-long
// trace has millions of good rows.
Status ParseTokens(std::string_view field, const std::string& origin, int64_t line,
                   const char* column, int64_t* out) {
  field = Trim(field);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || p != field.data() + field.size() || v < 0 || v > kMaxRequestTokens) {
    return Status::Usage(Where(origin, line) + ": column '" + column +
                         "': expected a token count in [0, " + std::to_string(kMaxRequestTokens) +
                         "], got '" + EchoValue(field) + "'");
  }
  *out = v;
  return Status::Ok();
}

// Raises a 0-token count to 1 (the simulator needs >= 1) and counts it.
void RaiseZero(TraceRow* r, TraceData* out) {
  if (r->input_tokens == 0 || r->output_tokens == 0) {
    ++out->lengths_raised;
    if (r->input_tokens == 0) r->input_tokens = 1;
    if (r->output_tokens == 0) r->output_tokens = 1;
  }
}

// Column indices found in a CSV header, by name.
struct CsvColumns {
  std::vector<int> index;
};

Status FindColumns(std::string_view header, const std::vector<std::string>& wanted,
                   const std::string& origin, int64_t line, CsvColumns* cols, size_t* num_fields) {
  std::vector<std::string_view> fields;
  SplitCsv(header, &fields);
  std::vector<std::string> names;
  for (auto f : fields) names.emplace_back(Trim(f));
  // A UTF-8 byte-order mark would otherwise hide the first column name.
  if (!names.empty() && names[0].rfind("\xEF\xBB\xBF", 0) == 0) names[0].erase(0, 3);
  cols->index.clear();
  for (const auto& w : wanted) {
    int found = -1;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == w) found = static_cast<int>(i);
    }
    if (found < 0) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
      return Status::Usage(Where(origin, line) + ": header lacks column '" + w + "'" +
                           DidYouMean(w, names) + " (header is '" + EchoValue(list, 200) + "')");
    }
    cols->index.push_back(found);
  }
  *num_fields = names.size();
  return Status::Ok();
}

// Calls fn(line, fields) for each row of a CSV trace after its header, with
// the `wanted` columns' fields in the order named; the header must hold them
// all and every row as many fields as the header.
template <typename Fn>
Status ForEachCsvRow(std::string_view text, const std::string& origin,
                     const std::vector<std::string>& wanted, Fn fn) {
  bool have_header = false;
  CsvColumns cols;
  size_t num_fields = 0;
  std::vector<std::string_view> f, picked;
  return ForEachLine(text, [&](int64_t line, std::string_view s) -> Status {
    if (!have_header) {
      have_header = true;
      return FindColumns(s, wanted, origin, line, &cols, &num_fields);
    }
    SplitCsv(s, &f);
    if (f.size() != num_fields) {
      return Status::Usage(Where(origin, line) + ": expected " + std::to_string(num_fields) +
                           " comma-separated fields, got " + std::to_string(f.size()));
    }
    picked.clear();
    for (int i : cols.index) picked.push_back(f[i]);
    return fn(line, picked);
  });
}

// Azure 2023 and 2024 share columns; only the timestamp text differs, and
// ParseCivilTimeNs reads both (naive, or with a UTC offset).
Status ParseAzure(std::string_view text, const std::string& origin, const TraceReadOptions&,
                  TraceData* out) {
  return ForEachCsvRow(
      text, origin, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
      [&](int64_t line, const std::vector<std::string_view>& f) -> Status {
        TraceRow r;
        r.line = line;
        auto ts = ParseCivilTimeNs(Trim(f[0]));
        if (!ts.ok()) return ts.status().WithPrefix(Where(origin, line) + ": column 'TIMESTAMP'");
        r.timestamp_ns = *ts;
        CAPPLAN_RETURN_IF_ERROR(ParseTokens(f[1], origin, line, "ContextTokens", &r.input_tokens));
        CAPPLAN_RETURN_IF_ERROR(
            ParseTokens(f[2], origin, line, "GeneratedTokens", &r.output_tokens));
        RaiseZero(&r, out);
        out->rows.push_back(r);
        return Status::Ok();
      });
}

Status ParseBurstGpt(std::string_view text, const std::string& origin,
                     const TraceReadOptions& options, TraceData* out) {
  return ForEachCsvRow(
      text, origin, {"Timestamp", "Model", "Request tokens", "Response tokens"},
      [&](int64_t line, const std::vector<std::string_view>& f) -> Status {
        TraceRow r;
        r.line = line;
        auto ts = ParseDecimalNs(Trim(f[0]), 9);
        if (!ts.ok()) return ts.status().WithPrefix(Where(origin, line) + ": column 'Timestamp'");
        r.timestamp_ns = *ts;
        CAPPLAN_RETURN_IF_ERROR(ParseTokens(f[2], origin, line, "Request tokens", &r.input_tokens));
        CAPPLAN_RETURN_IF_ERROR(
            ParseTokens(f[3], origin, line, "Response tokens", &r.output_tokens));
        const std::string_view model = Trim(f[1]);
        if ((!options.model_filter.empty() && model != options.model_filter) ||
            (options.drop_failed && r.output_tokens == 0)) {
          ++out->rows_dropped;
          return Status::Ok();
        }
        RaiseZero(&r, out);
        out->rows.push_back(r);
        return Status::Ok();
      });
}

Status MooncakeInt(const nlohmann::json& j, const char* key, const std::string& where,
                   int64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Usage(where + ": missing field '" + key + "'");
  if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > kMaxRequestTokens) {
    return Status::Usage(where + ": field '" + key + "' must be an integer in [0, " +
                         std::to_string(kMaxRequestTokens) + "], got " + EchoValue(it->dump()));
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

// Reads the shape every published Mooncake row has -- one object of the
// integer fields and the hash_ids array, keys without escapes, each once --
// without building a JSON document or any string; a day of rows allocates
// only their hash_ids. Anything else (another field, a fraction, a sign, a
// number past 18 digits, a repeated key, a value out of range) returns false
// and the row goes to the JSON reader, which gives the same row or the error.
class MooncakeLine {
 public:
  explicit MooncakeLine(std::string_view s) : s_(s) {}

  bool Read(TraceRow* r, std::vector<int64_t>* ids) {
    bool ts = false, in = false, out = false, hashes = false;
    std::string_view ts_digits;
    ids->clear();
    if (!Eat('{')) return false;
    do {
      std::string_view key;
      int64_t v = 0;
      if (!Key(&key)) return false;
      if (key == "timestamp" && !ts) {
        ts = Int(&ts_digits, &v);
        if (!ts) return false;
      } else if ((key == "input_length" && !in) || (key == "output_length" && !out)) {
        std::string_view digits;
        if (!Int(&digits, &v) || v > kMaxRequestTokens) return false;
        (key[0] == 'i' ? r->input_tokens : r->output_tokens) = v;
        (key[0] == 'i' ? in : out) = true;
      } else if (key == "hash_ids" && !hashes) {
        if (!IntArray(ids)) return false;
        hashes = true;
      } else {
        return false;
      }
    } while (Eat(','));
    if (!Eat('}') || !AtEnd() || !ts || !in || !out) return false;
    auto ns = ParseDecimalNs(ts_digits, 6);  // as the JSON reader does
    if (!ns.ok()) return false;
    r->timestamp_ns = *ns;
    const int64_t most = (r->input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
    return static_cast<int64_t>(ids->size()) <= most;
  }

 private:
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool AtEnd() {
    Space();
    return i_ == s_.size();
  }
  bool Key(std::string_view* key) {
    if (!Eat('"')) return false;
    const size_t close = s_.find('"', i_);
    if (close == std::string_view::npos) return false;
    *key = s_.substr(i_, close - i_);
    if (key->find('\\') != std::string_view::npos) return false;
    i_ = close + 1;
    return Eat(':');
  }
  // A non-negative integer as JSON writes it (no leading zero), at most 18
  // digits; what follows it is checked by the caller's next Eat.
  bool Int(std::string_view* digits, int64_t* v) {
    Space();
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    const size_t n = i_ - start;
    if (n == 0 || n > 18 || (n > 1 && s_[start] == '0')) return false;
    *digits = s_.substr(start, n);
    std::from_chars(digits->data(), digits->data() + n, *v);
    return true;
  }
  bool IntArray(std::vector<int64_t>* ids) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      std::string_view digits;
      int64_t v = 0;
      if (!Int(&digits, &v)) return false;
      ids->push_back(v);
    } while (Eat(','));
    return Eat(']');
  }

  std::string_view s_;
  size_t i_ = 0;
};

// One row through the JSON reader: any row the fast reader declines, with
// the error naming the line and field.
Status ParseMooncakeRowJson(std::string_view s, const std::string& origin, int64_t line,
                            TraceData* out) {
  const std::string where = Where(origin, line);
  CAPPLAN_ASSIGN_OR_RETURN(const nlohmann::json j, ParseJson(s, where));
  if (!j.is_object()) return Status::Usage(where + ": expected one JSON object per line");
  TraceRow r;
  r.line = line;
  auto ts = j.find("timestamp");
  if (ts == j.end()) return Status::Usage(where + ": missing field 'timestamp'");
  if (!ts->is_number()) {
    return Status::Usage(where + ": field 'timestamp' must be a number of ms, got " + ts->dump());
  }
  // Integers (all rows seen so far) are exact; a fractional value goes
  // through its shortest decimal text, which is exact to the ns as written.
  auto ns = ParseDecimalNs(ts->dump(), 6);
  if (!ns.ok()) return ns.status().WithPrefix(where + ": field 'timestamp'");
  r.timestamp_ns = *ns;
  CAPPLAN_RETURN_IF_ERROR(MooncakeInt(j, "input_length", where, &r.input_tokens));
  CAPPLAN_RETURN_IF_ERROR(MooncakeInt(j, "output_length", where, &r.output_tokens));
  std::vector<int64_t> ids;
  if (auto h = j.find("hash_ids"); h != j.end()) {
    if (!h->is_array()) return Status::Usage(where + ": field 'hash_ids' must be an array");
    ids.reserve(h->size());
    for (const auto& e : *h) {
      if (!e.is_number_integer()) {
        return Status::Usage(where + ": field 'hash_ids' must hold integers, found " + e.dump());
      }
      ids.push_back(e.get<int64_t>());
    }
    const int64_t most = (r.input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
    if (static_cast<int64_t>(ids.size()) > most) {
      return Status::Usage(where + ": field 'hash_ids' has " + std::to_string(ids.size()) +
                           " blocks of " + std::to_string(kMooncakeBlockTokens) +
                           " tokens, more than input_length " + std::to_string(r.input_tokens) +
                           " holds (" + std::to_string(most) +
                           "); drop the extra ids or fix input_length");
    }
  }
  RaiseZero(&r, out);
  out->rows.push_back(r);
  out->hash_ids.push_back(std::move(ids));
  return Status::Ok();
}

Status ParseMooncake(std::string_view text, const std::string& origin, const TraceReadOptions&,
                     TraceData* out) {
  std::vector<int64_t> ids;  // reused: a row's own vector is allocated once, at its size
  return ForEachLine(text, [&](int64_t line, std::string_view s) -> Status {
    TraceRow r;
    r.line = line;
    if (!MooncakeLine(s).Read(&r, &ids)) return ParseMooncakeRowJson(s, origin, line, out);
    RaiseZero(&r, out);
    out->rows.push_back(r);
    out->hash_ids.emplace_back(ids.begin(), ids.end());
    return Status::Ok();
  });
}

}  // namespace

const Registry<TraceParser>& TraceFormatRegistry() {
  static const Registry<TraceParser>* registry = [] {
    auto* r = new Registry<TraceParser>("trace format");
    r->Add("azure_2023", ParseAzure, "Azure LLM inference 2023 CSV");
    r->Add("azure_2024", ParseAzure, "Azure LLM inference 2024 CSV (UTC offsets)");
    r->Add("mooncake", ParseMooncake, "Mooncake JSONL (timestamp ms, hash_ids)");
    r->Add("burstgpt", ParseBurstGpt, "BurstGPT CSV (Timestamp s, Model, tokens, Log Type)");
    return r;
  }();
  return *registry;
}

Result<TraceData> ParseTraceText(const std::string& format, std::string_view text,
                                 const std::string& origin, const TraceReadOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(TraceParser parser, TraceFormatRegistry().Find(format));
  TraceData data;
  // A row per line at most: reserved up front, a day-long trace's rows
  // take their size once instead of twice while the vector grows.
  data.rows.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  CAPPLAN_RETURN_IF_ERROR(parser(text, origin, options, &data));
  return data;
}

Result<TraceData> ReadTraceFile(const std::string& format, const std::string& path,
                                const TraceReadOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(const std::string text, ReadFile(path, kMaxTraceFileBytes));
  return ParseTraceText(format, text, path, options);
}

}  // namespace capplan::sim
