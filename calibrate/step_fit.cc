#include "calibrate/step_fit.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "calibrate/fit.h"
#include "calibrate/public_validation.h"
#include "calibrate/sig_digits.h"
#include "common/atomic_file.h"
#include "common/json_util.h"
#include "models/engine_profile.h"
#include "models/engine_step_costs.h"

namespace capplan::calibrate {

namespace {

// A parameter lives in every hardware profile (`engine` null: `key` is a
// dotted profile path) or in one engine version's step costs
// (models/engine_step_costs.h).
struct ParamSpec {
  const char* engine;
  const char* version;
  const char* key;
  const char* why;
};

// The parameters the step cases identify (step_fit.h).
const ParamSpec kFitted[] = {
    {nullptr, nullptr, "overheads.graph_node_s",
     "paid per kernel of the replayed graph: separated from the per-step costs by models of 32, "
     "61 and 80 layers"},
    {nullptr, nullptr, "collectives.all_reduce.latency_s",
     "two all-reduces per layer under TP: S1 (TP8) and S2's TP4 rows"},
    {"sglang", "0.4.0", "host_s",
     "the per-step host cost of SGLang 0.4.5.post3 (S1: its overlap scheduler hides the CPU "
     "scheduling, so what stays is sampling and the step-to-step gap)"},
    {"vllm", "0.8.0", "cpu_schedule_s",
     "vLLM 0.8.0 does not overlap scheduling with the GPU (S2): the whole host time of a step, "
     "TP1 and TP4 on H100 and H200"},
    {"vllm", "0.19.0", "host_s",
     "the per-step host cost of vLLM 0.19.1 with asynchronous scheduling: the concurrency-1 ITL "
     "intercept at 1k-100k tokens (S3)"},
};

const ParamSpec kHeld[] = {
    {nullptr, nullptr, "overheads.kernel_launch_s",
     "eager launch per kernel: every public step case runs CUDA graphs"},
    {nullptr, nullptr, "overheads.graph_launch_s",
     "the replay's own fixed cost is paid with each engine's host cost on every step; no case "
     "separates the two, so the GPU side keeps its anchor and the engines carry the rest"},
    {"sglang", "0.4.0", "cpu_schedule_s",
     "hidden behind the GPU by SGLang's overlap scheduler (S1)"},
    {"vllm", "0.8.0", "host_s",
     "confounded with cpu_schedule_s when scheduling is not overlapped (S2); the fit gives vLLM "
     "0.8.0's whole host time to cpu_schedule_s"},
    {"vllm", "0.19.0", "cpu_schedule_s", "hidden by asynchronous scheduling (S3)"},
    {nullptr, nullptr, "cpu_schedule_per_request_s (every engine)",
     "hidden by overlapped scheduling (S1, S3) or confounded with the per-step CPU time in the "
     "one non-overlapped case (S2, always 8 requests)"},
    {nullptr, nullptr, "cpu_output_per_token_s (every engine)",
     "runs in a process of its own beside the engine in every step case's engine (S1-S3) and is "
     "far shorter than their steps at 1-64 requests, so no case shows it"},
};

std::string Display(const ParamSpec& p) {
  return p.engine == nullptr ? std::string(p.key)
                             : std::string(p.engine) + " " + p.version + " " + p.key;
}

nlohmann::json::json_pointer Pointer(const std::string& dotted) {
  std::string p = "/";
  for (char c : dotted) p += c == '.' ? '/' : c;
  return nlohmann::json::json_pointer(p + "/value");
}

using Docs = std::map<std::string, nlohmann::json>;

// Where an engine parameter sits in the step-costs document.
Result<nlohmann::json::json_pointer> EnginePointer(const nlohmann::json& costs,
                                                   const ParamSpec& p) {
  const nlohmann::json* entries = nullptr;
  if (costs.contains("engines") && costs["engines"].contains(p.engine)) {
    entries = &costs["engines"][p.engine];
  }
  for (size_t i = 0; entries != nullptr && i < entries->size(); ++i) {
    if ((*entries)[i].value("version", "") == p.version) {
      return nlohmann::json::json_pointer("/engines/" + std::string(p.engine) + "/" +
                                          std::to_string(i) + "/" + p.key + "/value");
    }
  }
  return Status::Invalid(std::string("calibrate/step_costs_base.json: /engines/") + p.engine +
                         ": needs an entry for version " + p.version + " (the step fit sets its " +
                         p.key + ")");
}

// The parameter's value in `docs` / `costs` (the first profile for the
// hardware ones: one value for every Hopper profile).
Result<double> ValueOf(const Docs& docs, const nlohmann::json& costs, const ParamSpec& p) {
  if (p.engine == nullptr) return docs.begin()->second.at(Pointer(p.key)).get<double>();
  CAPPLAN_ASSIGN_OR_RETURN(auto ptr, EnginePointer(costs, p));
  return costs.at(ptr).get<double>();
}

Status SetValue(Docs* docs, nlohmann::json* costs, const ParamSpec& p, double v) {
  if (p.engine == nullptr) {
    for (auto& [name, doc] : *docs) doc[Pointer(p.key)] = v;
    return Status::Ok();
  }
  CAPPLAN_ASSIGN_OR_RETURN(auto ptr, EnginePointer(*costs, p));
  (*costs)[ptr] = v;
  return Status::Ok();
}

// Gives every step case's deployment the engine step costs of `costs` (the
// entry its engine and version resolve to), unless the case sets its own.
Status UseStepCosts(const std::map<std::string, std::vector<models::EngineStepCosts>>& table,
                    nlohmann::json* scenario) {
  if (!scenario->contains("deployment") || !(*scenario)["deployment"].is_object()) {
    return Status::Ok();
  }
  nlohmann::json& d = (*scenario)["deployment"];
  if (d.contains("step_costs")) return Status::Ok();
  const std::string engine = d.value("engine", "sglang");
  CAPPLAN_ASSIGN_OR_RETURN(models::EngineResolution r,
                           models::ResolveEngine(engine, d.value("engine_version", "")));
  auto it = table.find(engine);
  if (it == table.end()) {
    return Status::Invalid("calibrate/step_costs_base.json: /engines: no entry for '" + engine +
                           "', which a step case runs");
  }
  const models::EngineStepCosts& c = models::PickStepCosts(it->second, r.version_triple);
  const std::vector<std::string>& keys = models::EngineStepCostKeys();
  for (size_t i = 0; i < keys.size(); ++i) d["step_costs"][keys[i]] = c.Cost(i);
  return Status::Ok();
}

// Prices every step row on `docs` and `costs` with the parameters set to
// `theta`.
Result<PublicValidation> Evaluate(Docs docs, nlohmann::json costs, const std::vector<double>& theta,
                                  const std::string& cases_dir, const std::string& scratch) {
  PublicValidationOptions opt;
  opt.only_class = "step";
  for (size_t j = 0; j < theta.size(); ++j) {
    CAPPLAN_RETURN_IF_ERROR(SetValue(&docs, &costs, kFitted[j], theta[j]));
  }
  for (auto& [name, doc] : docs) {
    const std::string file = scratch + "/" + name + ".json";
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(file, DumpJson(doc) + "\n"));
    opt.hardware_files[name] = file;
  }
  CAPPLAN_ASSIGN_OR_RETURN(
      auto table, models::ParseEngineStepCosts(costs.dump(), "calibrate/step_costs_base.json"));
  opt.adjust_scenario = [&table](nlohmann::json* scenario) {
    return UseStepCosts(table, scenario);
  };
  return RunPublicValidation(cases_dir, opt);
}

std::vector<double> Predictions(const PublicValidation& v) {
  std::vector<double> p;
  for (const auto& r : v.rows) {
    if (r.skipped.empty()) p.push_back(r.predicted);
  }
  return p;
}

// min |A x - b|^2 with x >= 0 over the rows in `use`: every subset of free
// parameters (the others at 0), the best solution that is non-negative.
std::vector<double> SolveNonNegative(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                     const std::vector<bool>& use) {
  const int n = static_cast<int>(a.cols());
  std::vector<int> rows;
  for (int i = 0; i < a.rows(); ++i) {
    if (use[i]) rows.push_back(i);
  }
  std::vector<double> best(n, 0.0);
  double best_cost = 1e300;
  for (int mask = 0; mask < (1 << n); ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < n; ++j) {
      if (mask & (1 << j)) cols.push_back(j);
    }
    Eigen::MatrixXd m(rows.size(), cols.size());
    Eigen::VectorXd rhs(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      rhs(i) = b(rows[i]);
      for (size_t j = 0; j < cols.size(); ++j) m(i, j) = a(rows[i], cols[j]);
    }
    Eigen::VectorXd x =
        cols.empty() ? Eigen::VectorXd() : Eigen::VectorXd(m.colPivHouseholderQr().solve(rhs));
    bool ok = true;
    for (int j = 0; j < x.size(); ++j) ok &= x(j) >= 0 && std::isfinite(x(j));
    if (!ok) continue;
    const double cost = cols.empty() ? rhs.squaredNorm() : (m * x - rhs).squaredNorm();
    if (cost < best_cost) {
      best_cost = cost;
      std::fill(best.begin(), best.end(), 0.0);
      for (size_t j = 0; j < cols.size(); ++j) best[cols[j]] = x(j);
    }
  }
  return best;
}

