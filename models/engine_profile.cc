#include "models/engine_profile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/did_you_mean.h"
#include "common/json_util.h"
#include "models/engine_profile_internal.h"

namespace capplan::models {

Result<std::array<int, 3>> ParseEngineVersion(const std::string& v, const std::string& flag) {
  std::array<int, 3> out{0, 0, 0};
  std::string s = v;
  if (!s.empty() && s[0] == 'v') s = s.substr(1);
  // "0.4.5.post3" names a 0.4.5 patch build: its rules are 0.4.5's.
  if (const size_t post = s.find(".post"); post != std::string::npos) s = s.substr(0, post);
  const Status bad =
      Status::Usage(flag + ": version must look like 0.5.4, got '" + EchoValue(v) + "'");
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const char* b = s.data() + pos;
    const char* e = s.data() + s.size();
    auto r = std::from_chars(b, e, out[i]);
    if (r.ec != std::errc() || out[i] < 0 || out[i] > 100000) return bad;
    pos = r.ptr - s.data();
    if (pos == s.size()) break;
    if (s[pos] != '.') return bad;
    ++pos;
  }
  if (pos != s.size() || s.empty()) return bad;
  return out;
}

int64_t EngineDefaults::CudaGraphMaxBs(int tp) const {
  return tp >= cuda_graph_large_tp_from ? cuda_graph_max_bs_large_tp : cuda_graph_max_bs_small_tp;
}

int64_t EngineDefaults::PageSize(bool sparse_attention) const {
  return sparse_attention ? page_size_sparse_attention : page_size;
}

int64_t EngineDefaults::MaxRunningRequests(int64_t kv_tokens, int64_t context_len) const {
  const int64_t by_context =
      kv_tokens / std::max<int64_t>(1, context_len) * max_running_per_context;
  return std::min(std::max(by_context, max_running_min), max_running_max);
}

const std::string& EngineProfile::SourceOf(const std::string& key) const {
  static const std::string kNone = "(no source recorded)";
  auto it = sources.find(key);
  return it == sources.end() ? kNone : it->second;
}

std::map<std::string, std::string> EngineProfile::KernelNamesFor(
    const std::string& architecture) const {
  std::map<std::string, std::string> names = kernel_names;
  auto it = kernel_names_by_architecture.find(architecture);
  if (it == kernel_names_by_architecture.end()) return names;
  for (const auto& [sel, impl] : it->second) names[sel] = impl;
  return names;
}

std::vector<std::string> LaunchBackendFlag::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, b] : choices) names.push_back(name);
  return names;
}

const std::vector<std::string>& LaunchBackendFields() {
  static const std::vector<std::string> fields = {"attention_backend", "moe_runner_backend"};
  return fields;
}

std::string LaunchBackendNoun(const std::string& field) {
  std::string noun = field;
  std::replace(noun.begin(), noun.end(), '_', ' ');
  return noun;
}

std::map<std::string, std::string> WithLaunchBackendKernels(
    std::map<std::string, std::string> names, const std::vector<const LaunchBackend*>& chosen) {
  for (const LaunchBackend* b : chosen) {
    for (const auto& [sel, impl] : b->kernel_names) {
      if (sel.rfind("mla_prefill_absorbed.", 0) == 0 && names.count(sel) == 0) continue;
      names[sel] = impl;
    }
  }
  return names;
}

namespace {

using internal::RangeableMembers;

struct EngineFile {
  std::string latest;
  std::vector<EngineProfile> profiles;  // oldest first
};

Result<const EngineFile*> LoadEngineFile(const std::string& engine) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::unique_ptr<Result<EngineFile>>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(engine);
  if (it == cache->end()) {
    auto load = [&]() -> Result<EngineFile> {
      const std::string path = DataPath("models/engines/" + engine + ".json");
      CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      EngineFile f;
      CAPPLAN_ASSIGN_OR_RETURN(f.profiles, ParseEngineProfiles(text, path, &f.latest));
      for (const EngineProfile& p : f.profiles) {
        if (p.engine != engine) {
          return Status::Usage(path + ": /engine: '" + p.engine + "' does not match the file name");
        }
      }
      return f;
    };
    it = cache->emplace(engine, std::make_unique<Result<EngineFile>>(load())).first;
  }
  if (!it->second->ok()) return it->second->status();
  return &it->second->value();
}

// JSON merge patch would keep an earlier entry's "range" under a term that a
// later entry restates with a new value and no range; a range belongs with
// its value, so a restated term keeps only what its own entry says.
void DropRestatedRanges(const nlohmann::json& entry, nlohmann::json* merged) {
  if (!entry.contains("memory") || !entry["memory"].is_object() || !merged->contains("memory")) {
    return;
  }
  nlohmann::json& mm = (*merged)["memory"];
  for (const auto& [key, term] : entry["memory"].items()) {
    if (term.is_object() && !term.contains("range") && mm.contains(key) && mm[key].is_object()) {
      mm[key].erase("range");
    }
  }
}

}  // namespace

