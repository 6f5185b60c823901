#include "common/json_util.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/atomic_file.h"
#include "common/did_you_mean.h"
#include "common/utf8.h"

namespace capplan {

namespace {

std::string TypeName(const nlohmann::json& j) { return j.type_name(); }

// A value quoted in an error: its JSON text, escaped and cut short.
std::string EchoJson(const nlohmann::json& j) { return EchoValue(j.dump()); }

// Line and column of byte offset `pos` in `text` (1-based).
std::pair<int, int> LineCol(std::string_view text, size_t pos) {
  int line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// Thrown from the parser callback to stop parsing; caught in ParseStrict.
struct JsonLimitError {
  std::string message;
};

// Follows the parser's events to know the JSON pointer of the value being
// parsed (nlohmann reports only byte offsets, and only for syntax errors) and
// to enforce what the grammar allows but capplan does not: duplicate keys,
// nesting deep enough to exhaust the stack in recursive json operations.
class ParseTracker {
 public:
  bool OnEvent(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= kMaxJsonDepth) {
          throw JsonLimitError{"nested deeper than " + std::to_string(kMaxJsonDepth) +
                               " levels; flatten the document"};
        }
        frames_.push_back(Frame{event == E::array_start, 0, {}, {}});
        break;
      case E::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          throw JsonLimitError{"duplicate key '" + EchoValue(f.key) +
                               "' (each key may appear once; remove the other)"};
        }
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        ValueDone();
        break;
      case E::value:
        if (parsed.is_number_float() && !std::isfinite(parsed.get<double>())) {
          throw JsonLimitError{"number out of range (must be finite)"};
        }
        ValueDone();
        break;
    }
    return true;
  }

  // ": " + the JSON pointer of the value being parsed, cut short when deep
  // nesting makes it long; empty for the root value (a --set value's origin
  // already names it).
  std::string Where() const {
    std::string p;
    for (const Frame& f : frames_) {
      p += "/";
      p += f.is_array ? std::to_string(f.index) : f.key;
      if (p.size() > 200) break;
    }
    return p.empty() ? "" : ": " + EchoValue(p, 200);
  }

 private:
  struct Frame {
    bool is_array;
    int64_t index;
    std::string key;
    std::set<std::string> keys;
  };
  void ValueDone() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }
  std::vector<Frame> frames_;
};

// What went wrong, for callers that treat a syntax error differently from
// valid syntax the reader refuses (SetDotted falls back to a string only on
// the former).
enum class ParseFailure { kNone, kSyntax, kRefused };