std::string Us(double s) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.3g us", s * 1e6);
  return b;
}

std::string Pct(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f%%", 100 * v);
  return b;
}

}  // namespace

namespace {

constexpr int kNumFitted = sizeof(kFitted) / sizeof(kFitted[0]);

// The step rows as a linear model in the parameters: predictions at theta0
// (p0), their sensitivities (jac) and the measured values.
struct Linearized {
  std::vector<double> theta0, p0, meas;
  Eigen::MatrixXd jac;
  PublicValidation v0;
  // pred_i(theta) = p0_i + jac_i (theta - theta0).
  double At(int i, const std::vector<double>& t) const {
    double p = p0[i];
    for (int j = 0; j < kNumFitted; ++j) p += jac(i, j) * (t[j] - theta0[j]);
    return p;
  }
};

Result<Linearized> Linearize(const Docs& profiles, const nlohmann::json& costs,
                             const std::string& cases_dir, const std::string& scratch) {
  Linearized l;
  // One value per parameter: the hardware ones for every Hopper profile,
  // fitted jointly on the H100 and H200 cases; the engine ones for every
  // GPU the engine runs on.
  for (const ParamSpec& p : kFitted) {
    CAPPLAN_ASSIGN_OR_RETURN(double v, ValueOf(profiles, costs, p));
    l.theta0.push_back(v);
  }
  CAPPLAN_ASSIGN_OR_RETURN(l.v0, Evaluate(profiles, costs, l.theta0, cases_dir, scratch));
  l.p0 = Predictions(l.v0);
  for (const auto& r : l.v0.rows) {
    if (r.skipped.empty()) l.meas.push_back(r.measured);
  }
  const int rows = static_cast<int>(l.p0.size());
  if (rows <= kNumFitted) {
    return Status::Invalid(cases_dir + ": " + std::to_string(rows) +
                           " step rows ran; the per-step fit needs more than " +
                           std::to_string(kNumFitted));
  }
  // Finite differences: the step is large enough to clear float noise and
  // small against a step; the prediction is linear in each parameter.
  constexpr double kDelta = 5e-5;
  l.jac.resize(rows, kNumFitted);
  for (int j = 0; j < kNumFitted; ++j) {
    std::vector<double> t = l.theta0;
    t[j] += kDelta;
    CAPPLAN_ASSIGN_OR_RETURN(PublicValidation vj, Evaluate(profiles, costs, t, cases_dir, scratch));
    const std::vector<double> pj = Predictions(vj);
    if (pj.size() != l.p0.size()) return Status::Internal("step rows changed between runs");
    for (int i = 0; i < rows; ++i) l.jac(i, j) = (pj[i] - l.p0[i]) / kDelta;
  }
  return l;
}

}  // namespace

