#include "common/json_util.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/did_you_mean.h"

namespace capplan {

namespace {

std::string TypeName(const nlohmann::json& j) { return j.type_name(); }

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

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = LineCol(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line
    // L, column C: " prefix; we print our own position.
    const auto p = what.find(": ");
    if (p != std::string::npos) what = what.substr(p + 2);
    return Status::Usage(origin + ": line " + std::to_string(line) + ", column " +
                         std::to_string(col) + ": malformed JSON: " + what);
  }
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open file (check the path)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseJson(ss.str(), path);
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
  return pointer_ + "/" + std::string(key);
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
  if (v->is_number_integer()) {
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
  return Error(key, "must be an integer, got " + v->dump());
}

Status JsonObject::Get(std::string_view key, int* out, bool required) {
  int64_t tmp = *out;
  CAPPLAN_RETURN_IF_ERROR(Get(key, &tmp, required));
  if (tmp < INT32_MIN || tmp > INT32_MAX) return Error(key, "integer out of range");
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
  if (!v->is_boolean()) return Error(key, "must be true or false, got " + v->dump());
  *out = v->get<bool>();
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::string* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_string()) return Error(key, "must be a string, got " + v->dump());
  *out = v->get<std::string>();
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::optional<double>* out, bool required) {
  double d = 0;
  Touch(key);
  if (!Has(key)) {
    if (required) return Error(key, "required field is missing");
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(Get(key, &d, required));
  *out = d;
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::optional<int64_t>* out, bool required) {
  int64_t d = 0;
  Touch(key);
  if (!Has(key)) {
    if (required) return Error(key, "required field is missing");
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(Get(key, &d, required));
  *out = d;
  return Status::Ok();
}

Status JsonObject::Get(std::string_view key, std::vector<std::string>* out, bool required) {
  CAPPLAN_JSON_PREAMBLE
  if (!v->is_array()) return Error(key, "must be an array of strings");
  std::vector<std::string> r;
  for (const auto& e : *v) {
    if (!e.is_string()) return Error(key, "must be an array of strings, found " + e.dump());
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
    if (!e.is_number()) return Error(key, "must be an array of numbers, found " + e.dump());
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
  return Error(key, "unknown value '" + value + "'" + DidYouMean(value, allowed));
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
  nlohmann::json* cur = doc;
  std::string pointer;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted_path.find('.', start);
    const std::string part(dotted_path.substr(start, dot == std::string_view::npos
                                                          ? std::string_view::npos
                                                          : dot - start));
    if (part.empty()) {
      return Status::Usage(origin + ": '" + std::string(dotted_path) + "': empty path segment");
    }
    pointer += "/" + part;
    if (!cur->is_object()) {
      return Status::Usage(origin + ": " + pointer + ": parent is not an object");
    }
    if (dot == std::string_view::npos) {
      nlohmann::json parsed;
      try {
        parsed = nlohmann::json::parse(value.begin(), value.end());
      } catch (const nlohmann::json::parse_error&) {
        parsed = std::string(value);
      }
      (*cur)[part] = parsed;
      return Status::Ok();
    }
    cur = &(*cur)[part];
    if (cur->is_null()) *cur = nlohmann::json::object();
    start = dot + 1;
  }
}

std::string DumpJson(const nlohmann::json& j, int indent) { return j.dump(indent) + "\n"; }

}  // namespace capplan
