// `capplan calibrate MEASUREMENTS.json... [--base PROFILE] --out PROFILE.json
//  [--report FILE.md] [--allow-dry-run]`,
// `capplan calibrate --public [--out-dir DIR] [--report FILE.md]`,
// `capplan validate ENGINE_RUN.json [--profile P] [--json]`,
// `capplan validate CASE.json... [--json]` and
// `capplan validate --public [--json] [--out DIR] [--cases DIR]`.
#include "cli/commands.h"

#include <filesystem>
#include <map>
#include <optional>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "calibrate/intervals.h"
#include "hw/profile.h"
#include "calibrate/public_profiles.h"
#include "calibrate/public_self_calibration.h"
#include "calibrate/public_validation.h"
#include "calibrate/public_validation_peer.h"
#include "calibrate/refit.h"
#include "calibrate/validate.h"
#include "cli/calibrate_runs_command.h"
#include "cli/parse_flags.h"
#include "common/atomic_file.h"
#include "common/data_path.h"
#include "common/json_util.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

// `capplan calibrate --public`: regenerates every shipped profile
// (calibrate/public_profiles.h).
Status RunCalibratePublic(const po::variables_map& vm, CommandContext& ctx) {
  if (vm.count("measurements") || vm.count("out") || vm.count("name") ||
      !vm["base"].defaulted() || vm.count("allow-dry-run")) {
    return Status::Usage(
        "calibrate: --public reads calibrate/profiles/base/ and calibrate/measurements/public/; "
        "give only --out-dir and --report");
  }
  const std::string dir =
      vm.count("out-dir") ? vm["out-dir"].as<std::string>() : DataPath("calibrate/profiles");
  CAPPLAN_ASSIGN_OR_RETURN(
      calibrate::PublicProfiles p,
      calibrate::FitPublicProfiles(
          DataPath("calibrate/profiles/base"), DataPath("calibrate/measurements/public"),
          DataPath("validation/cases"), DataPath("calibrate/step_costs_base.json")));
  // Everything is fitted before anything is written.
  CAPPLAN_RETURN_IF_ERROR(MakeDirs(dir));
  for (const auto& [name, doc] : p.docs) {
    const std::string out = (std::filesystem::path(dir) / (name + ".json")).string();
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(out, DumpJson(doc) + "\n"));
    const calibrate::CalibrationFit& fit = p.fits.at(name);
    *ctx.out << "calibrate --public: wrote " << out << "\n";
    for (const auto& [k, cf] : fit.classes) {
      char buf[256];
      std::snprintf(buf, sizeof(buf), "  %-18s %3zu records  LOO median %6.1f%%  p90 %6.1f%%\n",
                    k.c_str(), cf.points.size(), 100 * cf.loo_median, 100 * cf.loo_p90);
      *ctx.out << buf;
    }
  }
  // The engines' step costs sit beside the engine profiles; --out-dir keeps
  // everything it writes in one folder.
  const std::string costs_out =
      vm.count("out-dir") ? (std::filesystem::path(dir) / "engine_step_costs.json").string()
                          : DataPath("models/engine_step_costs.json");
  CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(costs_out, DumpJson(p.step_costs) + "\n"));
  *ctx.out << "calibrate --public: wrote " << costs_out << "\n";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "  per-step fixed costs: %zu step rows, mean error %.1f%% -> %.1f%%, LOO median "
                "%.1f%% p90 %.1f%%\n",
                p.step.rows.size(), 100 * p.step.mape_before, 100 * p.step.mape_after,
                100 * p.step.loo_median, 100 * p.step.loo_p90);
  *ctx.out << buf;
  if (vm.count("report")) {
    CAPPLAN_RETURN_IF_ERROR(
        WriteFileAtomic(vm["report"].as<std::string>(), calibrate::PublicProfilesMarkdown(p)));
  }
  return Status::Ok();
}

