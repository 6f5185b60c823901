#include "calibrate/public_self_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "calibrate/run_fit.h"
#include "calibrate/run_fit_internal.h"
#include "common/json_util.h"

namespace capplan::calibrate {
namespace {

constexpr size_t kMinGroupRows = 3;

// A deployment: the row's scenario without what a load sweep changes.
std::string DeploymentKey(const RowInfo& r) {
  nlohmann::json d = r.doc;
  for (const char* k : {"workload", "name", "description", "slo"}) d.erase(k);
  if (d.contains("deployment") && d["deployment"].is_object()) {
    d["deployment"].erase("max_running_requests");
  }
  return DumpJson(d);
}

std::string Fmt(const char* f, double v) {
  char b[48];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

// Rows of one group (indexes into `rows`), the two the fit sees first.
std::vector<size_t> FitOrder(const std::vector<RowInfo>& rows, std::vector<size_t> group) {
  std::stable_sort(group.begin(), group.end(), [&](size_t a, size_t b) {
    return rows[a].concurrency < rows[b].concurrency;
  });
  return group;
}

Status RunGroup(const std::vector<RowInfo>& rows, const std::vector<size_t>& group,
                SelfCalibration* out) {
  const std::vector<size_t> order = FitOrder(rows, group);
  const RowInfo& lo = rows[order.front()];
  const RowInfo& hi = rows[order.back()];
  std::set<std::string> fit = {lo.label, hi.label}, scope;
  for (size_t i : group) scope.insert(rows[i].label);
  RunFitOptions opt;
  const std::string case_name = lo.case_name;
  opt.fit_row = [&](const std::string& c, const std::string& l) {
    return c == case_name && fit.count(l) > 0;
  };
  opt.scope_row = [&](const std::string& c, const std::string& l) {
    return c == case_name && scope.count(l) > 0;
  };
  CAPPLAN_ASSIGN_OR_RETURN(RunFitResult r, FitRuns({lo.case_file}, opt));
  SelfCalibrationGroup g;
  g.case_name = case_name;
  g.group = rows[group.front()].label;
  if (group.size() > 1) g.group += " + " + std::to_string(group.size() - 1) + " more";
  g.fit_labels = {lo.label, hi.label};
  g.held_metrics = r.other_rows;
  g.before_pct = r.other_before_pct;
  g.after_pct = r.other_after_pct;
  for (const RunFitTerm& t : r.terms) {
    if (!t.term.moved) continue;
    char b[160];
    std::snprintf(b, sizeof(b), "%s %.3g -> %.3g", t.term.name.c_str(), t.term.prior, t.term.value);
    g.moved.push_back(b);
  }
  g.refused = r.refused;
  g.blame = r.blame;
  out->groups.push_back(std::move(g));
  return Status::Ok();
}

// The groups of one case: deployments of three rows or more; failing any,
// all its rows of its first row's engine and GPU.
std::vector<std::vector<size_t>> Groups(const std::vector<RowInfo>& rows,
                                        const std::vector<size_t>& of_case) {
  std::map<std::string, std::vector<size_t>> by;
  std::vector<std::string> order;
  for (size_t i : of_case) {
    const std::string k = DeploymentKey(rows[i]);
    if (!by.count(k)) order.push_back(k);
    by[k].push_back(i);
  }
  std::vector<std::vector<size_t>> out;
  for (const std::string& k : order) {
    if (by[k].size() >= kMinGroupRows) out.push_back(by[k]);
  }
  if (!out.empty() || of_case.size() < kMinGroupRows) return out;
  std::vector<size_t> same;
  for (size_t i : of_case) {
    const RowInfo& f = rows[of_case.front()];
    if (rows[i].engine == f.engine && rows[i].hardware == f.hardware) same.push_back(i);
  }
  if (same.size() >= kMinGroupRows) out.push_back(same);
  return out;
}

}  // namespace

Result<SelfCalibration> RunSelfCalibration(const std::vector<std::string>& case_files) {
  SelfCalibration s;
  for (const std::string& f : case_files) {
    CAPPLAN_ASSIGN_OR_RETURN(std::vector<RowInfo> rows, ReadRowInfo({f}));
    if (rows.empty() || rows.front().case_class != "serving") continue;
    std::vector<size_t> ran;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].skipped) ran.push_back(i);
    }
    SelfCalibrationCase c;
    c.case_name = rows.front().case_name;
    const size_t first = s.groups.size();
    for (const std::vector<size_t>& g : Groups(rows, ran)) {
      CAPPLAN_RETURN_IF_ERROR(RunGroup(rows, g, &s));
    }
    if (s.groups.size() == first) {
      c.note = ran.size() < kMinGroupRows ? "fewer than three rows that run"
                                          : "no three rows of one engine and GPU";
    }
    for (size_t i = first; i < s.groups.size(); ++i) {
      const SelfCalibrationGroup& g = s.groups[i];
      c.held_metrics += g.held_metrics;
      c.before_pct += g.before_pct * g.held_metrics;
      c.after_pct += g.after_pct * g.held_metrics;
      c.written_after_pct += (g.refused ? g.before_pct : g.after_pct) * g.held_metrics;
    }
    if (c.held_metrics > 0) {
      c.before_pct /= c.held_metrics, c.after_pct /= c.held_metrics;
      c.written_after_pct /= c.held_metrics;
    }
    s.cases.push_back(std::move(c));
  }
  return s;
}

