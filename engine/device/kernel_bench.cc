// capplan-kernel-bench: runs kernel measurement suites and writes a
// capplan.measurements.v1 JSON file (calibrate/MEASUREMENTS.md).
//
//   capplan-kernel-bench [--suite NAME]... [--dry-run] [--quick] [--smoke]
//       [--shape SUBSTR]... [--time-budget-s S] [--case-budget-s S]
//       [--repeats N] [--commit SHA] [--driver VER] --out FILE.json
//
// Without --dry-run it times the CUDA kernels on the current device (events,
// warm-up, L2 flush, median). With --dry-run it runs only the CPU references
// on small shapes and records their wall-clock time, in a file marked
// "dry_run": true with gpu "cpu", so the JSON shape is exercised anywhere.
// --smoke is the gate before a timed sweep: the smallest cases of every
// kernel and dtype, all checked against the CPU reference, 3 repeats, no L2
// flush. The cases of all suites run as one prioritised list (run_suites.h);
// a failed case is a record with check "error" and the file is rewritten
// after every case. Exit status 0 only when every check passed, 3 when some
// case failed or could not be measured, or the device stopped (the file
// still holds everything measured), else the usual codes.
#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "common/cli.h"
#include "hw/profile.h"
#include "kernels/harness/all_suites.h"
#include "kernels/harness/measurement.h"
#include "kernels/harness/napkin.h"
#include "kernels/harness/run_suites.h"
#include "kernels/harness/suite.h"

namespace po = boost::program_options;
using namespace capplan;           // NOLINT
using namespace capplan::kernels;  // NOLINT

namespace {

// Distinct from the usage (2) and error (1) codes: the file is complete but
// holds failures.
constexpr int kExitCasesFailed = 3;

// One line run.sh reads: the suites a timed sweep must leave out.
void PrintFailedSuites(const SuiteRun& run) {
  if (run.suites_failed.empty()) return;
  std::cout << "suites failed:";
  for (const auto& s : run.suites_failed) std::cout << " " << s;
  std::cout << "\n";
}

Status Main(const std::vector<std::string>& args, bool* clean) {
  po::options_description desc("capplan-kernel-bench options");
  desc.add_options()("help", "show this help")(
      "suite", po::value<std::vector<std::string>>()->composing(),
      "suite to run (repeatable; default all)")("list", "list suites and exit")(
      "dry-run", "CPU reference paths only (no GPU); times are CPU times")(
      "quick", "a few small shapes per suite")(
      "smoke", "smallest cases of every kernel and dtype, all checked, 3 repeats, no L2 flush")(
      "case-budget-s", po::value<double>()->default_value(90.0),
      "seconds one case may take, host preparation included")(
      "shape", po::value<std::vector<std::string>>()->composing(),
      "keep shapes whose label contains this substring (repeatable)")(
      "time-budget-s", po::value<double>()->default_value(0.0),
      "stop starting new shapes after this many seconds (0 = no limit)")(
      "repeats", po::value<int>()->default_value(20), "timed repeats per shape")(
      "commit", po::value<std::string>()->default_value(""), "git commit recorded in the file")(
      "driver", po::value<std::string>()->default_value(""), "driver version recorded in the file")(
      "ceilings", po::value<std::string>()->default_value(""),
      ("hardware profile (name or path) whose ceilings the closing table uses (default " +
       std::string(hw::kDefaultProfileName) + ")")
          .c_str())(
      "out", po::value<std::string>(), "output measurements JSON (required)");
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("capplan-kernel-bench", args, desc, nullptr, &vm));
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return Status::Ok();
  }
  if (vm.count("list")) {
    RegisterAllSuites();
    for (const auto& n : SuiteRegistry().Names()) {
      std::cout << n << "  " << SuiteRegistry().Help(n) << "\n";
    }
    return Status::Ok();
  }
  if (!vm.count("out")) return Status::Usage("--out FILE.json is required");
  SuiteOptions opt;
  opt.dry_run = vm.count("dry-run") > 0;
  opt.quick = vm.count("quick") > 0;
  if (vm.count("shape")) opt.shape_filter = vm["shape"].as<std::vector<std::string>>();
  opt.smoke = vm.count("smoke") > 0;
  opt.timing_repeats = vm["repeats"].as<int>();
  if (opt.smoke) {
    opt.timing_repeats = std::min(opt.timing_repeats, 3);
    opt.timing_warmup = 1;
    opt.flush_l2 = false;
  }
  opt.case_budget_s = vm["case-budget-s"].as<double>();
  if (!(opt.case_budget_s > 0)) return Status::Usage("--case-budget-s must be > 0");
  if (opt.timing_repeats < 1 || opt.timing_repeats > 1000) {
    return Status::Usage("--repeats must be in [1, 1000], got " +
                         std::to_string(opt.timing_repeats));
  }
  const double budget = vm["time-budget-s"].as<double>();
  if (budget < 0) return Status::Usage("--time-budget-s must be >= 0");
  if (budget > 0) {
    opt.deadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(budget * 1000));
  }
  std::vector<std::string> suites;
  if (vm.count("suite")) suites = vm["suite"].as<std::vector<std::string>>();
  const std::string out = vm["out"].as<std::string>();
  const std::string cpath = vm["ceilings"].as<std::string>();
  Result<Ceilings> ceil = cpath.empty() ? LoadDefaultCeilings() : LoadCeilings(cpath);
  CAPPLAN_RETURN_IF_ERROR(ceil.status());
  RunHooks hooks;
  hooks.checkpoint = [&out](const SuiteRun& r) {
    return WriteMeasurements(out, r.info, r.records);
  };
  CAPPLAN_ASSIGN_OR_RETURN(SuiteRun run, RunSuites(suites, opt, vm["commit"].as<std::string>(),
                                                   vm["driver"].as<std::string>(), hooks));
  CAPPLAN_RETURN_IF_ERROR(WriteMeasurements(out, run.info, run.records));
  for (const auto& s : run.suites_cut) {
    std::cerr << "time budget reached: suite " << s << " not run\n";
  }
  std::cout << FormatSuiteTable(run.records, *ceil, run.info.dry_run);
  std::cout << "wrote " << run.records.size() << " records to " << out << " (" << run.cases_run
            << " cases run, " << run.cases_failed << " failed, " << run.cases_cut
            << " not started)\n";
  PrintFailedSuites(run);
  if (!run.stopped.empty()) std::cout << "STOPPED " << run.stopped << "\n";
  *clean = run.Clean();
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool clean = true;
  const Status st = Main(args, &clean);
  if (!st.ok()) {
    std::cerr << "capplan-kernel-bench: " << st.message() << "\n";
    return st.ExitCode();
  }
  if (!clean) {
    std::cerr << "capplan-kernel-bench: some cases failed their check or could not be measured\n";
    return kExitCasesFailed;
  }
  return 0;
}