po::options_description CalibrateOptions() {
  po::options_description desc(
      "capplan calibrate MEASUREMENTS.json... --out PROFILE.json [options]\n"
      "capplan calibrate --public [--out-dir DIR] [--report FILE.md]\n"
      "Fits the hardware profile's efficiency curves and overheads to measurement files\n"
      "(calibrate/MEASUREMENTS.md, calibrate/README.md).\nOptions");
  desc.add_options()("help,h", "show this help")(
      "measurements", po::value<std::vector<std::string>>(), "measurement files")(
      "base", po::value<std::string>()->default_value(hw::kDefaultProfileName),
      "profile (name or path) supplying ceilings and every parameter not fitted")(
      "out", po::value<std::string>(), "profile JSON to write")(
      "name", po::value<std::string>(), "profile name to write (default: --out file stem)")(
      "report", po::value<std::string>(), "write the fit report (Markdown) to FILE")(
      "allow-dry-run",
      "fit dry-run (CPU) files anyway; every fitted parameter is marked 'dry-run CPU timings, "
      "not a GPU'")(
      "public",
      "regenerate every shipped profile (calibrate/profiles/NAME.json) from "
      "calibrate/profiles/base/ and calibrate/measurements/public/")(
      "out-dir", po::value<std::string>(), "with --public: write the profiles here instead");
  return desc;
}

// What a fit of measurement files did: records used and unused (grouped by
// reason), and each fitted table's leave-one-out errors.
void PrintFitSummary(const calibrate::CalibrationFit& fit, const calibrate::MeasurementSet& set,
                     const std::string& out, const std::string& base_path, CommandContext& ctx) {
  int curves = 0;
  for (const auto* tables : {&fit.classes, &fit.kernels}) {
    for (const auto& [k, cf] : *tables) curves += cf.compute.fitted + cf.memory.fitted;
  }
  const size_t records = set.records.size() + set.steps.size();
  const size_t unused = fit.unused.size() + fit.unused_steps.size();
  *ctx.out << "calibrate: " << records << " records from " << set.sources.size() << " file(s) -> "
           << curves << " curves in " << fit.classes.size() << " classes and " << fit.kernels.size()
           << " kernel tables fitted, " << unused
           << " records unused; wrote " << out << "\n";
  if (unused > 0) {
    // Why, grouped: public records a fit cannot use yet are reported, not errors.
    std::map<std::string, int> why;
    for (const auto& [i, w] : fit.unused) ++why[w];
    for (const auto& [i, w] : fit.unused_steps) ++why[w];
    for (const auto& [w, n] : why) *ctx.out << "  unused: " << n << " x " << w << "\n";
  }
  if (curves == 0 && !fit.overheads.kernel_launch && !fit.overheads.graph) {
    *ctx.err << "warning: nothing fitted; " << out << " is the base profile " << base_path
             << " renamed\n";
  }
  for (const auto* tables : {&fit.classes, &fit.kernels}) {
    for (const auto& [k, cf] : *tables) {
      char buf[320];
      std::snprintf(buf, sizeof(buf),
                    "  %-30s %4zu records  LOO median %6.1f%%  p90 %6.1f%%  held-out source "
                    "median %6.1f%%\n",
                    k.c_str(), cf.points.size(), 100 * cf.loo_median, 100 * cf.loo_p90,
                    100 * cf.held_out_median);
      *ctx.out << buf;
    }
  }
}

// `capplan calibrate MEASUREMENTS.json... --out PROFILE.json`: the base
// profile refitted to the files, written with its report.
Status RunCalibrateFiles(const po::variables_map& vm, CommandContext& ctx) {
  if (!vm.count("measurements")) {
    return Status::Usage(
        "calibrate: missing MEASUREMENTS.json; e.g. capplan calibrate "
        "calibrate/measurements/<gpu>-<date>-<commit>.json --out my.json");
  }
  if (!vm.count("out")) return Status::Usage("calibrate: missing --out PROFILE.json");
  const std::string out = vm["out"].as<std::string>();
  calibrate::ReadOptions ro;
  ro.allow_dry_run = vm.count("allow-dry-run") > 0;
  CAPPLAN_ASSIGN_OR_RETURN(
      calibrate::MeasurementSet set,
      calibrate::ReadMeasurements(vm["measurements"].as<std::vector<std::string>>(), ro));
  // A shipped name (any file under calibrate/profiles/, with "did you mean")
  // or a path; the profile remembers the file it came from.
  CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile base,
                           hw::LoadHardwareProfile(vm["base"].as<std::string>()));
  const std::string base_path = base.path;
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json base_doc, ReadJsonFile(base_path));
  CAPPLAN_ASSIGN_OR_RETURN(calibrate::CalibrationFit fit, calibrate::FitMeasurements(set, base));
  calibrate::RefitOptions opt;
  opt.name =
      vm.count("name") ? vm["name"].as<std::string>() : std::filesystem::path(out).stem().string();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc,
                           calibrate::ApplyFit(base_doc, base_path, fit, set, opt));
  CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(out, DumpJson(doc) + "\n"));
  if (vm.count("report")) {
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(vm["report"].as<std::string>(),
                                            calibrate::FitReportMarkdown(base, fit, set)));
  }
  PrintFitSummary(fit, set, out, base_path, ctx);
  if (set.sources.front().dry_run) {
    *ctx.err << "warning: fitted from dry-run CPU timings; this profile does not describe a GPU\n";
  }
  return Status::Ok();
}

