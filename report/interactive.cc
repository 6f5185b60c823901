#include "report/interactive.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"
#include "report/text_util.h"

namespace capplan::report {
namespace {

namespace fs = std::filesystem;

Result<std::string> ReadText(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(what + ": cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The name the page gives a scenario file: the user's relative path as
// given, else (absolute) its file name, so no machine's folders end up in a
// page that is passed around.
std::string PagePath(const std::string& given) {
  const fs::path p(given);
  if (p.is_relative()) return p.lexically_normal().generic_string();
  return p.filename().string();
}

// JSON inside <script type="application/json">: "</" must not end the
// element early; "<\/" is the same JSON string.
std::string ScriptSafe(std::string s) {
  for (size_t p = s.find("</"); p != std::string::npos; p = s.find("</", p + 3)) {
    s.replace(p, 2, "<\\/");
  }
  return s;
}

// A preset's name: the result's, and when several results share it, what
// differs between them ("kimi-k2.6-kv-bf16 (concurrency 16)").
void LabelPresets(nlohmann::json* presets) {
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < presets->size(); ++i) {
    by_label[(*presets)[i]["label"].get<std::string>()].push_back(i);
  }
  for (const auto& [label, idx] : by_label) {
    if (idx.size() < 2) continue;
    std::set<std::string> keys;
    for (size_t i : idx) {
      for (const auto& [k, v] : (*presets)[i]["values"].items()) keys.insert(k);
    }
    std::vector<std::string> differ;
    for (const std::string& k : keys) {
      const nlohmann::json& first = (*presets)[idx[0]]["values"];
      for (size_t i : idx) {
        const nlohmann::json& v = (*presets)[i]["values"];
        if (v.value(k, nlohmann::json()) != first.value(k, nlohmann::json())) {
          differ.push_back(k);
          break;
        }
      }
    }
    for (size_t n = 0; n < idx.size(); ++n) {
      nlohmann::json& p = (*presets)[idx[n]];
      std::string what;
      for (const std::string& k : differ) {
        const nlohmann::json v = p["values"].value(k, nlohmann::json());
        what += (what.empty() ? "" : ", ") + k.substr(k.rfind('.') + 1) + " " +
                (v.is_null() ? std::string("unset") : v.is_string() ? v.get<std::string>() : v.dump());
      }
      // Identical settings (the same result given twice) are numbered.
      if (what.empty()) what = "#" + std::to_string(n + 1);
      p["label"] = label + " (" + what + ")";
    }
  }
}

// Each result becomes a preset: its scenario and the settings it ran with
// that the page's controls hold (report/web/whatif_controls.js), the run
// length included, so choosing it re-runs that result.
nlohmann::json Presets(const std::vector<Summary>& results) {
  nlohmann::json presets = nlohmann::json::array();
  for (const Summary& r : results) {
    nlohmann::json values = nlohmann::json::object();
    const nlohmann::json& w = r.workload;
    for (const char* k : {"concurrency", "request_rate"}) {
      // An open-loop summary echoes concurrency 0: not a setting.
      if (w.is_object() && w.contains(k) && w[k].is_number() && w[k].get<double>() > 0) {
        values[std::string("workload.") + k] = w[k];
      }
    }
    // Sessions derive their request count from the sessions; the other
    // kinds run the count their summary echoes.
    const bool counted = w.is_object() && w.value("kind", "") != "sessions";
    for (const char* k : {"num_requests", "warmup_requests"}) {
      if (counted && w.contains(k) && w[k].is_number_integer()) {
        values[std::string("workload.") + k] = w[k];
      }
    }
    if (!r.pd && r.deployment.is_object()) {
      for (const char* k : {"replicas", "gpus", "tp", "kv_cache", "weights"}) {
        if (r.deployment.contains(k)) values[std::string("deployment.") + k] = r.deployment[k];
      }
    }
    if (r.usd_per_gpu_hour) values["cost.usd_per_gpu_hour"] = *r.usd_per_gpu_hour;
    for (const auto& [k, v] : r.slo_ms) {
      if (k == "ttft_ms" || k == "tpot_ms") values["slo." + k] = v;
    }
    presets.push_back(
        {{"label", r.id}, {"scenario", "scenarios/" + r.scenario + ".json"}, {"values", values}});
  }
  LabelPresets(&presets);
  return presets;
}

// Every weight and KV format name (hw/formats.json weight_choices and
// kv_cache names): what a picker offers when the module cannot narrow it
// to a scenario's card and GPU. The simulator still decides what is valid.
nlohmann::json PageOptions() {
  nlohmann::json out = {{"weights", nlohmann::json::array()},
                        {"kv_cache", nlohmann::json::array({"bf16", "fp8"})}};
  auto doc = ReadJsonFile(DataPath("hw/formats.json"));
  if (!doc.ok()) return out;
  for (const char* k : {"weight_choices", "kv_cache"}) {
    if (doc->contains(k) && (*doc)[k].contains("names")) {
      out[k == std::string("kv_cache") ? "kv_cache" : "weights"] = (*doc)[k]["names"];
    }
  }
  return out;
}

}  // namespace

Result<std::vector<PageScenario>> CollectScenarios(const std::vector<Summary>& results,
                                                   const std::vector<std::string>& files) {
  std::vector<PageScenario> out;
  std::set<std::string> seen;
  for (const Summary& r : results) {
    const std::string rel = "scenarios/" + r.scenario + ".json";
    if (r.scenario.empty() || !seen.insert(rel).second) continue;
    auto text = ReadText(DataPath(rel), "report --interactive");
    if (!text.ok()) {
      return Status::NotFound("report --interactive: result " + r.origin + " ran scenario '" +
                              r.scenario + "', which is not in " + DataPath("scenarios") +
                              "; pass its file with --scenario FILE");
    }
    out.push_back({rel, *text});
  }
  for (const std::string& f : files) {
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadText(f, "report --scenario"));
    const std::string path = PagePath(f);
    if (!seen.insert(path).second) continue;
    out.push_back({path, text});
  }
  if (out.empty()) {
    return Status::Usage(
        "report --interactive: no scenario; pass results or --scenario FILE (e.g. --scenario "
        "scenarios/kimi-k2.6-kv-fp8.json)");
  }
  return out;
}

Result<std::string> RenderInteractive(const std::vector<Summary>& results,
                                      const InteractiveOptions& options) {
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<PageScenario> scenarios,
                           CollectScenarios(results, options.scenario_files));
  if (options.module_js.empty() || !fs::exists(options.module_js)) {
    return Status::NotFound(
        "report --interactive: the simulator's WebAssembly module " +
        (options.module_js.empty() ? std::string("(capplan_sim.js)") : options.module_js) +
        " is missing; build it with emscripten installed (scripts/install_deps.sh test, then "
        "make) or pass --wasm FILE");
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::string module, ReadText(options.module_js, "report --wasm"));
  nlohmann::json scen = nlohmann::json::array();
  for (const auto& s : scenarios) scen.push_back({{"path", s.path}, {"text", s.text}});
  nlohmann::json presets = Presets(results);
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<title>" << HtmlEscape(options.title) << "</title><style>" << InteractiveCss()
    << "</style></head><body>\n<h1>" << HtmlEscape(options.title) << "</h1>\n"
    << "<p class=\"note\">Every change re-runs capplan's simulator in this page (WebAssembly, "
       "no network): the numbers are those <code>capplan simulate --json</code> prints for the "
       "command shown below.</p>\n"
    << "<div class=\"layout\"><div id=\"side\">"
    << "<fieldset><legend>Start from</legend><label class=\"ctl wide\"><span>Result</span>"
    << "<select id=\"preset\"></select></label><label class=\"ctl wide\"><span>Scenario</span>"
    << "<select id=\"scenario\"></select></label></fieldset><div id=\"controls\"></div></div>\n"
    << "<div id=\"main\"><p class=\"note\" id=\"description\"></p><div id=\"error\"></div>"
    << "<p id=\"sets\"></p><p id=\"busy\"></p><div id=\"results\"><div class=\"cards\" "
       "id=\"cards\"></div><h2>Throughput and latency</h2><div class=\"charts\" id=\"charts\">"
       "</div><div id=\"tradeoff\"></div></div></div></div>\n"
    << "<pre id=\"capplan-whatif\"></pre>\n"
    << "<script type=\"application/json\" id=\"capplan-scenarios\">" << ScriptSafe(scen.dump())
    << "</script>\n<script type=\"application/json\" id=\"capplan-presets\">"
    << ScriptSafe(presets.dump()) << "</script>\n"
    << "<script type=\"application/json\" id=\"capplan-options\">"
    << ScriptSafe(PageOptions().dump()) << "</script>\n<script>\n"
    << ScriptSafe(module) << "\n</script>\n<script>" << InteractiveScript()
    << "</script>\n</body></html>\n";
  return h.str();
}

Status WriteInteractive(const std::vector<std::string>& inputs, const std::string& out,
                        const InteractiveOptions& options) {
  std::vector<Summary> results;
  if (!inputs.empty()) {
    CAPPLAN_ASSIGN_OR_RETURN(results, LoadResults(inputs));
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::string page, RenderInteractive(results, options));
  return WriteFileAtomic(out, page);
}

}  // namespace capplan::report