Result<nlohmann::json> ParseStrict(std::string_view text, const std::string& origin,
                                   ParseFailure* failure) {
  *failure = ParseFailure::kRefused;
  ParseTracker tracker;
  const std::string where = EchoValue(origin, 256);
  try {
    nlohmann::json j = nlohmann::json::parse(
        text.begin(), text.end(),
        [&tracker](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return tracker.OnEvent(depth, event, parsed);
        });
    *failure = ParseFailure::kNone;
    return j;
  } catch (const JsonLimitError& e) {
    return Status::Usage(where + tracker.Where() + ": " + e.message);
  } catch (const nlohmann::json::parse_error& e) {
    *failure = ParseFailure::kSyntax;
    auto [line, col] = LineCol(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line
    // L, column C: " prefix; we print our own position.
    const auto p = what.find(": ");
    if (p != std::string::npos) what = what.substr(p + 2);
    return Status::Usage(where + ": line " + std::to_string(line) + ", column " +
                         std::to_string(col) + ": malformed JSON: " + EchoValue(what, 200));
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond double range (1e309); nlohmann gives no offset,
    // the tracker knows where it was.
    std::string token;
    const std::string what = e.what();
    const auto q = what.find('\'');
    if (q != std::string::npos) {
      const auto q2 = what.rfind('\'');
      token = " " + EchoValue(what.substr(q + 1, q2 > q ? q2 - q - 1 : std::string::npos));
    }
    return Status::Usage(where + tracker.Where() + ": number" + token +
                         " is out of range (beyond +-1.8e308)");
  } catch (const nlohmann::json::exception& e) {
    return Status::Usage(where + tracker.Where() + ": " + EchoValue(e.what(), 200));
  }
}

// An optional number: left empty when the key is absent (an error when
// `required`), else read as the plain number would be.
template <class T>
Status GetOptional(JsonObject& o, std::string_view key, std::optional<T>* out, bool required) {
  T value = 0;
  o.Touch(key);
  if (!o.Has(key)) {
    if (required) return o.Error(key, "required field is missing");
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get(key, &value, required));
  *out = value;
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& origin) {
  ParseFailure failure;
  return ParseStrict(text, origin, &failure);
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJson(text, path);
}

Result<nlohmann::json> ParseFlagValue(std::string_view text, const std::string& origin) {
  ParseFailure failure;
  auto r = ParseStrict(text, origin, &failure);
  if (failure != ParseFailure::kSyntax) return r;
  // Taken as a string, it must be text: JSON strings are UTF-8, and writing
  // any other bytes into a summary or a point id would fail later.
  if (!IsUtf8(text)) {
    return Status::Usage(origin + ": '" + EchoValue(text) + "' is not valid UTF-8 text");
  }
  return nlohmann::json(std::string(text));
}

JsonObject::JsonObject(const nlohmann::json& j, std::string origin, std::string pointer)
    : j_(&j), origin_(std::move(origin)), pointer_(std::move(pointer)) {}

Status JsonObject::CheckObject() const {
  if (!j_->is_object()) {
    return Status::Usage(origin_ + ": " + (pointer_.empty() ? "/" : pointer_) +
                         ": must be a JSON object, got " + TypeName(*j_));
  }
  return Status::Ok();
}

std::string JsonObject::PathOf(std::string_view key) const {
  return pointer_ + "/" + EchoValue(key);
}

Status JsonObject::Error(std::string_view key, const std::string& message) const {
  return Status::Usage(origin_ + ": " + PathOf(key) + ": " + message);
}

Status JsonObject::Invalid(std::string_view key, const std::string& message) const {
  return Status::Invalid(origin_ + ": " + PathOf(key) + ": " + message);
}

const nlohmann::json* JsonObject::Find(std::string_view key) const {
  if (!j_->is_object()) return nullptr;
  auto it = j_->find(std::string(key));
  return it == j_->end() ? nullptr : &*it;
}

bool JsonObject::Has(std::string_view key) const {
  const auto* v = Find(key);
  return v != nullptr && !v->is_null();
}

void JsonObject::Touch(std::string_view key) { read_.insert(std::string(key)); }

const nlohmann::json* JsonObject::Raw(std::string_view key) {
  Touch(key);
  return Find(key);
}

#define CAPPLAN_JSON_PREAMBLE                                              \
  Touch(key);                                                              \
  const nlohmann::json* v = Find(key);                                     \
  if (v == nullptr || v->is_null()) {                                      \
    if (required) return Error(key, "required field is missing");          \
    return Status::Ok();                                                   \
  }

Status JsonObject::Get(std::string_view key, int64_t* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
      *out = static_cast<int64_t>(v->get<uint64_t>());
      return Status::Ok();
    }
  } else if (v->is_number_integer()) {
    *out = v->get<int64_t>();
    return Status::Ok();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      *out = static_cast<int64_t>(d);
      return Status::Ok();
    }
  }
  return Error(key, "must be an integer in int64 range, got " + EchoJson(*v));
}

Status JsonObject::Get(std::string_view key, int* out, bool required) {
  int64_t tmp = *out;
  CAPPLAN_RETURN_IF_ERROR(Get(key, &tmp, required));
  if (tmp < INT32_MIN || tmp > INT32_MAX) {
    return Error(key, "integer out of range (int32), got " + std::to_string(tmp));
  }
  *out = static_cast<int>(tmp);
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, double* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_number()) return Error(key, "must be a number, got " + TypeName(*v));
  const double d = v->get<double>();
  if (!std::isfinite(d)) return Error(key, "must be finite");
  *out = d;
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, bool* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_boolean()) return Error(key, "must be true or false, got " + EchoJson(*v));
  *out = v->get<bool>();
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::string* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_string()) return Error(key, "must be a string, got " + EchoJson(*v));
  *out = v->get<std::string>();
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::optional<double>* out, bool required) {
  return GetOptional(*this, key, out, required);
}