Result<StepFit> FitStepOverheads(const Docs& profiles, const nlohmann::json& step_costs,
                                 const std::string& cases_dir, const std::string& scratch_dir) {
  CAPPLAN_RETURN_IF_ERROR(MakeDirs(scratch_dir));
  CAPPLAN_ASSIGN_OR_RETURN(Linearized l, Linearize(profiles, step_costs, cases_dir, scratch_dir));
  const int rows = static_cast<int>(l.p0.size());
  // Relative residuals pred_i / m_i - 1 as A theta - b.
  Eigen::MatrixXd a(rows, kNumFitted);
  Eigen::VectorXd b(rows);
  for (int i = 0; i < rows; ++i) {
    double j0 = 0;
    for (int j = 0; j < kNumFitted; ++j) {
      a(i, j) = l.jac(i, j) / l.meas[i];
      j0 += l.jac(i, j) * l.theta0[j];
    }
    b(i) = 1 - (l.p0[i] - j0) / l.meas[i];
  }
  const std::vector<bool> all(rows, true);
  std::vector<double> theta = SolveNonNegative(a, b, all);
  for (double& t : theta) t = RoundFitted(t);
  StepFit fit;
  for (int j = 0; j < kNumFitted; ++j) {
    fit.params.push_back(
        {Display(kFitted[j]), l.theta0[j], theta[j], theta[j] == 0, kFitted[j].why});
  }
  for (const ParamSpec& h : kHeld) fit.held.push_back(Display(h) + ": " + h.why);
  CAPPLAN_ASSIGN_OR_RETURN(PublicValidation v1,
                           Evaluate(profiles, step_costs, theta, cases_dir, scratch_dir));
  const std::vector<double> p1 = Predictions(v1);
  std::vector<double> loo_err;
  int i = 0;
  for (const auto& r : l.v0.rows) {
    if (!r.skipped.empty()) continue;
    std::vector<bool> use = all;
    use[i] = false;
    const double loo = l.At(i, SolveNonNegative(a, b, use));
    fit.rows.push_back({r.case_name, r.label, r.metric, r.measured, l.p0[i], p1[i], loo});
    fit.mape_before += std::fabs(l.p0[i] / r.measured - 1) / rows;
    fit.mape_after += std::fabs(p1[i] / r.measured - 1) / rows;
    loo_err.push_back(std::fabs(loo / r.measured - 1));
    ++i;
  }
  fit.loo_median = Quantile(loo_err, 0.5);
  fit.loo_p90 = Quantile(loo_err, 0.9);
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  return fit;
}

