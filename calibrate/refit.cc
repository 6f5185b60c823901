#include "calibrate/refit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>

#include "calibrate/fit_derived.h"
#include "calibrate/sig_digits.h"
#include "common/json_util.h"
#include "hw/profile.h"

namespace capplan::calibrate {

namespace {

// "fitted by capplan calibrate from A (gpu ...), B (...)": names every file
// a fitted record came from.
// "fitted by capplan calibrate from ..." naming only the files whose
// records are in `records` (indices into set.records).
std::string FromRecords(const std::vector<int>& records, const MeasurementSet& set,
                        const std::string& prefix) {
  std::set<int> files;
  for (int r : records) {
    if (r >= 0) files.insert(set.records[r].source);
  }
  std::string s;
  for (int f : files) s += (s.empty() ? "" : "; ") + set.sources[f].Describe();
  return prefix + "fitted by capplan calibrate from " + s;
}

std::vector<int> RecordsOf(const std::vector<FitPoint>& points) {
  std::vector<int> r;
  for (const FitPoint& p : points) r.push_back(p.record);
  return r;
}

std::string SourcesLine(const CalibrationFit& fit, const MeasurementSet& set) {
  std::string s;
  for (size_t i = 0; i < set.sources.size(); ++i) {
    if (i < fit.used_per_source.size() && fit.used_per_source[i] == 0) continue;
    s += (s.empty() ? "" : "; ") + set.sources[i].Describe();
  }
  return s;
}

bool AnyDryRun(const MeasurementSet& set) {
  for (const auto& s : set.sources) {
    if (s.dry_run) return true;
  }
  return false;
}

std::string Prefix(const MeasurementSet& set) {
  return AnyDryRun(set) ? "dry-run CPU timings, not a GPU: " : "";
}

// The cross-GPU sentence of every GPU model whose records entered the
// class ("" when all came from the profile's own GPU).
std::string CrossGpu(const CalibrationFit& fit, const std::vector<FitPoint>& points) {
  std::set<std::string> models;
  for (const FitPoint& p : points) {
    if (fit.cross_gpu.count(p.gpu_model)) models.insert(p.gpu_model);
  }
  std::string s;
  for (const std::string& m : models) s += "; " + fit.cross_gpu.at(m);
  return s;
}

// collectives.all_reduce.<key>: the fitted fraction of this GPU's NVLink,
// with the records and `what` (how they were read) as its source.
void SetAllReduceBandwidth(const char* key, const CollectiveFit& f, const MeasurementSet& set,
                           const std::string& what, nlohmann::json* doc) {
  const double nvlink = (*doc)["collectives"]["nvlink_bytes_per_s_per_direction"]["value"];
  (*doc)["collectives"]["all_reduce"][key] = {
      {"value", RoundFitted(f.fraction * nvlink)},
      {"provenance",
       {{"kind", "fitted"},
        {"source", FromRecords(f.records, set, Prefix(set)) + "; " + SigDigits(f.fraction, 4) +
                       " of this GPU's NVLink per direction, the median over " +
                       std::to_string(f.points) + what}}}};
}

// Where a kernel table's records were measured, one entry per engine
// release and GPU, in a fixed order.
nlohmann::json MeasuredAtOf(const ClassFit& cf, const MeasurementSet& set) {
  std::set<std::tuple<std::string, std::string, std::string>> at;
  for (const FitPoint& p : cf.points) {
    if (p.record < 0) continue;
    const MeasurementSource& s = set.sources[set.records[p.record].source];
    at.insert({s.engine, s.engine_version, s.gpu_model});
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [engine, version, gpu] : at) {
    nlohmann::json m = {{"gpu", gpu}};
    if (!engine.empty()) m["engine"] = engine, m["engine_version"] = version;
    out.push_back(m);
  }
  return out;
}

// (GPU model, AIC file key) of every public AIC file a table's records came
// from: "calibrate/measurements/public/aic-h200-vllm-torch-bf16-gemm.json"
// -> ("H200", "vllm-torch-bf16-gemm").
std::vector<std::pair<std::string, std::string>> AicFilesOf(const ClassFit& cf,
                                                            const MeasurementSet& set) {
  std::set<std::pair<std::string, std::string>> files;
  for (const FitPoint& p : cf.points) {
    if (p.record < 0) continue;
    std::string name = set.sources[set.records[p.record].source].path;
    name = name.substr(name.find_last_of('/') + 1);
    const size_t dash = name.find('-', 4);
    if (name.rfind("aic-", 0) != 0 || dash == std::string::npos || name.size() < 5 + dash) {
      continue;
    }
    std::string gpu = name.substr(4, dash - 4);
    for (char& c : gpu) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    files.insert({gpu, name.substr(dash + 1, name.size() - dash - 1 - 5)});  // less ".json"
  }
  return {files.begin(), files.end()};
}

void WriteMeasuredAt(const ClassFit& cf, const MeasurementSet& set, const RefitOptions& options,
                     nlohmann::json* table) {
  if (!cf.compute.fitted && !cf.memory.fitted) return;
  nlohmann::json at = MeasuredAtOf(cf, set);
  if (at.empty()) return;
  bool engines = true;
  for (const auto& m : at) engines = engines && m.contains("engine");
  (*table)["measured_at"] = at;
  if (options.drift == nullptr || !engines) return;
  const hw::VersionDrift d = TableVersionDrift(*options.drift, AicFilesOf(cf, set));
  (*table)["version_drift"] = {{"value", d.value}, {"source", d.source}};
}

// The fitted curves of one class or kernel table into its profile entry
// `eff` (its "compute" and "memory" objects), with provenance and fit error.
void WriteFit(const ClassFit& cf, const CalibrationFit& fit, const MeasurementSet& set,
              nlohmann::json* eff) {
  for (const auto* c : {&cf.compute, &cf.memory}) {
    if (!c->fitted) continue;
    const bool memory = c == &cf.memory;
    nlohmann::json& j = (*eff)[memory ? "memory" : "compute"];
    j["max"] = RoundFitted(c->max);
    j["half"] = RoundFitted(c->half);
    // Valid over every record of the class, not only those this term
    // bound: the roofline was fitted to all of them (a memory-bound record
    // constrains the compute curve too), and a narrower range would warn on
    // every small-M decode GEMM whose compute term never binds.
    double lo = 1e300, hi = 0;
    for (const FitPoint& p : cf.points) {
      const double x = memory ? p.bytes : p.x;
      if (memory ? p.bytes <= 0 : p.flops <= 0) continue;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    // Above the largest fitted shape the saturating curve is at its
    // plateau, the premise of the roofline, so the base's upper end
    // stays; below the smallest, the half-saturation is extrapolated and
    // the simulator warns (and widens its prediction intervals).
    const double base_hi = j["valid"][1].get<double>();
    j["valid"] = {RoundFitted(std::min(lo, c->lo)),
                  std::max(RoundFitted(std::max(hi, c->hi)), base_hi)};
    std::string src = FromRecords(RecordsOf(cf.points), set, Prefix(set)) + "; " +
                      std::to_string(c->points) + " records bound by this term";
    src += CrossGpu(fit, cf.points);
    if (!c->note.empty()) src += "; " + c->note;
    j["provenance"] = {{"kind", "fitted"}, {"source", src}};
    // LOO and the held-out-source error are over the whole table (both
    // terms predict each point together).
    j["fit"] = {
        {"points", c->points},
        {"loo_median_rel_err", cf.loo_rel_err.empty() ? -1.0 : RoundFitted(cf.loo_median)},
        {"loo_p90_rel_err", cf.loo_rel_err.empty() ? -1.0 : RoundFitted(cf.loo_p90)},
        {"held_out_source_median_rel_err",
         cf.held_out_median < 0 ? -1.0 : RoundFitted(cf.held_out_median)}};
  }
}

}  // namespace

Result<nlohmann::json> ApplyFit(const nlohmann::json& base_doc, const std::string& base_origin,
                                const CalibrationFit& fit, const MeasurementSet& set,
                                const RefitOptions& options) {
  nlohmann::json doc = base_doc;
  if (!options.name.empty()) doc["name"] = options.name;
  // The GPU the fitted records were measured on; the base's when nothing
  // was fitted (public records from other GPUs only).
  for (size_t i = 0; i < set.sources.size(); ++i) {
    // Public files name a GPU model, possibly another one of the same
    // generation (fit.h); only a file measured here names the device.
    if (i < fit.used_per_source.size() && fit.used_per_source[i] > 0 && !set.sources[i].is_public) {
      doc["gpu"] = set.sources[i].gpu;
      break;
    }
  }
  const std::string from =
      Prefix(set) + "fitted by capplan calibrate from " + SourcesLine(fit, set);
  for (const auto& [key, cf] : fit.classes) WriteFit(cf, fit, set, &doc["efficiency"][key]);
  for (const auto& [impl, cf] : fit.kernels) {
    WriteFit(cf, fit, set, &doc["kernels"][impl]);
    WriteMeasuredAt(cf, set, options, &doc["kernels"][impl]);
  }
  if (fit.all_reduce.fitted) {
    SetAllReduceBandwidth("bus_bandwidth_bytes_per_s", fit.all_reduce, set,
                          " ring records (" + fit.all_reduce.how + ")" +
                              (fit.cross_gpu.empty() ? ""
                                                     : "; the fraction, not the rate, carries "
                                                       "over between SM90 GPUs"),
                          &doc);
  }
  if (fit.all_reduce_nvls.fitted) {
    SetAllReduceBandwidth("nvls_bus_bandwidth_bytes_per_s", fit.all_reduce_nvls, set,
                          " NVLS records from " + std::to_string(kNvlsFromGpus) + " GPUs on (" +
                              fit.all_reduce_nvls.how + "); one value for every GPU count from " +
                              std::to_string(kNvlsFromGpus) +
                              " on, so each count's own figure lies within the spread listed "
                              "here",
                          &doc);
  }
  const OverheadFit& o = fit.overheads;
  auto set_param = [&](const char* key, double v, const std::string& what) {
    doc["overheads"][key] = {{"value", v},
                             {"provenance", {{"kind", "fitted"}, {"source", from + "; " + what}}}};
  };
  if (o.kernel_launch) {
    set_param("kernel_launch_s", o.kernel_launch_s,
              "median of " + std::to_string(o.kernel_launch_points) + " kernel_launch records");
  }
  if (o.graph) {
    const std::string what = "least squares over " + std::to_string(o.graph_points) +
                             " graph_launch records (t = launch + nodes * node)";
    set_param("graph_launch_s", o.graph_launch_s, what);
    set_param("graph_node_s", o.graph_node_s, what);
  }
  auto parsed = hw::ParseHardwareProfile(doc, base_origin + " (refitted)");
  if (!parsed.ok()) {
    return Status::Internal("calibrate produced a profile that does not load: " +
                            parsed.status().message());
  }
  return doc;
}

namespace {

// The report's two rows (compute, memory) of one class or kernel table.
void CurveRows(const std::string& key, const ClassFit& cf, const hw::OpEfficiency& b,
               std::ostringstream* out) {
  std::ostringstream& os = *out;
  for (const auto* c : {&cf.compute, &cf.memory}) {
    const bool memory = c == &cf.memory;
    const hw::EfficiencyCurve& bc = memory ? b.memory : b.compute;
    os << "| " << key << " | " << (memory ? "memory" : "compute") << " | " << c->points << " | ";
    if (c->fitted) {
      os << SigDigits(c->max, 4) << " (" << SigDigits(bc.max, 4) << ") | " << SigDigits(c->half, 4)
         << " (" << SigDigits(bc.half, 4) << ") | " << bc.x << " in [" << SigDigits(c->lo, 4)
         << ", " << SigDigits(c->hi, 4) << "] | ";
    } else {
      os << "kept " << SigDigits(bc.max, 4) << " | kept " << SigDigits(bc.half, 4) << " | - | ";
    }
    if (cf.loo_rel_err.empty()) {
      os << "- | - | ";
    } else {
      os << SigDigits(100 * cf.loo_median, 4) << "% | " << SigDigits(100 * cf.loo_p90, 4) << "% | ";
    }
    os << (cf.held_out_median < 0 ? "-" : SigDigits(100 * cf.held_out_median, 4) + "%") << " | "
       << c->note << " |\n";
  }
}

// Leave-one-source-out, per table and source: the in-sample error of the
// source's records next to their error when the fit never saw the source.
void HoldoutTable(const CalibrationFit& fit, const MeasurementSet& set,
                  std::ostringstream* out) {
  std::ostringstream& os = *out;
  os << "\nLeave-one-source-out: each source's records predicted by the fit of every other "
        "source's (by the base curves when no other source fits that table). A change that "
        "lowers the in-sample column but raises the held-out one is a regression.\n\n"
        "| class or kernel | source | records | in-sample median | held-out median | held out "
        "by |\n|---|---|---|---|---|---|\n";
  auto rows = [&](const std::string& key, const ClassFit& cf) {
    for (const SourceHoldout& h : cf.holdouts) {
      const std::string src = h.source >= 0 ? set.sources[h.source].path : "(synthetic)";
      os << "| " << key << " | " << src << " | " << h.points << " | "
         << SigDigits(100 * h.in_sample_median, 4) << "% | " << SigDigits(100 * h.median_rel_err, 4)
         << "% | " << (h.refitted ? "refit without it" : "base curves") << " |\n";
    }
  };
  for (const auto& [key, cf] : fit.classes) rows(key, cf);
  for (const auto& [impl, cf] : fit.kernels) rows("kernel " + impl, cf);
}

// The fitted all-reduce bandwidths and launch overheads.
void CollectiveAndOverheadLines(const hw::HardwareProfile& base, const CalibrationFit& fit,
                                std::ostringstream* out) {
  std::ostringstream& os = *out;
  if (fit.all_reduce.fitted) {
    os << "\nAll-reduce bus bandwidth: " << SigDigits(fit.all_reduce.fraction, 4)
       << " x NVLink = " << SigDigits(fit.all_reduce.fraction * base.nvlink_bytes_per_s / 1e9, 4)
       << " GB/s (was " << SigDigits(base.all_reduce.bus_bandwidth_bytes_per_s / 1e9, 4)
       << "): " << fit.all_reduce.how << ".\n";
  }
  if (fit.all_reduce_nvls.fitted) {
    os << "\nAll-reduce NVLS bus bandwidth: " << SigDigits(fit.all_reduce_nvls.fraction, 4)
       << " x NVLink = "
       << SigDigits(fit.all_reduce_nvls.fraction * base.nvlink_bytes_per_s / 1e9, 4)
       << " GB/s: " << fit.all_reduce_nvls.how << ".\n";
  }
  const OverheadFit& o = fit.overheads;
  os << "\nOverheads: kernel_launch_s "
     << (o.kernel_launch ? SigDigits(o.kernel_launch_s, 4) + " (fitted)" : "kept")
     << ", graph_launch_s " << (o.graph ? SigDigits(o.graph_launch_s, 4) + " (fitted)" : "kept")
     << ", graph_node_s " << (o.graph ? SigDigits(o.graph_node_s, 4) + " (fitted)" : "kept") << ". "
     << o.note << "\n";
}

// What no record moved: every priced parameter of the base profile except
// the efficiency curves and the launch overheads, and the records left out
// with why.
void UnfittedLines(const hw::HardwareProfile& base, const CalibrationFit& fit,
                   const MeasurementSet& set, std::ostringstream* out) {
  std::ostringstream& os = *out;
  os << "\nProfile parameters the simulator reads that no kernel record fits (they keep "
        "their provenance; with --public the step cases fit the per-step ones, below):\n\n";
  for (const auto& [key, provenance] : base.provenance) {
    if (key.rfind("efficiency.", 0) == 0 || key == "overheads.kernel_launch_s" ||
        key == "overheads.graph_launch_s" || key == "overheads.graph_node_s" ||
        (fit.all_reduce.fitted && key == "collectives.all_reduce.bus_bandwidth_bytes_per_s")) {
      continue;
    }
    os << "- `" << key << "`\n";
  }
  if (!fit.unused.empty() || !fit.unused_steps.empty()) {
    os << "\nRecords not used (" << fit.unused.size() + fit.unused_steps.size() << "):\n\n";
    for (const auto& [i, why] : fit.unused) {
      const MeasuredKernel& k = set.records[i];
      os << "- " << set.sources[k.source].path << " /records/" << k.index << " (" << k.kernel
         << "): " << why << "\n";
    }
    for (const auto& [i, why] : fit.unused_steps) {
      const MeasuredStep& st = set.steps[i];
      os << "- " << set.sources[st.source].path << " /records/" << st.index << " (" << st.model
         << "): " << why << "\n";
    }
  }
}

}  // namespace

std::string FitReportMarkdown(const hw::HardwareProfile& base, const CalibrationFit& fit,
                              const MeasurementSet& set) {
  std::ostringstream os;
  os << "# Calibration fit\n\n";
  if (AnyDryRun(set)) {
    os << "**Dry run: these are CPU timings, not GPU times. Nothing here describes a GPU.**\n\n";
  }
  os << "Base profile: `" << base.path << "`. Measurements:\n\n";
  for (const auto& s : set.sources) os << "- " << s.Describe() << "\n";
  os << "\nModel per op (sim/cost_model.h): t = max(flops / (rate * eff_c(x)), bytes / (hbm * "
        "eff_m(bytes))), eff(x) = max * x / (x + half). LOO: each record predicted by a fit "
        "without it; relative time error |pred - t| / t.\n\n";
  os << "| class or kernel | term | records bound | max (base) | half (base) | range bound by "
        "this term | LOO median | LOO p90 | held-out source median | note |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, cf] : fit.classes) CurveRows(key, cf, base.efficiency.at(key), &os);
  for (const auto& [impl, cf] : fit.kernels) {
    CurveRows("kernel " + impl, cf, base.kernels.at(impl).efficiency, &os);
  }
  HoldoutTable(fit, set, &os);
  if (!fit.cross_gpu.empty()) {
    os << "\nCross-GPU records:\n\n";
    for (const auto& [gpu, how] : fit.cross_gpu) os << "- " << how << "\n";
  }
  CollectiveAndOverheadLines(base, fit, &os);
  UnfittedLines(base, fit, set, &os);
  return os.str();
}

Result<VersionDriftData> ParseVersionDrift(const std::string& text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat("capplan.aic_version_drift.v1"));
  VersionDriftData out;
  out.path = origin;
  CAPPLAN_RETURN_IF_ERROR(root.Get("url", &out.url, true));
  root.Touch("date");
  root.Touch("note");
  const nlohmann::json* rows = root.Raw("rows");
  if (rows == nullptr || !rows->is_array()) return root.Error("rows", "must be a list of rows");
  for (size_t i = 0; i < rows->size(); ++i) {
    JsonObject o((*rows)[i], origin, "/rows/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
    VersionDriftRow r;
    for (const auto& [key, field] :
         {std::pair{"gpu", &r.gpu}, std::pair{"file", &r.file}, std::pair{"engine", &r.engine},
          std::pair{"pinned_version", &r.pinned_version}, std::pair{"version", &r.version},
          std::pair{"rows_at_version", &r.rows_at_version}}) {
      CAPPLAN_RETURN_IF_ERROR(o.Get(key, field, true));
    }
    CAPPLAN_RETURN_IF_ERROR(o.Get("shapes", &r.shapes, true));
    CAPPLAN_RETURN_IF_ERROR(o.CheckRange("shapes", r.shapes, 0, 1e9));
    if (r.shapes > 0) {
      for (const auto& [key, field] :
           {std::pair{"median_ratio", &r.median_ratio}, std::pair{"p10_ratio", &r.p10_ratio},
            std::pair{"p90_ratio", &r.p90_ratio}}) {
        CAPPLAN_RETURN_IF_ERROR(o.Get(key, field, true));
        CAPPLAN_RETURN_IF_ERROR(o.CheckRange(key, *field, 1e-6, 1e6));
      }
      if (r.p10_ratio > r.median_ratio || r.median_ratio > r.p90_ratio) {
        return o.Error("median_ratio", "must lie in [p10_ratio, p90_ratio]");
      }
    }
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
    out.rows.push_back(std::move(r));
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return out;
}

namespace {

constexpr char kSameKernelSource[] = "same kernel source";

bool SameSourcePair(const VersionDriftRow& r) {
  return r.rows_at_version == kSameKernelSource && r.shapes > 0;
}

// How far one version pair moved the kernel's typical shape.
double PairDrift(const VersionDriftRow& r) { return std::abs(r.median_ratio - 1); }

}  // namespace

hw::VersionDrift TableVersionDrift(const VersionDriftData& data,
                                   const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string rule = "p90 of |median t(version) / t(pinned) - 1|";
  const std::string from = " in " + data.path + " (AIC tables at " + data.url + ")";
  const VersionDriftRow* worst = nullptr;
  std::vector<double> own, all;
  for (const VersionDriftRow& r : data.rows) {
    if (!SameSourcePair(r)) continue;
    all.push_back(PairDrift(r));
    if (std::find(files.begin(), files.end(), std::pair{r.gpu, r.file}) == files.end()) continue;
    own.push_back(PairDrift(r));
    if (worst == nullptr || PairDrift(r) > PairDrift(*worst)) worst = &r;
  }
  hw::VersionDrift d;
  if (worst != nullptr) {
    d.value = RoundFitted(Quantile(own, 0.9));
    d.source = rule + " over this table's " + std::to_string(own.size()) +
               " same-kernel-source version pairs" + from + "; the largest: " + worst->gpu + " " +
               worst->file + " " + worst->version + " vs " + worst->pinned_version + " (median " +
               SigDigits(worst->median_ratio, 4) + " over " + std::to_string(worst->shapes) +
               " shapes)";
    return d;
  }
  d.value = RoundFitted(Quantile(all, 0.9));
  d.source = "default: no same-kernel-source version pair of this table's records; the " + rule +
             " over all " + std::to_string(all.size()) + " same-kernel-source pairs" + from;
  return d;
}

}  // namespace capplan::calibrate
