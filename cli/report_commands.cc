#include "cli/commands.h"

#include <ostream>
#include <string>
#include <vector>

#include "cli/calibrate_runs_command.h"
#include "report/formats.h"
#include "report/interactive.h"
#include "report/report.h"

namespace capplan::cli {
namespace {

namespace po = boost::program_options;

// What the command line of `capplan report` holds once parsed.
struct ReportArgs {
  std::vector<std::string> inputs;
  std::string out, format, title, pareto_tokens = "output";
  std::vector<std::string> baselines, scenario_files;
  std::string wasm, calibration;
  double usd = 0;
};

po::options_description ReportOptionsDescription(ReportArgs* a) {
  po::options_description desc(
      "capplan report RESULT... --out FILE [options]\n"
      "  RESULT: a summary JSON, a 'capplan simulate --out' directory, a\n"
      "  'capplan sweep --out' directory, or a 'capplan search --out' directory\n"
      "  (its winner: the best configuration at the largest rate meeting the SLOs)\n"
      "options");
  desc.add_options()("help,h", "show this help")(
      "out", po::value(&a->out),
      "report file to write (required; written atomically); '-' writes to stdout")(
      "format", po::value(&a->format),
      "html, md, csv, brief or energy (default: from the --out extension, .txt = brief, else "
      "html)")(
      "baseline", po::value(&a->baselines),
      "configuration the cost ratios compare against (repeatable: each configuration is "
      "compared with the nearest baseline given before it in RESULT order; default: the "
      "first configuration)")(
      "usd-per-gpu-hour", po::value(&a->usd),
      "GPU price for the cost figures (default: each summary's usd_per_gpu_hour)")(
      "pareto-tokens", po::value(&a->pareto_tokens),
      "tokens the Pareto chart's y axis counts: output or total (input+output)")(
      "title", po::value(&a->title), "report title")(
      "calibration", po::value(&a->calibration),
      "the calibration overlay the results ran with (capplan calibrate --runs --out): adds "
      "the section 'Calibrated on your runs'")(
      "interactive",
      "write the what-if page instead: the results' scenarios with controls that re-simulate "
      "in the browser (one HTML file, the simulator inside as WebAssembly)")(
      "scenario", po::value(&a->scenario_files),
      "with --interactive: a scenario file for the page (repeatable; besides the results' own)")(
      "wasm", po::value(&a->wasm),
      "with --interactive: the simulator module to embed (default: the one this build "
      "made, " CAPPLAN_WASM_MODULE ")")("result", po::value(&a->inputs), "results (positional)");
  return desc;
}

Status WriteWhatIfPage(const ReportArgs& a, CommandContext& ctx) {
  if (a.out == "-") return Status::Usage("report --interactive: --out FILE.html is required");
  report::InteractiveOptions io;
  if (!a.title.empty()) io.title = a.title;
  io.scenario_files = a.scenario_files;
  io.module_js = a.wasm.empty() ? CAPPLAN_WASM_MODULE : a.wasm;
  CAPPLAN_RETURN_IF_ERROR(report::WriteInteractive(a.inputs, a.out, io));
  *ctx.out << "report: wrote " << a.out << " (what-if page)\n";
  return Status::Ok();
}

Status WritePlanningReport(const ReportArgs& a, bool usd_given, CommandContext& ctx) {
  if (!a.scenario_files.empty() || !a.wasm.empty()) {
    return Status::Usage("report: --scenario and --wasm belong to --interactive");
  }
  if (a.inputs.empty()) {
    return Status::Usage(
        "report: no results given; pass summary JSON files or 'capplan "
        "simulate/sweep --out' directories before --out");
  }
  report::ReportOptions options;
  options.baselines = a.baselines;
  options.pareto_tokens = a.pareto_tokens;
  if (!a.title.empty()) options.title = a.title;
  if (!a.calibration.empty()) {
    CAPPLAN_ASSIGN_OR_RETURN(options.calibration, ReadCalibrationSection(a.calibration));
  }
  if (usd_given) {
    if (!(a.usd > 0)) return Status::Usage("report: --usd-per-gpu-hour must be > 0");
    options.usd_per_gpu_hour = a.usd;
  }
  if (a.out == "-") {
    CAPPLAN_ASSIGN_OR_RETURN(std::string fmt, report::ChooseFormat(a.format, ""));
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, report::LoadAndRender(a.inputs, fmt, options));
    *ctx.out << text;
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(report::WriteReport(a.inputs, a.out, a.format, options));
  *ctx.out << "report: wrote " << a.out << "\n";
  return Status::Ok();
}

Status RunReport(const std::vector<std::string>& args, CommandContext& ctx) {
  ReportArgs a;
  po::options_description desc = ReportOptionsDescription(&a);
  po::positional_options_description pos;
  pos.add("result", -1);
  po::variables_map vm;
  CAPPLAN_RETURN_IF_ERROR(ParseCommandLine("report", args, desc, &pos, &vm));
  if (vm.count("help")) {
    *ctx.out << desc << "\nformats:";
    for (const auto& n : report::ReportFormats().Names()) {
      *ctx.out << " " << n << " (" << report::ReportFormats().Help(n) << ")";
    }
    *ctx.out << "\n";
    return Status::Ok();
  }
  if (a.out.empty()) {
    return Status::Usage("report: --out FILE is required (e.g. --out report.html)");
  }
  if (vm.count("interactive")) return WriteWhatIfPage(a, ctx);
  return WritePlanningReport(a, vm.count("usd-per-gpu-hour") > 0, ctx);
}

}  // namespace

void RegisterReportCommands(CommandTable* table) {
  table->Add(Command{"report", "turn simulation results into a planning report (html, md, csv)",
                     RunReport});
}

}  // namespace capplan::cli
