// Strict JSON reading: every error names the file and the JSON path, unknown
// keys are errors with a "did you mean", and values are range-checked.
//
// Typical use:
//   CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
//   JsonObject o(doc, path, "");            // root object
//   CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
//   CAPPLAN_RETURN_IF_ERROR(o.Get("tp", &tp, /*required=*/true));
//   CAPPLAN_RETURN_IF_ERROR(o.CheckRange("tp", tp, 1, 1024));
//   CAPPLAN_RETURN_IF_ERROR(o.Finish());    // rejects keys never read
#ifndef CAPPLAN_COMMON_JSON_UTIL_H_
#define CAPPLAN_COMMON_JSON_UTIL_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace capplan {

// Every JSON capplan reads goes through ParseJson, so every reader has the
// same limits: no parser exception escapes (syntax errors name line and
// column, refused values their JSON path), duplicate keys are errors (the
// last one would silently win), numbers beyond double range are errors, and
// nesting is bounded so that recursive json operations cannot exhaust the
// stack.
inline constexpr int kMaxJsonDepth = 512;

// Reads (ReadFile: regular files up to kMaxInputFileBytes) and parses a
// file. Errors: "FILE: cannot open ..." (NotFound), "FILE: line L, column C:
// <parser message>" or "FILE: /json/path: <why>" (Usage).
Result<nlohmann::json> ReadJsonFile(const std::string& path);
// Parses text; `origin` names it in errors (a file name or "--set").
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& origin);
// A command-line value (--set, --grid): parsed as JSON when it is valid JSON
// syntax, else taken as a string ("fp8"). Valid syntax that ParseJson
// refuses (1e309, duplicate keys, deep nesting) is an error, not a string.
Result<nlohmann::json> ParseFlagValue(std::string_view text, const std::string& origin);

// A view of one JSON object that remembers which keys were read.
class JsonObject {
 public:
  // `origin` is the file name, `pointer` the JSON pointer of this object
  // ("" for the root, "/deployment" for a member).
  JsonObject(const nlohmann::json& j, std::string origin, std::string pointer);

  // Usage error unless the value is a JSON object.
  Status CheckObject() const;
  bool Has(std::string_view key) const;
  // Marks `key` as known without reading it (for keys handled elsewhere).
  void Touch(std::string_view key);

  // Each Get leaves *out unchanged when the key is absent or null and not
  // required; a required absent key or a type mismatch is a Usage error.
  Status Get(std::string_view key, int64_t* out, bool required = false);
  Status Get(std::string_view key, int* out, bool required = false);
  Status Get(std::string_view key, double* out, bool required = false);
  Status Get(std::string_view key, bool* out, bool required = false);
  Status Get(std::string_view key, std::string* out, bool required = false);
  Status Get(std::string_view key, std::optional<double>* out, bool required = false);
  Status Get(std::string_view key, std::optional<int64_t>* out, bool required = false);
  Status Get(std::string_view key, std::vector<std::string>* out, bool required = false);
  Status Get(std::string_view key, std::vector<double>* out, bool required = false);
  // A child object (must be an object when present). Marks the key read.
  Result<JsonObject> Child(std::string_view key, bool required = false);
  // Raw access; marks the key read. nullptr when absent.
  const nlohmann::json* Raw(std::string_view key);

  // Usage error "ORIGIN: PATH/key: must be in [lo, hi], got v".
  Status CheckRange(std::string_view key, double value, double lo, double hi) const;
  // Usage error unless value is one of `allowed` (with did-you-mean).
  Status CheckOneOf(std::string_view key, const std::string& value,
                    const std::vector<std::string>& allowed) const;
  // Reads the required "format" key (marks it read) and checks it is
  // `expected`, a file's format and version ("capplan.model_card.v1").
  Status CheckFormat(const std::string& expected);
  // Usage error naming every key present but never read, with suggestions
  // drawn from the keys that were read or touched plus `extra_known`.
  Status Finish(const std::vector<std::string>& extra_known = {}) const;

  // "ORIGIN: /pointer/key: message" as a Usage error.
  Status Error(std::string_view key, const std::string& message) const;
  // "ORIGIN: /pointer/key: message" as an InvalidConfig error.
  Status Invalid(std::string_view key, const std::string& message) const;
  std::string PathOf(std::string_view key) const;
  const std::string& origin() const { return origin_; }
  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& json() const { return *j_; }

 private:
  const nlohmann::json* Find(std::string_view key) const;
  const nlohmann::json* j_;
  std::string origin_;
  std::string pointer_;
  std::set<std::string, std::less<>> read_;
};

// Sets a value at a dotted path ("deployment.tp") from a command-line string:
// the string is parsed as JSON when it parses (numbers, true, null, arrays),
// else taken as a string. Usage error when an intermediate is not an object.
Status SetDotted(nlohmann::json* doc, std::string_view dotted_path, std::string_view value,
                 const std::string& origin);

// JSON serialization with sorted keys and fixed indent, for stable files.
std::string DumpJson(const nlohmann::json& j, int indent = 2);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_JSON_UTIL_H_
