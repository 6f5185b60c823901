#include "sim/sweep/search_report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/sweep/pd_shape.h"
#include "sim/sweep/sweep_files.h"

namespace capplan::sim::sweep {

namespace {

nlohmann::json GridObject(const GridAssignment& grid) {
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [p, v] : grid) o[p] = v;
  return o;
}

std::string ValueText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// The last `segments` dotted segments of a path: "pd.decode.weights" -> "weights" (1),
// "decode.weights" (2).
std::string Tail(const std::string& path, int segments) {
  size_t at = path.size();
  for (int i = 0; i < segments; ++i) {
    if (at == 0) return path;
    const size_t dot = path.rfind('.', at - 1);
    if (dot == std::string::npos) return path;
    at = dot;
  }
  return path.substr(at + 1);
}

// "tp=8 weights=int4": the last path segment keeps the table narrow (two
// when one would be ambiguous, as pd.prefill.replicas vs pd.decode.replicas);
// the full paths are in search.json.
std::string ShortConfig(const GridAssignment& grid) {
  std::string s;
  for (const auto& [p, v] : grid) {
    int n = 1;
    for (const auto& [q, w] : grid) {
      if (q != p && Tail(q, 1) == Tail(p, 1)) n = 2;
    }
    s += (s.empty() ? "" : " ") + Tail(p, n) + "=" + ValueText(v);
  }
  return s.empty() ? "(base scenario)" : s;
}

double Get(const schema::RunSummary& summary, const char* key) {
  return schema::Metric(summary, key).value_or(NAN);
}

nlohmann::json ConfigJson(const FeasibleConfig& f, int rank, bool full) {
  nlohmann::json j = {{"rank", rank},
                      {"point_id", f.point_id},
                      {"config", GridObject(f.grid)},
                      {"request_rate_req_per_s", f.rate},
                      {"output_throughput_per_gpu", f.output_throughput_per_gpu},
                      {"tokens_per_s_per_user", f.tokens_per_s_per_user},
                      {"objective_value", f.objective},
                      {"binding_constraint", f.binding},
                      {"binding_constraint_text", f.binding_text},
                      {"bisection_probes", f.probes}};
  const nlohmann::json summary = schema::ToJson(f.summary);
  for (const char* k : {"p90_ttft_ms", "p90_tpot_ms", "mean_tpot_ms", "gpus",
                        "cost_usd_per_million_output_tokens"}) {
    if (summary.contains(k)) j[k] = summary[k];
  }
  if (auto pd = PdShapeOf(f.summary, f.binding)) j["pd"] = PdShapeJson(*pd);
  if (full) {
    j["slo_checks"] = f.checks;
    j["summary"] = summary;
  }
  return j;
}

std::string Fmt(double v, int prec = 1) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", prec, v);
  return buf;
}

void Table(std::ostream& os, const std::vector<std::string>& head,
           const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = head[c].size();
    for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    os << "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      os << " " << cells[c] << std::string(w[c] - cells[c].size(), ' ') << " |";
    }
    os << "\n";
  };
  auto rule = [&] {
    os << "+";
    for (size_t c = 0; c < w.size(); ++c) os << std::string(w[c] + 2, '-') << "+";
    os << "\n";
  };
  rule();
  line(head);
  rule();
  for (const auto& r : rows) line(r);
  rule();
}

// A GPU count reads as a whole number; the other objectives keep 3 decimals.
std::string ObjectiveText(const FeasibleConfig& f, const std::string& objective) {
  return objective == "gpus" ? Fmt(f.objective, 0) : Fmt(f.objective, 3);
}

// PD configurations add their prefill:decode ratio, the GPUs of each pool
// and the pool that binds; `pd_columns` is set when any ranked one is PD.
std::vector<std::string> Row(const FeasibleConfig& f, int rank, const std::string& objective,
                             bool pd_columns) {
  std::vector<std::string> row = {std::to_string(rank),
                                  Fmt(f.output_throughput_per_gpu),
                                  Fmt(f.tokens_per_s_per_user),
                                  Fmt(f.rate, 3),
                                  Fmt(Get(f.summary, "p90_ttft_ms")),
                                  Fmt(Get(f.summary, "p90_tpot_ms"), 2),
                                  Fmt(Get(f.summary, "gpus"), 0),
                                  ObjectiveText(f, objective)};
  if (pd_columns) {
    const auto pd = PdShapeOf(f.summary, f.binding);
    row.push_back(pd ? pd->ratio : "co-located");
    row.push_back(pd ? std::to_string(pd->prefill.gpus) : "-");
    row.push_back(pd ? std::to_string(pd->decode.gpus) : "-");
    row.push_back(pd ? pd->binding_text : "-");
  }
  row.push_back(ShortConfig(f.grid));
  return row;
}