const std::vector<std::string>& RangeableMemoryTerms() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>();
    for (const auto& [name, member] : RangeableMembers()) v->push_back(name);
    return v;
  }();
  return *names;
}

EngineMemoryRule WithMemoryTerm(const EngineMemoryRule& rule, const std::string& key, double v) {
  EngineMemoryRule out = rule;
  for (const auto& [name, member] : RangeableMembers()) {
    if (name != key) continue;
    std::visit(
        [&](auto field) {
          using T = std::remove_reference_t<decltype(out.*field)>;
          if constexpr (std::is_same_v<T, bool>) {
            out.*field = v >= 0.5;
          } else if constexpr (std::is_integral_v<T>) {
            out.*field = static_cast<T>(std::llround(v));
          } else {
            out.*field = v;
          }
        },
        member);
  }
  return out;
}

Result<std::vector<EngineProfile>> ParseEngineProfiles(const std::string& json_text,
                                                       const std::string& origin,
                                                       std::string* latest) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(json_text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string engine, knob;
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat("capplan.engine_profile.v1"));
  CAPPLAN_RETURN_IF_ERROR(root.Get("engine", &engine, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("knob", &knob, true));
  root.Touch("comment");
  std::map<std::string, std::string> top_sources;
  std::string latest_version;
  CAPPLAN_RETURN_IF_ERROR(
      internal::GetSourcedString(root, "", "latest", &latest_version, &top_sources));
  const nlohmann::json* versions = root.Raw("versions");
  if (versions == nullptr || !versions->is_array() || versions->empty()) {
    return root.Error("versions", "must be a non-empty array, oldest first");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  std::vector<EngineProfile> out;
  nlohmann::json merged = nlohmann::json::object();
  for (size_t i = 0; i < versions->size(); ++i) {
    const std::string ptr = "/versions/" + std::to_string(i);
    const nlohmann::json& entry = (*versions)[i];
    if (!entry.is_object()) return Status::Usage(origin + ": " + ptr + ": must be an object");
    for (const char* own : {"version", "source"}) {
      if (!entry.contains(own)) {
        return Status::Usage(origin + ": " + ptr + "/" + own + ": required in every entry");
      }
    }
    DropRestatedRanges(entry, &merged);
    merged.merge_patch(entry);
    EngineProfile p;
    p.engine = engine;
    p.knob = knob;
    CAPPLAN_RETURN_IF_ERROR(internal::ParseEngineEntry(merged, origin, ptr, &p));
    if (!out.empty() && !(out.back().version_triple < p.version_triple)) {
      return Status::Usage(origin + ": " + ptr + "/version: " + p.version +
                           " must be newer than the entry before it (" + out.back().version + ")");
    }
    p.sources["latest"] = top_sources["latest"];
    out.push_back(std::move(p));
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto lt, ParseEngineVersion(latest_version, origin + ": /latest"));
  if (lt < out.front().version_triple) {
    return Status::Usage(origin + ": /latest: " + latest_version + " is older than every entry");
  }
  if (latest != nullptr) *latest = latest_version;
  return out;
}

std::vector<std::string> EngineNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(DataPath("models/engines"), ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::filesystem::path& f = it->path();
    if (f.extension() == ".json") names.push_back(f.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<EngineResolution> ResolveEngine(const std::string& engine, const std::string& version) {
  const std::vector<std::string> names = EngineNames();
  if (std::find(names.begin(), names.end(), engine) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    return Status::Usage("--engine: unknown engine '" + engine + "'" + DidYouMean(engine, names) +
                         " (known: " + list + ")");
  }
  CAPPLAN_ASSIGN_OR_RETURN(const EngineFile* f, LoadEngineFile(engine));
  std::vector<std::string> known;
  for (const EngineProfile& p : f->profiles) known.push_back(p.version);
  std::string known_text;
  for (const std::string& k : known) known_text += (known_text.empty() ? "" : ", ") + k;
  EngineResolution r;
  r.version = version.empty() ? f->latest : version;
  auto parsed = ParseEngineVersion(r.version, "--engine-version");
  if (!parsed.ok()) {
    return Status::Usage(parsed.status().message() + "; known " + engine +
                         " versions: " + known_text + DidYouMean(r.version, known));
  }
  r.version_triple = *parsed;
  for (const EngineProfile& p : f->profiles) {
    if (p.version_triple <= *parsed) r.profile = &p;
  }
  if (r.profile == nullptr) {
    return Status::Usage("--engine-version: " + engine + " " + r.version +
                         " is older than every known rule; known " + engine +
                         " versions: " + known_text);
  }
  if (r.profile->version_triple != *parsed) {
    r.note = engine + " " + r.version + " has no entry of its own: using the rules of " +
             r.profile->version + ", the latest known change at or before it";
  }
  return r;
}

}  // namespace capplan::models
