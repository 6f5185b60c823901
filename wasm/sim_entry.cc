// The functions the what-if page calls in the WebAssembly module
// (wasm/module/CMakeLists.txt). One call runs what `capplan simulate
// SCENARIO --set ... --json` runs and returns the same summary JSON text, or
// the one-line error the CLI would print.
#include <emscripten/emscripten.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/status.h"
#include "hw/formats.h"
#include "hw/profile.h"
#include "models/card.h"
#include "models/dtype_facts.h"
#include "models/memory.h"
#include "models/types.h"
#include "schema/run_summary.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

namespace capplan {
namespace {

// What `capplan simulate --json` runs (cli/sim_commands.cc): one entry point
// for co-located and disaggregated scenarios alike.
Result<nlohmann::json> SimulateSummary(const std::string& path,
                                       const std::vector<std::string>& sets) {
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario, sim::LoadScenarioFile(path, sets));
  CAPPLAN_ASSIGN_OR_RETURN(sim::RunResult r, sim::RunScenario(*scenario, sim::RunOptions{}));
  return schema::ToJson(r.summary);
}

// The weight and KV formats one pool may name, for its model card and GPU:
// those the memory planner accepts for this card, layout, engine and
// profile. It refuses a weight format the GPU's tensor cores cannot run, a
// KV format the engine lacks or the card's attention has no layout for; it
// does not refuse for lack of memory, since GPUs and TP stay the planner's
// to change.
nlohmann::json PoolChoices(const models::ModelCard& card, const hw::HardwareProfile& profile,
                           const sim::DeploymentSpec& d) {
  const models::ParallelLayout layout = sim::ParallelLayoutOf(d);
  models::EngineMemoryOptions eng;
  eng.engine = d.engine;
  eng.version = d.engine_version;
  const models::DeviceMemory device{profile.gpu_memory_bytes, profile.gpu_runtime_memory_bytes,
                                    &profile};
  models::PrecisionChoice base;
  base.weights = d.weights;
  base.per_component = d.weights_per_component;
  base.kv_cache = d.kv_cache;
  const auto accepted = [&](const models::PrecisionChoice& c) {
    return models::PlanMemoryAllowShortfall(card, layout, c, eng, device, 1).ok();
  };
  nlohmann::json weights = nlohmann::json::array(), kv = nlohmann::json::array();
  // "default" (the checkpoint as shipped) first, then the formats.
  for (const std::string& w : models::WeightChoiceNames()) {
    models::PrecisionChoice c = base;
    c.weights = w;
    if (accepted(c)) weights.push_back(w);
  }
  auto facts = models::GetDtypeFacts();
  if (facts.ok()) {
    for (const std::string& k : (*facts)->table->kv_choices) {
      auto dtype = models::ParseDtype(k);
      if (!dtype.ok()) continue;
      models::PrecisionChoice c = base;
      c.kv_cache = *dtype;
      if (accepted(c)) kv.push_back(k);
    }
  }
  return {{"weights", weights}, {"kv_cache", kv}};
}

// {"<pool's dotted path>": {"weights": [...], "kv_cache": [...]}} for each
// pool of the scenario ("deployment", or "pd.prefill" and "pd.decode").
Result<nlohmann::json> ScenarioChoices(const std::string& path,
                                       const std::vector<std::string>& sets) {
  CAPPLAN_ASSIGN_OR_RETURN(auto scenario, sim::LoadScenarioFile(path, sets));
  CAPPLAN_ASSIGN_OR_RETURN(models::ModelCard card, models::LoadModelCard(scenario->model));
  CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile profile,
                           hw::LoadHardwareProfile(scenario->hardware));
  nlohmann::json out = nlohmann::json::object();
  for (const sim::PoolSpec& pool : scenario->pools) {
    std::string dotted = pool.pointer.substr(pool.pointer.find_first_not_of('/'));
    for (char& ch : dotted) {
      if (ch == '/') ch = '.';
    }
    out[dotted] = PoolChoices(card, profile, pool.deployment);
  }
  return out;
}

char* Copy(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace
}  // namespace capplan

extern "C" {

// `path`: a scenario file in the module's file system, relative to /data
// (the embedded scenarios/ are there; the page writes others beside them).
// `sets_json`: a JSON array of "dotted.path=value" strings (--set). Returns
// {"summary": {...}} with the summary exactly as `--json` prints it (as text,
// so no number is re-rounded on the way), or {"error": "capplan: error: ...",
// "exit_code": N} with the CLI's message and exit code. Free with
// capplan_free.
EMSCRIPTEN_KEEPALIVE char* capplan_simulate(const char* path, const char* sets_json) {
  using capplan::Status;
  Status st;
  // The data root is "." (wasm/module/CMakeLists.txt); relative scenario
  // paths resolve beside the embedded data, as they do in the source tree.
  if (::chdir("/data") != 0) {
    return capplan::Copy(R"({"error":"capplan: error: no /data","exit_code":1})");
  }
  std::string summary;
  try {
    std::vector<std::string> sets;
    const auto parsed = nlohmann::json::parse(sets_json, nullptr, false);
    if (!parsed.is_array()) {
      st = Status::Usage("overrides must be a JSON array of \"path=value\" strings");
    } else {
      for (const auto& s : parsed) sets.push_back(s.is_string() ? s.get<std::string>() : s.dump());
      auto r = capplan::SimulateSummary(path, sets);
      if (r.ok()) {
        summary = capplan::DumpJson(*r);
      } else {
        st = r.status();
      }
    }
  } catch (const std::bad_alloc&) {
    st = Status::Internal("out of memory (an input asks for more than this machine has)");
  } catch (const std::exception& e) {
    st = Status::Internal(std::string("internal error: ") + e.what());
  }
  if (st.ok()) return capplan::Copy("{\"summary\":" + summary + "}");
  const nlohmann::json err = {{"error", "capplan: error: " + capplan::OneLine(st.message())},
                              {"exit_code", st.ExitCode()}};
  return capplan::Copy(err.dump());
}

// The formats each pool's pickers offer (ScenarioChoices) for the scenario
// at `path` with `sets_json` applied: {"choices": {...}}, or {"error": ...}
// as capplan_simulate gives it. Free with capplan_free.
EMSCRIPTEN_KEEPALIVE char* capplan_choices(const char* path, const char* sets_json) {
  using capplan::Status;
  Status st;
  if (::chdir("/data") != 0) {
    return capplan::Copy(R"({"error":"capplan: error: no /data","exit_code":1})");
  }
  std::string text;
  try {
    std::vector<std::string> sets;
    const auto parsed = nlohmann::json::parse(sets_json, nullptr, false);
    if (parsed.is_array()) {
      for (const auto& s : parsed) sets.push_back(s.is_string() ? s.get<std::string>() : s.dump());
    }
    auto r = capplan::ScenarioChoices(path, sets);
    if (r.ok()) {
      text = r->dump();
    } else {
      st = r.status();
    }
  } catch (const std::exception& e) {
    st = Status::Internal(std::string("internal error: ") + e.what());
  }
  if (st.ok()) return capplan::Copy("{\"choices\":" + text + "}");
  const nlohmann::json err = {{"error", "capplan: error: " + capplan::OneLine(st.message())},
                              {"exit_code", st.ExitCode()}};
  return capplan::Copy(err.dump());
}

EMSCRIPTEN_KEEPALIVE void capplan_free(char* p) { std::free(p); }

}  // extern "C"