nlohmann::json SmallestPassingJson(const SearchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SmallestPassing& s : r.smallest_passing) {
    const bool found = s.ranked_index >= 0;
    rows.push_back({{"others", GridObject(s.others)},
                    {"value", s.value},
                    {"configuration", found ? ConfigJson(r.ranked[s.ranked_index],
                                                         s.ranked_index + 1, /*full=*/false)
                                            : nlohmann::json()}});
  }
  return {{"axis", r.smallest_passing_axis}, {"rows", rows}};
}

// For each setting of the other axes, the smallest passing value of the
// sized axis beside its rank and cost: more of one resource against more of
// another (host memory per GPU at 8 GPUs against 16 GPUs without it).
void PrintSmallestPassing(const SearchResult& r, const std::string& objective, std::ostream& os) {
  const std::string axis = Tail(r.smallest_passing_axis, 1);
  std::string others;
  if (!r.smallest_passing.empty()) {
    for (const auto& [p, v] : r.smallest_passing[0].others) {
      others += (others.empty() ? "" : " ") + Tail(p, 1);
    }
  }
  os << "\nSmallest " << axis << " meeting every SLO (its values in the space's order)"
     << (others.empty() ? "" : ", for each " + others) << ":\n";
  std::vector<std::vector<std::string>> rows;
  for (const SmallestPassing& s : r.smallest_passing) {
    std::vector<std::string> row = {s.others.empty() ? "(all)" : ShortConfig(s.others)};
    if (s.ranked_index < 0) {
      row.insert(row.end(), {"none passes", "-", "-", "-", "-"});
    } else {
      const FeasibleConfig& f = r.ranked[s.ranked_index];
      row.insert(row.end(), {ValueText(s.value), std::to_string(s.ranked_index + 1),
                             Fmt(Get(f.summary, "gpus"), 0), Fmt(Get(f.summary, "p90_ttft_ms")),
                             ObjectiveText(f, objective)});
    }
    rows.push_back(std::move(row));
  }
  Table(os, {"other axes", axis, "Rank", "total_gpus", "TTFT p90 ms", objective}, rows);
}

}  // namespace

nlohmann::json SearchJson(const SearchResult& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario_origin;
  j["space"] = r.space_origin;
  j["objective"] = ObjectiveName(r.objective);
  if (r.pessimistic) j["pessimistic"] = true;
  j["slos"] = r.slo_texts;
  j["rate_path"] = r.rate_path;
  j["rate_unit"] = RateUnit(r.rate_path);
  j["fixed_rate"] = r.fixed_rate;
  j["configs"] = r.configs;
  j["feasible"] = r.ranked.size();
  j["pruned"] = r.pruned.size();
  j["simulations"] = r.simulations;
  j["tokens_per_s_per_user_definition"] = "1000 / mean_tpot_ms";
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(r.top_n); ++i) {
    top.push_back(ConfigJson(r.ranked[i], static_cast<int>(i) + 1, /*full=*/true));
  }
  j["top"] = top;
  nlohmann::json pareto = nlohmann::json::array();
  for (int i : r.pareto) pareto.push_back(ConfigJson(r.ranked[i], i + 1, /*full=*/false));
  j["pareto"] = pareto;
  j["winner"] = r.ranked.empty() ? nlohmann::json() : ConfigJson(r.ranked[0], 1, true);
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    all.push_back(ConfigJson(r.ranked[i], static_cast<int>(i) + 1, /*full=*/false));
  }
  j["ranked"] = all;
  nlohmann::json pruned = nlohmann::json::array();
  for (const auto& p : r.pruned) {
    pruned.push_back({{"point_id", p.point_id},
                      {"config", GridObject(p.grid)},
                      {"stage", p.stage},
                      {"reason", p.reason}});
  }
  j["pruned_configs"] = pruned;
  if (!r.smallest_passing_axis.empty()) j["smallest_passing"] = SmallestPassingJson(r);
  return j;
}

std::string PrunedCsv(const SearchResult& r) {
  std::string out = "point_id";
  for (const auto& p : r.paths) out += "," + CsvField(p);
  out += ",stage,reason\n";
  for (const auto& p : r.pruned) {
    out += p.point_id;
    for (const auto& [path, v] : p.grid) out += "," + CsvField(ValueText(v));
    out += "," + p.stage + "," + CsvField(p.reason) + "\n";
  }
  return out;
}