Status ApplyStepFit(const StepFit& fit, Docs* profiles, nlohmann::json* step_costs) {
  std::set<std::string> cases;
  for (const auto& r : fit.rows) cases.insert(r.case_name);
  std::string names;
  for (const auto& c : cases) names += (names.empty() ? "" : ", ") + c;
  for (size_t j = 0; j < fit.params.size(); ++j) {
    const StepFitParam& p = fit.params[j];
    const ParamSpec& spec = kFitted[j];
    std::ostringstream src;
    src << "fitted by capplan calibrate --public to the " << fit.rows.size()
        << " public step rows (" << names << "; validation/cases), "
        << (spec.engine == nullptr ? "jointly for every Hopper profile: "
                                   : "jointly with the hardware's per-step costs: ")
        << p.why << (p.at_zero ? "; the fit put it at its lower bound 0" : "")
        << ". Step rows' mean relative error " << Pct(fit.mape_before) << " -> "
        << Pct(fit.mape_after) << ", leave-one-out median " << Pct(fit.loo_median) << ", p90 "
        << Pct(fit.loo_p90) << " (capplan calibrate --public --report)";
    const nlohmann::json provenance = {{"kind", "fitted"}, {"source", src.str()}};
    CAPPLAN_RETURN_IF_ERROR(SetValue(profiles, step_costs, spec, p.value));
    if (spec.engine == nullptr) {
      for (auto& [name, doc] : *profiles) {
        doc[Pointer(spec.key).parent_pointer()]["provenance"] = provenance;
      }
    } else {
      CAPPLAN_ASSIGN_OR_RETURN(auto ptr, EnginePointer(*step_costs, spec));
      (*step_costs)[ptr.parent_pointer()]["provenance"] = provenance;
    }
  }
  return Status::Ok();
}

std::string StepFitMarkdown(const StepFit& fit) {
  std::ostringstream os;
  os << "## Per-step fixed costs (step cases)\n\n"
     << "Hardware parameters go to every Hopper profile; engine parameters to "
        "models/engine_step_costs.json. Fitted jointly on every profile's step cases "
        "(calibrate/step_fit.h): relative least "
        "squares, parameters >= 0, sensitivities by finite differences through the simulator's "
        "step pricer.\n\n| parameter | before | fitted | what identifies it |\n|---|---|---|---|\n";
  for (const StepFitParam& p : fit.params) {
    os << "| `" << p.path << "` | " << Us(p.base) << " | " << Us(p.value)
       << (p.at_zero ? " (bound)" : "") << " | " << p.why << " |\n";
  }
  os << "\nHeld at the base value (profile or calibrate/step_costs_base.json):\n\n";
  for (const auto& h : fit.held)
    os << "- `" << h.substr(0, h.find(':')) << "`" << h.substr(h.find(':')) << "\n";
  os << "\n| case | row | metric | measured | before | after | leave-one-out |\n"
        "|---|---|---|---|---|---|---|\n";
  char b[256], b4[32];
  for (const StepFitRow& r : fit.rows) {
    std::snprintf(b, sizeof(b), "| %.4g | %.4g (%+.1f%%) | %.4g (%+.1f%%) | %.4g (%+.1f%%) |\n",
                  r.measured, r.before, 100 * (r.before / r.measured - 1), r.after,
                  100 * (r.after / r.measured - 1), r.loo, 100 * (r.loo / r.measured - 1));
    os << "| " << r.case_name << " | " << r.label << " | " << r.metric << " " << b;
  }
  // Per case (engine and version): a bias the per-step costs cannot take up
  // (kernel physics, not a fixed cost) shows here.
  std::map<std::string, std::pair<double, int>> bias;
  for (const StepFitRow& r : fit.rows) {
    bias[r.case_name].first += r.after / r.measured - 1;
    ++bias[r.case_name].second;
  }
  os << "\nMean signed error after the fit, per case:";
  for (const auto& [name, sum] : bias) {
    std::snprintf(b4, sizeof(b4), " %+.1f%%", 100 * sum.first / sum.second);
    os << (name == bias.begin()->first ? " " : "; ") << name << b4;
  }
  os << ".\n";
  os << "\nMean relative error " << Pct(fit.mape_before) << " before, " << Pct(fit.mape_after)
     << " after; leave-one-out median " << Pct(fit.loo_median) << ", p90 " << Pct(fit.loo_p90)
     << ".\n";
  return os.str();
}

}  // namespace capplan::calibrate
