#include "calibrate/public_validation_peer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan::calibrate {

namespace {

Status ParsePredicted(JsonObject& row, const std::string& case_name, const std::string& label,
                      bool version_match,
                      std::set<std::tuple<std::string, std::string, std::string>>* seen,
                      PeerPredictions* out) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject predicted, row.Child("predicted", true));
  const auto& metrics = ValidationCaseMetrics();
  if (predicted.json().empty()) return row.Error("predicted", "must name at least one metric");
  for (const auto& [metric, value] : predicted.json().items()) {
    CAPPLAN_RETURN_IF_ERROR(predicted.CheckOneOf(metric, metric, metrics));
    double v = 0;
    CAPPLAN_RETURN_IF_ERROR(predicted.Get(metric, &v, true));
    if (!std::isfinite(v) || v <= 0) {
      return predicted.Error(metric, "must be a finite number > 0");
    }
    if (!seen->insert({case_name, label, metric}).second) {
      return predicted.Error(metric, "case '" + case_name + "' row '" + label + "' metric '" +
                                         metric + "' is predicted twice");
    }
    out->predictions.push_back(
        {case_name, label, metric, v, version_match, predicted.PathOf(metric)});
  }
  return predicted.Finish();
}

Status ParseRows(JsonObject& root, PeerPredictions* out) {
  const nlohmann::json* rows = root.Raw("predictions");
  if (rows == nullptr || !rows->is_array()) {
    return root.Error("predictions", "must be a list of predicted rows");
  }
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (size_t i = 0; i < rows->size(); ++i) {
    JsonObject o((*rows)[i], root.origin(), "/predictions/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
    std::string case_name, label;
    bool version_match = false;
    CAPPLAN_RETURN_IF_ERROR(o.Get("case", &case_name, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("row", &label, true));
    CAPPLAN_RETURN_IF_ERROR(o.Get("version_match", &version_match));
    // What the peer was asked, kept in the file for a reader; not compared.
    for (const char* k : {"engine_version", "peer_backend_version", "config"}) o.Touch(k);
    CAPPLAN_RETURN_IF_ERROR(ParsePredicted(o, case_name, label, version_match, &seen, out));
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  return Status::Ok();
}

Status ParseNotCovered(JsonObject& root, PeerPredictions* out) {
  const nlohmann::json* rows = root.Raw("not_covered");
  if (rows == nullptr) return Status::Ok();
  if (!rows->is_array()) return root.Error("not_covered", "must be a list of rows");
  for (size_t i = 0; i < rows->size(); ++i) {
    JsonObject o((*rows)[i], root.origin(), "/not_covered/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
    std::string s;
    for (const char* k : {"case", "row", "reason"}) CAPPLAN_RETURN_IF_ERROR(o.Get(k, &s, true));
    CAPPLAN_RETURN_IF_ERROR(o.Finish());
  }
  out->not_covered = static_cast<int>(rows->size());
  return Status::Ok();
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::string Pct(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%+.1f%%", v);
  return b;
}

std::string Num(double v) {
  char b[64];
  const double a = std::fabs(v);
  std::snprintf(b, sizeof(b), a >= 1000 ? "%.1f" : a >= 10 ? "%.2f" : "%.3f", v);
  return b;
}

}  // namespace

Result<PeerPredictions> ParsePeerPredictions(const std::string& text, const std::string& origin) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, origin));
  JsonObject root(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(root.CheckFormat(kPeerPredictionsFormat));
  PeerPredictions out;
  out.path = origin;
  CAPPLAN_RETURN_IF_ERROR(root.Get("peer", &out.peer, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("peer_version", &out.peer_version, true));
  if (out.peer.empty()) return root.Error("peer", "must name the peer planner");
  for (const char* k : {"generated_by", "mode"}) root.Touch(k);
  CAPPLAN_RETURN_IF_ERROR(ParseRows(root, &out));
  CAPPLAN_RETURN_IF_ERROR(ParseNotCovered(root, &out));
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  return out;
}

Result<PeerPredictions> LoadPeerPredictions(const std::string& path) {
  CAPPLAN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParsePeerPredictions(text, path);
}

Result<PeerValidation> ComparePeer(const PublicValidation& v, const PeerPredictions& p) {
  std::map<std::tuple<std::string, std::string, std::string>, const PeerPrediction*> by_key;
  for (const PeerPrediction& q : p.predictions) by_key[{q.case_name, q.row, q.metric}] = &q;
  PeerValidation out;
  out.path = p.path;
  out.peer = p.peer;
  out.peer_version = p.peer_version;
  out.not_covered = p.not_covered;
  std::map<std::string, std::vector<double>> capplan_err, peer_err, m_capplan, m_peer;
  for (const PublicValidationRow& r : v.rows) {
    auto it = by_key.find({r.case_name, r.label, r.metric});
    if (it == by_key.end()) continue;
    const PeerPrediction& q = *it->second;
    by_key.erase(it);
    if (!r.skipped.empty()) {
      ++out.capplan_skipped;
      continue;
    }
    PeerRow row{r.case_name,    r.case_class, r.label,     r.metric,
                r.measured,     r.error_pct,  q.predicted, (q.predicted / r.measured - 1) * 100,
                q.version_match};
    capplan_err[r.case_class].push_back(std::fabs(row.capplan_error_pct));
    peer_err[r.case_class].push_back(std::fabs(row.peer_error_pct));
    if (q.version_match) {
      m_capplan[r.case_class].push_back(std::fabs(row.capplan_error_pct));
      m_peer[r.case_class].push_back(std::fabs(row.peer_error_pct));
    }
    out.rows.push_back(std::move(row));
  }
  if (!by_key.empty()) {
    const PeerPrediction& q = *by_key.begin()->second;
    return Status::Usage(p.path + ": " + q.pointer + ": case '" + q.case_name + "' row '" + q.row +
                         "' metric '" + q.metric +
                         "' is not in the public validation; regenerate the peer file with the "
                         "command in its generated_by");
  }
  for (const auto& [cls, errs] : capplan_err) {
    PeerClassSummary& s = out.classes[cls];
    s.rows = static_cast<int>(errs.size());
    s.capplan_mape_pct = Mean(errs);
    s.peer_mape_pct = Mean(peer_err[cls]);
    s.matched_rows = static_cast<int>(m_capplan[cls].size());
    s.matched_capplan_mape_pct = Mean(m_capplan[cls]);
    s.matched_peer_mape_pct = Mean(m_peer[cls]);
  }
  return out;
}

std::string FormatPeerValidation(const PeerValidation& pv) {
  std::ostringstream os;
  os << "\npeer " << pv.peer << " " << pv.peer_version << " (" << pv.path << "): " << pv.rows.size()
     << " metric rows both predict; " << pv.not_covered << " case rows the peer cannot express, "
     << pv.capplan_skipped << " peer rows capplan skips\n";
  size_t wc = 4, wl = 3, wm = 6;
  for (const PeerRow& r : pv.rows) {
    wc = std::max(wc, r.case_name.size());
    wl = std::max(wl, r.label.size());
    wm = std::max(wm, r.metric.size());
  }
  char b[1024];
  auto line = [&](const std::string& c, const std::string& l, const std::string& m,
                  const std::string& meas, const std::string& ce, const std::string& pp,
                  const std::string& pe, const char* at) {
    std::snprintf(b, sizeof(b), "%-*s  %-*s  %-*s  %12s  %9s  %12s  %9s  %s\n",
                  static_cast<int>(wc), c.c_str(), static_cast<int>(wl), l.c_str(),
                  static_cast<int>(wm), m.c_str(), meas.c_str(), ce.c_str(), pp.c_str(), pe.c_str(),
                  at);
    os << b;
  };
  line("case", "row", "metric", "measured", "capplan", pv.peer, "peer err",
       "peer at row's version");
  for (const PeerRow& r : pv.rows) {
    line(r.case_name, r.label, r.metric, Num(r.measured), Pct(r.capplan_error_pct),
         Num(r.peer_predicted), Pct(r.peer_error_pct), r.version_match ? "yes" : "no");
  }
  for (const auto& [cls, s] : pv.classes) {
    std::snprintf(b, sizeof(b), "MAPE %-8s on the same %d rows: capplan %.1f%%, %s %.1f%%",
                  cls.c_str(), s.rows, s.capplan_mape_pct, pv.peer.c_str(), s.peer_mape_pct);
    os << b;
    if (s.matched_rows > 0) {
      std::snprintf(
          b, sizeof(b), " (at the row's engine version, %d rows: capplan %.1f%%, %s %.1f%%)",
          s.matched_rows, s.matched_capplan_mape_pct, pv.peer.c_str(), s.matched_peer_mape_pct);
      os << b;
    }
    os << "\n";
  }
  return os.str();
}

nlohmann::json PeerValidationToJson(const PeerValidation& pv) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PeerRow& r : pv.rows) {
    rows.push_back({{"case", r.case_name},
                    {"class", r.case_class},
                    {"row", r.label},
                    {"metric", r.metric},
                    {"measured", r.measured},
                    {"capplan_error_pct", r.capplan_error_pct},
                    {"peer_predicted", r.peer_predicted},
                    {"peer_error_pct", r.peer_error_pct},
                    {"version_match", r.version_match}});
  }
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [cls, s] : pv.classes) {
    classes[cls] = {{"rows", s.rows},
                    {"capplan_mape_pct", s.capplan_mape_pct},
                    {"peer_mape_pct", s.peer_mape_pct},
                    {"matched_rows", s.matched_rows},
                    {"matched_capplan_mape_pct", s.matched_capplan_mape_pct},
                    {"matched_peer_mape_pct", s.matched_peer_mape_pct}};
  }
  return {{"path", pv.path},
          {"peer", pv.peer},
          {"peer_version", pv.peer_version},
          {"rows", rows},
          {"classes", classes},
          {"capplan_skipped", pv.capplan_skipped},
          {"not_covered", pv.not_covered}};
}

}  // namespace capplan::calibrate