Status WriteSearchOutputs(const SearchResult& r, const std::string& dir) {
  // Both files or neither (a report reads search.json; pruned.csv explains it).
  return WriteDirAtomic(dir, {{"search.json", DumpJson(SearchJson(r))}, {"pruned.csv", PrunedCsv(r)}});
}

void PrintSearchReport(const SearchResult& r, std::ostream& os) {
  const std::string objective = ObjectiveName(r.objective);
  const std::string unit = RateUnit(r.rate_path);
  std::string slos;
  for (const auto& s : r.slo_texts) slos += (slos.empty() ? "" : ", ") + s;
  std::vector<std::string> box = {
      "capplan search: " + r.scenario_origin,
      "space " + r.space_origin + ": " + std::to_string(r.configs) + " configs, " +
          std::to_string(r.pruned.size()) + " pruned, " + std::to_string(r.ranked.size()) +
          " feasible, " + std::to_string(r.simulations) + " simulations",
      "SLOs: " + slos + "   objective: " + objective};
  if (!r.ranked.empty()) {
    const FeasibleConfig& w = r.ranked[0];
    box.push_back("Best: " + ShortConfig(w.grid) + " at " + Fmt(w.rate, 3) + " " + unit + ", " +
                  Fmt(w.output_throughput_per_gpu) + " output tokens/s/gpu, " +
                  Fmt(w.tokens_per_s_per_user) + " tokens/s/user");
    box.push_back("Binding constraint: " + w.binding_text);
    if (auto pd = PdShapeOf(w.summary, w.binding)) {
      box.push_back("PD " + pd->ratio + ": " + std::to_string(pd->prefill.gpus) +
                    " prefill GPUs + " + std::to_string(pd->decode.gpus) +
                    " decode GPUs; binding pool: " + pd->binding_text);
    }
  } else {
    box.push_back("No configuration meets the SLOs (see pruned.csv for why)");
  }
  size_t width = 0;
  for (const auto& l : box) width = std::max(width, l.size());
  os << "+" << std::string(width + 2, '=') << "+\n";
  for (const auto& l : box) os << "| " << l << std::string(width - l.size(), ' ') << " |\n";
  os << "+" << std::string(width + 2, '=') << "+\n";
  bool pd_columns = false;
  for (const auto& f : r.ranked) pd_columns = pd_columns || PdShapeOf(f.summary).has_value();
  std::vector<std::string> head = {"Rank",        "tokens/s/gpu", "tokens/s/user", unit,
                                   "TTFT p90 ms", "TPOT p90 ms",  "total_gpus",    objective};
  if (pd_columns) {
    head.insert(head.end(), {"P:D", "prefill_gpus", "decode_gpus", "binding pool"});
  }
  head.push_back("config");
  if (!r.ranked.empty()) {
    os << (r.fixed_rate ? "\nTop configurations (each at the fixed rate):\n"
                        : "\nTop configurations (each at the largest request rate meeting every "
                          "SLO):\n");
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < r.ranked.size() && i < static_cast<size_t>(r.top_n); ++i) {
      rows.push_back(Row(r.ranked[i], static_cast<int>(i) + 1, objective, pd_columns));
    }
    Table(os, head, rows);
    os << "\nPareto set (output tokens/s/gpu vs tokens/s/user):\n";
    rows.clear();
    for (int i : r.pareto) rows.push_back(Row(r.ranked[i], i + 1, objective, pd_columns));
    Table(os, head, rows);
  }
  if (!r.smallest_passing_axis.empty()) PrintSmallestPassing(r, objective, os);
  if (!r.pruned.empty()) {
    os << "\nPruned " << r.pruned.size() << " configs (all reasons in pruned.csv):\n";
    const size_t show = std::min<size_t>(r.pruned.size(), 10);
    for (size_t i = 0; i < show; ++i) {
      os << "  " << ShortConfig(r.pruned[i].grid) << ": [" << r.pruned[i].stage << "] "
         << r.pruned[i].reason << "\n";
    }
    if (show < r.pruned.size()) os << "  ... " << r.pruned.size() - show << " more\n";
  }
  os << "\ntokens/s/user = 1000 / mean TPOT (ms); tokens/s/gpu = output tokens/s / total_gpus;"
        " total_gpus = the summary's gpus (all replicas)\n";
  if (pd_columns) {
    os << "P:D = prefill replicas : decode replicas; total_gpus = prefill_gpus + decode_gpus;"
          " binding pool = decode when a TPOT/ITL SLO binds, else the pool with the longer"
          " mean queue (else the busier pool), at the configuration's max rate\n";
  }
}

}  // namespace capplan::sim::sweep