SelfCalibrationCase Overall(const SelfCalibration& s) {
  SelfCalibrationCase all;
  all.case_name = "all";
  for (const SelfCalibrationCase& c : s.cases) {
    all.held_metrics += c.held_metrics;
    all.before_pct += c.before_pct * c.held_metrics;
    all.after_pct += c.after_pct * c.held_metrics;
    all.written_after_pct += c.written_after_pct * c.held_metrics;
  }
  if (all.held_metrics > 0) {
    all.before_pct /= all.held_metrics, all.after_pct /= all.held_metrics;
    all.written_after_pct /= all.held_metrics;
  }
  return all;
}

std::string FormatSelfCalibration(const SelfCalibration& s) {
  std::ostringstream os;
  os << "\nself-calibration (calibrate --runs on two rows of a deployment, the lowest and "
        "highest concurrency; error = mean |predicted / measured - 1| over its other rows)\n";
  char line[400];
  std::snprintf(line, sizeof(line), "%-36s %-34s %7s %8s %8s  %s\n", "case", "deployment rows",
                "metrics", "before", "after", "terms moved / verdict");
  os << line;
  for (const SelfCalibrationGroup& g : s.groups) {
    std::string moved;
    for (const std::string& m : g.moved) moved += (moved.empty() ? "" : "; ") + m;
    if (moved.empty()) moved = "none";
    if (g.refused) moved += "  [refused: " + (g.blame.empty() ? "no term to blame" : g.blame) + "]";
    std::snprintf(line, sizeof(line), "%-36.36s %-34.34s %7d %7.1f%% %7.1f%%  %s\n",
                  g.case_name.c_str(), g.group.c_str(), g.held_metrics, g.before_pct,
                  g.after_pct, moved.c_str());
    os << line;
  }
  for (const SelfCalibrationCase& c : s.cases) {
    if (!c.note.empty()) {
      os << "  " << c.case_name << ": not calibrated (" << c.note << ")\n";
      continue;
    }
    os << "  " << c.case_name << ": held-out rows " << Fmt("%.1f%%", c.before_pct) << " before, "
       << Fmt("%.1f%%", c.after_pct) << " after (" << Fmt("%.1f%%", c.written_after_pct)
       << " where refused fits keep their priors) over " << c.held_metrics << " metric(s)\n";
  }
  const SelfCalibrationCase all = Overall(s);
  int better = 0, worse = 0;
  for (const SelfCalibrationCase& c : s.cases) {
    if (c.held_metrics == 0) continue;
    if (c.written_after_pct < c.before_pct - 0.05) ++better;
    if (c.written_after_pct > c.before_pct + 0.05) ++worse;
  }
  os << "  all cases: held-out rows " << Fmt("%.1f%%", all.before_pct) << " before, "
     << Fmt("%.1f%%", all.after_pct) << " after (" << Fmt("%.1f%%", all.written_after_pct)
     << " where refused fits keep their priors) over " << all.held_metrics << " metric(s); "
     << better << " case(s) better, " << worse << " worse\n";
  return os.str();
}

nlohmann::json SelfCalibrationToJson(const SelfCalibration& s) {
  nlohmann::json groups = nlohmann::json::array(), cases = nlohmann::json::array();
  for (const SelfCalibrationGroup& g : s.groups) {
    groups.push_back({{"case", g.case_name},
                      {"group", g.group},
                      {"fit_rows", g.fit_labels},
                      {"held_out_metrics", g.held_metrics},
                      {"before_pct", g.before_pct},
                      {"after_pct", g.after_pct},
                      {"terms_moved", g.moved},
                      {"refused", g.refused},
                      {"blame", g.blame}});
  }
  for (const SelfCalibrationCase& c : s.cases) {
    nlohmann::json j = {{"case", c.case_name},
                        {"held_out_metrics", c.held_metrics},
                        {"before_pct", c.before_pct},
                        {"after_pct", c.after_pct},
                        {"written_after_pct", c.written_after_pct}};
    if (!c.note.empty()) j["note"] = c.note;
    cases.push_back(std::move(j));
  }
  const SelfCalibrationCase all = Overall(s);
  return {{"groups", groups},
          {"cases", cases},
          {"all",
           {{"held_out_metrics", all.held_metrics},
            {"before_pct", all.before_pct},
            {"after_pct", all.after_pct},
            {"written_after_pct", all.written_after_pct}}}};
}

}  // namespace capplan::calibrate
