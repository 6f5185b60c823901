#include "cli/commands.h"

#include <ostream>

#include "report/formats.h"
#include "report/interactive.h"
#include "report/report.h"

namespace capplan::cli {
namespace {

namespace po = boost::program_options;

Status RunReport(const std::vector<std::string>& args, CommandContext& ctx) {
  std::vector<std::string> inputs;
  std::string out, format, title, pareto_tokens = "output";
  std::vector<std::string> baselines, scenario_files;
  std::string wasm;
  double usd = 0;
  po::options_description desc(
      "capplan report RESULT... --out FILE [options]\n"
      "  RESULT: a summary JSON, a 'capplan simulate --out' directory, a\n"
      "  'capplan sweep --out' directory, or a 'capplan search --out' directory\n"
      "  (its winner: the best configuration at the largest rate meeting the SLOs)\n"
      "options");
  desc.add_options()("help,h", "show this help")(
      "out", po::value(&out),
      "report file to write (required; written atomically); '-' writes to stdout")(
      "format", po::value(&format),
      "html, md, csv or brief (default: from the --out extension, .txt = brief, else html)")(
      "baseline", po::value(&baselines),
      "configuration the cost ratios compare against (repeatable: each configuration is "
      "compared with the nearest baseline given before it in RESULT order; default: the "
      "first configuration)")(
      "usd-per-gpu-hour", po::value(&usd),
      "GPU price for the cost figures (default: each summary's usd_per_gpu_hour)")(
      "pareto-tokens", po::value(&pareto_tokens),
      "tokens the Pareto chart's y axis counts: output or total (input+output)")(
      "title", po::value(&title), "report title")(
      "interactive",
      "write the what-if page instead: the results' scenarios with controls that re-simulate "
      "in the browser (one HTML file, the simulator inside as WebAssembly)")(
      "scenario", po::value(&scenario_files),
      "with --interactive: a scenario file for the page (repeatable; besides the results' own)")(
      "wasm", po::value(&wasm),
      "with --interactive: the simulator module to embed (default: the one this build "
      "made, " CAPPLAN_WASM_MODULE ")")("result", po::value(&inputs), "results (positional)");
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
  if (out.empty()) {
    return Status::Usage("report: --out FILE is required (e.g. --out report.html)");
  }
  if (vm.count("interactive")) {
    if (out == "-") return Status::Usage("report --interactive: --out FILE.html is required");
    report::InteractiveOptions io;
    if (!title.empty()) io.title = title;
    io.scenario_files = scenario_files;
    io.module_js = wasm.empty() ? CAPPLAN_WASM_MODULE : wasm;
    CAPPLAN_RETURN_IF_ERROR(report::WriteInteractive(inputs, out, io));
    *ctx.out << "report: wrote " << out << " (what-if page)\n";
    return Status::Ok();
  }
  if (!scenario_files.empty() || !wasm.empty()) {
    return Status::Usage("report: --scenario and --wasm belong to --interactive");
  }
  if (inputs.empty()) {
    return Status::Usage(
        "report: no results given; pass summary JSON files or 'capplan "
        "simulate/sweep --out' directories before --out");
  }
  report::ReportOptions options;
  options.baselines = baselines;
  options.pareto_tokens = pareto_tokens;
  if (!title.empty()) options.title = title;
  if (vm.count("usd-per-gpu-hour")) {
    if (!(usd > 0)) return Status::Usage("report: --usd-per-gpu-hour must be > 0");
    options.usd_per_gpu_hour = usd;
  }
  if (out == "-") {
    CAPPLAN_ASSIGN_OR_RETURN(std::string fmt, report::ChooseFormat(format, ""));
    CAPPLAN_ASSIGN_OR_RETURN(std::string text, report::LoadAndRender(inputs, fmt, options));
    *ctx.out << text;
    return Status::Ok();
  }
  CAPPLAN_RETURN_IF_ERROR(report::WriteReport(inputs, out, format, options));
  *ctx.out << "report: wrote " << out << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterReportCommands(CommandTable* table) {
  table->Add(Command{"report", "turn simulation results into a planning report (html, md, csv)",
                     RunReport});
}

}  // namespace capplan::cli