Status RunCalibrate(const std::vector<std::string>& args, CommandContext& ctx) {
  if (WantsCalibrateRuns(args)) return RunCalibrateRuns(args, ctx);
  const po::options_description desc = CalibrateOptions();
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("calibrate", args, desc, "measurements", -1, &vm, ctx));
  if (!go) return Status::Ok();
  if (vm.count("public")) return RunCalibratePublic(vm, ctx);
  if (vm.count("out-dir")) return Status::Usage("calibrate: --out-dir goes with --public");
  return RunCalibrateFiles(vm, ctx);
}

// `capplan validate --public [--json] [--out DIR] [--cases DIR]`.
Status RunPublic(const po::variables_map& vm, CommandContext& ctx) {
  if (vm.count("run")) {
    return Status::Usage("validate: --public runs the public cases; give no ENGINE_RUN.json");
  }
  if (!vm["profile"].defaulted()) {
    return Status::Usage(
        "validate: --public cases name their own hardware profile; drop --profile");
  }
  const std::string dir =
      vm.count("cases") ? vm["cases"].as<std::string>() : DataPath("validation/cases");
  CAPPLAN_ASSIGN_OR_RETURN(calibrate::PublicValidation v, calibrate::RunPublicValidation(dir));
  if (vm.count("out")) {
    const std::filesystem::path out = vm["out"].as<std::string>();
    CAPPLAN_RETURN_IF_ERROR(MakeDirs(out.string()));
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic((out / "public-validation.csv").string(),
                                            calibrate::PublicValidationCsv(v)));
    CAPPLAN_RETURN_IF_ERROR(
        WriteFileAtomic((out / "public-validation-comparisons.csv").string(),
                        calibrate::PublicValidationComparisonsCsv(v)));
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic((out / "public-validation.md").string(),
                                            calibrate::PublicValidationMarkdown(v)));
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic((out / "public-validation.json").string(),
                                            DumpJson(calibrate::PublicValidationToJson(v)) + "\n"));
  }
  if (vm.count("intervals-out")) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json intervals, calibrate::PredictionIntervalsJson(v));
    CAPPLAN_RETURN_IF_ERROR(
        WriteFileAtomic(vm["intervals-out"].as<std::string>(), DumpJson(intervals) + "\n"));
  }
  std::optional<calibrate::PeerValidation> peer;
  if (vm.count("peer")) {
    CAPPLAN_ASSIGN_OR_RETURN(calibrate::PeerPredictions p,
                             calibrate::LoadPeerPredictions(vm["peer"].as<std::string>()));
    CAPPLAN_ASSIGN_OR_RETURN(peer, calibrate::ComparePeer(v, p));
  }
  calibrate::SelfCalibration self;
  if (vm.count("self-calibration")) {
    CAPPLAN_ASSIGN_OR_RETURN(self, calibrate::RunSelfCalibration(v.case_files));
  }
  if (vm.count("json")) {
    nlohmann::json j = calibrate::PublicValidationToJson(v);
    if (vm.count("self-calibration")) j["self_calibration"] = calibrate::SelfCalibrationToJson(self);
    if (peer) j["peer"] = calibrate::PeerValidationToJson(*peer);
    *ctx.out << DumpJson(j) << "\n";
  } else {
    *ctx.out << calibrate::FormatPublicValidation(v);
    if (peer) *ctx.out << calibrate::FormatPeerValidation(*peer);
    CAPPLAN_ASSIGN_OR_RETURN(std::string coverage, calibrate::PublicValidationCoverage(v));
    *ctx.out << coverage;
    if (vm.count("self-calibration")) *ctx.out << calibrate::FormatSelfCalibration(self);
  }
  return Status::Ok();
}

