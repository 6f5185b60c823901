#include "calibrate/public_profiles.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "calibrate/refit.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "models/engine_step_costs.h"

namespace capplan::calibrate {

namespace {

Result<std::vector<std::string>> JsonFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  if (ec) return Status::NotFound(dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty()) return Status::NotFound(dir + ": no *.json files");
  return out;
}

// Another GPU's records are normalized by the profile of that GPU; the H800
// (no profile of its own) by the H100's: same SMs and clocks, and its
// narrower NVLink enters no kernel record. Only GPUs of the target's
// architecture lend records: a fraction of an SM90 peak says little about
// an SM100 kernel, which runs other code (tcgen05, TMEM).
CeilingProfiles CeilingsFor(const std::string& target,
                            const std::map<std::string, hw::HardwareProfile>& bases) {
  CeilingProfiles c;
  const std::string& arch = bases.at(target).architecture;
  for (const auto& [name, p] : bases) {
    if (name == target || p.architecture != arch) continue;
    const std::string model = GpuModelOf(p.gpu);
    if (!model.empty()) c[model] = {&p, ""};
  }
  for (const auto& [name, p] : bases) {
    if (p.architecture == arch && GpuModelOf(p.gpu) == "H100" && !c.count("H800")) {
      c["H800"] = {&p,
                   "the H800 has the H100's SM count, clocks and HBM3; its narrower NVLink "
                   "enters no kernel record"};
    }
  }
  return c;
}

// The AIC version drift summary beside the public measurements
// (../aic-version-drift.json); none when absent (a test's own directory).
Result<std::optional<VersionDriftData>> ReadDrift(const std::string& measurements_dir) {
  std::filesystem::path dir = std::filesystem::path(measurements_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "public/" -> "public"
  const std::filesystem::path path = dir.parent_path() / "aic-version-drift.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<VersionDriftData>();
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path.string()));
  CAPPLAN_ASSIGN_OR_RETURN(
      VersionDriftData d,
      ParseVersionDrift(text, "calibrate/measurements/" + path.filename().string()));
  return std::optional<VersionDriftData>(std::move(d));
}

}  // namespace

Result<PublicProfiles> FitPublicProfiles(const std::string& base_dir,
                                         const std::string& measurements_dir,
                                         const std::string& cases_dir,
                                         const std::string& step_costs_base) {
  PublicProfiles out;
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<std::string> files, JsonFiles(measurements_dir));
  CAPPLAN_ASSIGN_OR_RETURN(out.set, ReadMeasurements(files, ReadOptions{}));
  // Provenance names files as the repository does, not as this checkout
  // happens to be laid out: the generated profiles are the same everywhere.
  for (MeasurementSource& s : out.set.sources) {
    s.path = "calibrate/measurements/public/" +
             std::filesystem::path(s.path).filename().string();
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<std::string> base_files, JsonFiles(base_dir));
  std::map<std::string, nlohmann::json> base_docs;
  for (const std::string& f : base_files) {
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(f));
    CAPPLAN_ASSIGN_OR_RETURN(hw::HardwareProfile p, hw::ParseHardwareProfile(doc, f));
    p.path = "calibrate/profiles/base/" + std::filesystem::path(f).filename().string();
    if (!p.has_cost_model) return Status::Invalid(f + ": /compute: a base needs the cost model");
    const std::string name = p.name;
    out.bases[name] = std::move(p);
    base_docs[name] = std::move(doc);
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::optional<VersionDriftData> drift, ReadDrift(measurements_dir));
  for (const auto& [name, base] : out.bases) {
    CAPPLAN_ASSIGN_OR_RETURN(CalibrationFit fit,
                             FitMeasurements(out.set, base, CeilingsFor(name, out.bases)));
    RefitOptions opt;
    opt.name = name;
    if (drift) opt.drift = &*drift;
    CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc,
                             ApplyFit(base_docs[name], base.path, fit, out.set, opt));
    doc["generated_by"] =
        "capplan calibrate --public (calibrate/README.md) from calibrate/profiles/base/" + name +
        ".json and calibrate/measurements/public/: edit those, not this file";
    out.fits[name] = std::move(fit);
    out.docs[name] = std::move(doc);
  }
  const std::string scratch =
      (std::filesystem::temp_directory_path() / ("capplan-step-fit-" + std::to_string(::getpid())))
          .string();
  CAPPLAN_ASSIGN_OR_RETURN(out.step_costs, ReadJsonFile(step_costs_base));
  CAPPLAN_RETURN_IF_ERROR(
      models::ParseEngineStepCosts(out.step_costs.dump(), step_costs_base).status());
  CAPPLAN_ASSIGN_OR_RETURN(out.step,
                           FitStepOverheads(out.docs, out.step_costs, cases_dir, scratch));
  CAPPLAN_RETURN_IF_ERROR(ApplyStepFit(out.step, &out.docs, &out.step_costs));
  out.step_costs["generated_by"] =
      "capplan calibrate --public (calibrate/README.md) from calibrate/step_costs_base.json and "
      "the public step cases (validation/cases): edit those, not this file";
  if (auto parsed =
          models::ParseEngineStepCosts(out.step_costs.dump(), "engine step costs (generated)");
      !parsed.ok()) {
    return Status::Internal("calibrate --public produced engine step costs that do not load: " +
                            parsed.status().message());
  }
  for (const auto& [name, doc] : out.docs) {
    auto parsed = hw::ParseHardwareProfile(doc, name + " (generated)");
    if (!parsed.ok()) {
      return Status::Internal("calibrate --public produced a profile that does not load: " +
                              parsed.status().message());
    }
  }
  return out;
}

std::string PublicProfilesMarkdown(const PublicProfiles& p) {
  std::string md =
      "# capplan calibrate --public\n\nEvery shipped profile regenerated from its base and the "
      "public measurements (calibrate/public_profiles.h).\n\n";
  for (const auto& [name, fit] : p.fits) {
    std::string one = FitReportMarkdown(p.bases.at(name), fit, p.set);
    one.replace(0, one.find('\n'), "## " + name);  // "# Calibration fit" -> "## NAME"
    md += one + "\n";
  }
  return md + StepFitMarkdown(p.step);
}

}  // namespace capplan::calibrate