Status JsonObject::Get(std::string_view key, std::optional<int64_t>* out, bool required) {
  return GetOptional(*this, key, out, required);
}

Status JsonObject::Get(std::string_view key, std::vector<std::string>* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_array()) return Error(key, "must be an array of strings");
  std::vector<std::string> r;
  for (const auto& e : *v) {
    if (!e.is_string()) return Error(key, "must be an array of strings, found " + EchoJson(e));
    r.push_back(e.get<std::string>());
  }
  *out = std::move(r);
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::vector<double>* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_array()) return Error(key, "must be an array of numbers");
  std::vector<double> r;
  for (const auto& e : *v) {
    if (!e.is_number()) return Error(key, "must be an array of numbers, found " + EchoJson(e));
    if (!std::isfinite(e.get<double>())) return Error(key, "numbers must be finite");
    r.push_back(e.get<double>());
  }
  *out = std::move(r);
  return Status::Ok();
}

#undef CAPPLAN_JSON_PREAMBLE

Result<JsonObject> JsonObject::Child(std::string_view key, bool required) {
  Touch(key);
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) {
    if (required) return Error(key, "required object is missing");
    static const nlohmann::json kEmpty = nlohmann::json::object();
    return JsonObject(kEmpty, origin_, PathOf(key));
  }
  if (!v->is_object()) return Error(key, "must be a JSON object, got " + TypeName(*v));
  return JsonObject(*v, origin_, PathOf(key));
}

Status JsonObject::CheckRange(std::string_view key, double value, double lo, double hi) const {
  if (!(value >= lo && value <= hi)) {
    std::ostringstream os;
    os << "must be in [" << lo << ", " << hi << "], got " << value;
    return Error(key, os.str());
  }
  return Status::Ok();
}

Status JsonObject::CheckOneOf(std::string_view key, const std::string& value,
                              const std::vector<std::string>& allowed) const {
  for (const auto& a : allowed) {
    if (a == value) return Status::Ok();
  }
  return Error(key, "unknown value '" + EchoValue(value) + "'" + DidYouMean(value, allowed));
}

Status JsonObject::CheckFormat(const std::string& expected) {
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(Get("format", &format, true));
  return CheckOneOf("format", format, {expected});
}

Status JsonObject::Finish(const std::vector<std::string>& extra_known) const {
  if (!j_->is_object()) return Status::Ok();
  std::vector<std::string> known(read_.begin(), read_.end());
  known.insert(known.end(), extra_known.begin(), extra_known.end());
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    if (read_.count(it.key()) == 0 &&
        std::find(extra_known.begin(), extra_known.end(), it.key()) == extra_known.end()) {
      return Error(it.key(), "unknown field" + DidYouMean(it.key(), known));
    }
  }
  return Status::Ok();
}

Status SetDotted(nlohmann::json* doc, std::string_view dotted_path, std::string_view value,
                 const std::string& origin) {
  if (dotted_path.empty()) return Status::Usage(origin + ": empty path in '--set'");
  if (!IsUtf8(dotted_path)) {
    return Status::Usage(origin + ": '" + EchoValue(dotted_path) + "' is not valid UTF-8 text");
  }
  nlohmann::json* cur = doc;
  std::string pointer;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted_path.find('.', start);
    const std::string part(dotted_path.substr(start, dot == std::string_view::npos
                                                          ? std::string_view::npos
                                                          : dot - start));
    if (part.empty()) {
      return Status::Usage(origin + ": '" + EchoValue(dotted_path) + "': empty path segment");
    }
    pointer += '/';
    pointer += EchoValue(part);
    if (!cur->is_object()) {
      return Status::Usage(origin + ": " + pointer + ": parent is not an object");
    }
    if (dot == std::string_view::npos) {
      CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json parsed,
                               ParseFlagValue(value, origin + " " + EchoValue(dotted_path)));
      (*cur)[part] = std::move(parsed);
      return Status::Ok();
    }
    cur = &(*cur)[part];
    if (cur->is_null()) *cur = nlohmann::json::object();
    start = dot + 1;
  }
}

std::string DumpJson(const nlohmann::json& j, int indent) { return j.dump(indent) + "\n"; }

}  // namespace capplan
