#include "cli/calibrate_runs_command.h"

#include <algorithm>
#include <set>

#include "calibrate/run_fit.h"
#include "cli/parse_flags.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/calibration_overlay.h"

namespace capplan::cli {

namespace po = boost::program_options;

namespace {

po::options_description CalibrateRunsOptions() {
  po::options_description desc(
      "capplan calibrate --runs CASE.json... --out OVERLAY.json [--hold TERM]... [--rows LABEL]...\n"
      "Fits host time per step and per running request, a time scale per kernel\n"
      "implementation the runs exercise and the engine's KV capacity to your own runs\n"
      "(cases `capplan import-run` wrote), each term from its shipped prior; a term the runs\n"
      "cannot identify keeps its prior. Prints the leave-one-run-out error (one case of\n"
      "several rows: leave-one-concurrency-out) before and after, and refuses to write an\n"
      "overlay that makes it worse. Use the overlay with a scenario's\n"
      "\"calibration\": \"OVERLAY.json\" or simulate --calibration OVERLAY.json.\nOptions");
  desc.add_options()("help,h", "show this help")(
      "runs", po::value<std::vector<std::string>>()->multitoken(),
      "validation cases of your runs (capplan import-run --out)")(
      "out", po::value<std::string>(), "calibration overlay to write (atomically)")(
      "hold", po::value<std::vector<std::string>>(),
      "keep this term at its prior (host_s, cpu_schedule_per_request_s, "
      "kernel_scale.<implementation>, kv_capacity_scale); repeatable")(
      "rows", po::value<std::vector<std::string>>(),
      "fit only the rows with this label (repeatable); the other rows of the cases are "
      "predicted before and after, never fitted")(
      "json", "print the overlay (or the refused one) as JSON instead of the table");
  return desc;
}

}  // namespace

bool WantsCalibrateRuns(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--runs" || a.rfind("--runs=", 0) == 0;
  });
}

Status RunCalibrateRuns(const std::vector<std::string>& args, CommandContext& ctx) {
  const po::options_description desc = CalibrateRunsOptions();
  po::variables_map vm;
  CAPPLAN_ASSIGN_OR_RETURN(const bool go, ParseFlags("calibrate", args, desc, "runs", -1, &vm, ctx));
  if (!go) return Status::Ok();
  if (!vm.count("runs")) {
    return Status::Usage("calibrate --runs: give the case files, e.g. calibrate --runs run.json "
                         "--out overlay.json");
  }
  calibrate::RunFitOptions opt;
  const auto files = vm["runs"].as<std::vector<std::string>>();
  if (vm.count("hold")) opt.hold = vm["hold"].as<std::vector<std::string>>();
  std::set<std::string> rows;
  if (vm.count("rows")) {
    for (const std::string& l : vm["rows"].as<std::vector<std::string>>()) rows.insert(l);
    opt.fit_row = [&rows](const std::string&, const std::string& label) {
      return rows.count(label) > 0;
    };
  }
  opt.generated_by = "capplan calibrate --runs";
  for (const std::string& f : files) opt.generated_by += " " + f;
  for (const std::string& h : opt.hold) opt.generated_by += " --hold " + h;
  for (const std::string& l : rows) opt.generated_by += " --rows '" + l + "'";
  CAPPLAN_ASSIGN_OR_RETURN(calibrate::RunFitResult r, calibrate::FitRuns(files, opt));
  if (vm.count("json")) {
    nlohmann::json j = sim::CalibrationOverlayToJson(r.overlay);
    if (r.refused) j["refused"] = r.refusal;
    *ctx.out << DumpJson(j) << "\n";
  } else {
    *ctx.out << calibrate::FormatRunFit(r);
  }
  if (r.refused) {
    return Status::Invalid("calibrate --runs: no overlay written: " + r.refusal);
  }
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    CAPPLAN_RETURN_IF_ERROR(
        WriteFileAtomic(out, DumpJson(sim::CalibrationOverlayToJson(r.overlay)) + "\n"));
    if (!vm.count("json")) *ctx.out << "calibrate --runs: wrote " << out << "\n";
  }
  return Status::Ok();
}

Result<report::CalibrationSection> ReadCalibrationSection(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  CAPPLAN_ASSIGN_OR_RETURN(sim::CalibrationOverlay o, sim::ParseCalibrationOverlay(doc, path));
  report::CalibrationSection c;
  c.origin = path;
  c.engine = o.engine, c.engine_version = o.engine_version;
  c.hardware = o.hardware, c.model = o.model, c.created = o.created;
  c.runs = static_cast<int>(o.runs.size());
  for (const sim::OverlayTerm& t : o.terms) c.terms.push_back({t.name, t.prior, t.value, t.moved, t.why});
  for (const sim::OverlayRunRow& r : o.rows) {
    c.rows.push_back({r.label, r.metric, r.measured, r.before, r.after, r.held_out_after});
  }
  c.held_out_unit = o.held_out_unit;
  c.held_out_before_pct = o.held_out_before_pct;
  c.held_out_after_pct = o.held_out_after_pct;
  return c;
}

}  // namespace capplan::cli