// `capplan validate CASE.json...`: the named validation cases (an imported
// run's among them, calibrate/runs/README.md), printed as --public prints.
Status RunCases(const std::vector<std::string>& files, const po::variables_map& vm,
                CommandContext& ctx) {
  if (!vm["profile"].defaulted()) {
    return Status::Usage("validate: a validation case names its own hardware profile; drop "
                         "--profile");
  }
  CAPPLAN_ASSIGN_OR_RETURN(calibrate::PublicValidation v, calibrate::RunValidationCases(files));
  if (vm.count("json")) {
    *ctx.out << DumpJson(calibrate::PublicValidationToJson(v)) << "\n";
  } else {
    *ctx.out << calibrate::FormatPublicValidation(v);
  }
  return Status::Ok();
}

Status RunValidate(const std::vector<std::string>& args, CommandContext& ctx) {
  po::options_description desc(
      "capplan validate ENGINE_RUN.json [options]\n"
      "capplan validate CASE.json... [--json]\n"
      "capplan validate --public [--json] [--out DIR] [--peer FILE]\n"
      "Replays an engine serve-bench run's batches through the simulator's step cost model\n"
      "and prints the per-iteration and tokens/s error; given validation case files (one\n"
      "`capplan import-run` writes, or any of validation/cases/), runs those; with\n"
      "--public, runs the public validation cases (validation/README.md); cases print\n"
      "measured vs predicted per case and metric with a MAPE per class, and each case's\n"
      "comparisons (measured vs predicted ratio of a metric between two rows).\nOptions");
  desc.add_options()("help,h", "show this help")("run", po::value<std::vector<std::string>>(),
                                                 "ENGINE_RUN file (capplan engine serve-bench), "
                                                 "or validation case files")(
      "profile", po::value<std::string>()->default_value(hw::kDefaultProfileName),
      "hardware profile (name or path)")("json", "print the result as JSON")(
      "public", "run the public validation cases instead of an engine run")(
      "cases", po::value<std::string>(),
      "with --public: folder of validation cases (default: validation/cases)")(
      "out", po::value<std::string>(),
      "with --public: also write DIR/public-validation.{csv,md,json} and "
      "DIR/public-validation-comparisons.csv (each atomically)")(
      "intervals-out", po::value<std::string>(),
      "with --public: write the prediction intervals the simulator reports "
      "(validation/intervals.json) from these residuals")(
      "peer", po::value<std::string>(),
      "with --public: a peer planner's predictions (capplan.peer_predictions.v1, "
      "validation/peer/) printed beside capplan's error, with both MAPEs on the same rows")(
      "self-calibration",
      "with --public: a second table, calibrate --runs on two rows of each serving deployment "
      "(lowest and highest concurrency) predicting its other rows, error before and after");
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go,
                           ParseFlags("validate", args, desc, "run", -1, &vm, ctx));
  if (!go) return Status::Ok();
  if (vm.count("public")) return RunPublic(vm, ctx);
  if (vm.count("out") || vm.count("cases") || vm.count("intervals-out") || vm.count("peer")) {
    return Status::Usage("validate: --out, --cases, --intervals-out and --peer go with --public");
  }
  if (!vm.count("run")) {
    return Status::Usage(
        "validate: missing ENGINE_RUN.json; write one with capplan engine "
        "serve-bench --out run.json");
  }
  const std::vector<std::string> files = vm["run"].as<std::vector<std::string>>();
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json run, ReadJsonFile(files.front()));
  if (run.is_object() && run.value("format", "") == "capplan.validation_case.v1") {
    return RunCases(files, vm, ctx);
  }
  if (files.size() > 1) {
    return Status::Usage("validate: one ENGINE_RUN.json at a time (or validation case files)");
  }
  const std::string& path = files.front();
  CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile profile,
                           hw::LoadHardwareProfile(vm["profile"].as<std::string>()));
  CAPPLAN_ASSIGN_OR_RETURN(calibrate::ReplayResult r,
                           calibrate::ReplayEngineRun(run, path, profile));
  if (vm.count("json")) {
    *ctx.out << DumpJson(calibrate::ReplayToJson(r, path, profile)) << "\n";
  } else {
    *ctx.out << calibrate::FormatReplay(r, path, profile);
  }
  for (const auto& w : r.warnings) *ctx.err << "warning: " << w << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterCalibrateCommands(CommandTable* table) {
  table->Add({"calibrate", "fit a hardware profile to kernel measurement files", RunCalibrate});
  table->Add({"validate",
              "replay an engine serve-bench run through the step cost model, or (--public) "
              "compare predictions with public measurements",
              RunValidate});
}

}  // namespace capplan::cli
