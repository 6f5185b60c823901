// `capplan report --interactive`: one self-contained what-if page. The page
// carries the scenarios behind a report's results and the simulator compiled
// to WebAssembly (wasm/, a file this library only reads, so report/ still
// does not depend on the simulator), and re-simulates in the browser as a
// planner changes concurrency or rate, KV dtype, weights, replicas, GPUs,
// TP, price and SLOs.
#ifndef CAPPLAN_REPORT_INTERACTIVE_H_
#define CAPPLAN_REPORT_INTERACTIVE_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "report/summary.h"

namespace capplan::report {

struct InteractiveOptions {
  std::string title = "capplan what-if";
  // Scenario files given with --scenario, besides those the results name.
  std::vector<std::string> scenario_files;
  // The module file wasm/ builds (capplan_sim.js, WebAssembly inside).
  std::string module_js;
};

// A scenario as the page holds it: the path the page (and the errors it
// shows) call it by, relative like the CLI's, and its text.
struct PageScenario {
  std::string path;
  std::string text;
};

// The scenarios behind `results` (scenarios/<name>.json in the data folder)
// followed by `files`, without repeats. A result whose scenario cannot be
// found is an error that says to pass it with --scenario.
Result<std::vector<PageScenario>> CollectScenarios(const std::vector<Summary>& results,
                                                   const std::vector<std::string>& files);

// The page for `results` (may be empty when scenarios are given).
Result<std::string> RenderInteractive(const std::vector<Summary>& results,
                                      const InteractiveOptions& options);

// Loads `inputs` (as `capplan report` does), renders, writes `out` atomically.
Status WriteInteractive(const std::vector<std::string>& inputs, const std::string& out,
                        const InteractiveOptions& options);

// The page's fixed stylesheet and script: report/web/, compiled in by
// report/web/embed.cmake.
const char* InteractiveCss();
const char* InteractiveScript();

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_INTERACTIVE_H_
