#include "report/brief.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "report/pd_compare.h"
#include "report/tables.h"
#include "report/text_util.h"

namespace capplan::report {
namespace {

constexpr const char* kArrow = "\u2192";

// "glm-5.2-sweep (weights=fp8) [C]": the letter ties a line to the charts.
std::string Name(const Config& c) {
  return c.short_label == c.label ? c.label : c.label + " [" + c.short_label + "]";
}

bool IsPrefillPool(const Summary& s) { return s.DeploymentField("phase").rfind("prefill", 0) == 0; }

// Overheads such as integrity checks are fractions of a percent; rounding
// them to "0.0%" would hide the very figure asked for.
std::string Percent(double fraction) {
  if (fraction != 0 && std::fabs(fraction) < 0.001) {
    return FormatNumber(std::fabs(fraction) * 100, 2) + "%";
  }
  return FormatPercent(std::fabs(fraction));
}
std::string Change(double change) {
  if (change == 0) return "\u00b10%";
  return (change < 0 ? "\u2212" : "+") + Percent(change);
}

// "1009→1546 out tok/s (+53%)"; "1546 out tok/s (−0.014%)" when equal after
// rounding.
std::string FromTo(double base, double v, const std::string& unit) {
  const std::string from = FormatCompact(base), to = FormatCompact(v);
  std::string out = (from == to ? to : from + kArrow + to) + unit;
  if (base > 0 && std::isfinite(base) && std::isfinite(v)) out += " (" + Change(v / base - 1) + ")";
  return out;
}

// FromTo with the compared figure's 80% prediction band inside its
// parentheses: "1115→1418 out tok/s (+27%; 80% 971..2069)"; as FromTo
// when the summary has none (the baseline's band too would not fit a
// summary line).
std::string FromToBanded(double base, double v, const std::string& unit,
                         const std::map<std::string, std::pair<double, double>>& bands,
                         const std::string& key) {
  std::string out = FromTo(base, v, unit);
  const auto it = bands.find(key);
  if (it == bands.end()) return out;
  const std::string band =
      "80% " + FormatCompact(it->second.first) + ".." + FormatCompact(it->second.second);
  if (!out.empty() && out.back() == ')') {
    out.pop_back();
    return out + "; " + band + ")";
  }
  return out + " (" + band + ")";
}

std::string Concurrency(const Summary& s) {
  return s.concurrency ? " at concurrency " + ConcurrencyText(s) : "";
}

// Figures of one point alone (a report with a single configuration).
std::string SingleLine(const Analysis& a, int i) {
  const Point& p = a.points[i];
  const Summary& s = *p.summary;
  const bool prefill = IsPrefillPool(s);
  std::string line = Name(a.configs[p.config]) + Concurrency(s) + ": ";
  if (s.kv_capacity_tokens)
    line += "KV capacity " + FormatCompact(*s.kv_capacity_tokens) + " tok, ";
  line += prefill ? "in tok/s " + FormatCompact(s.input_throughput)
                  : "out tok/s " + FormatCompact(s.output_throughput);
  if (p.cost) {
    line += ", $/M " + std::string(prefill ? "tok " : "out tok ") +
            FormatCompact(prefill ? p.cost->usd_per_million_total : p.cost->usd_per_million_output);
  }
  return line + "; binds " + p.binding.binds;
}

}  // namespace

std::vector<Comparison> Comparisons(const Analysis& a) {
  std::vector<Comparison> out;
  std::set<int> twin_configs;
  std::vector<PdPair> pairs;
  for (const PdPair& pair : PdPairs(a)) {
    if (pair.twin < 0) continue;
    pairs.push_back(pair);
    twin_configs.insert(a.points[pair.twin].config);
  }
  for (size_t c = 0; c < a.configs.size(); ++c) {
    const Config& config = a.configs[c];
    // A PD configuration speaks through its twin comparison (its last pair).
    const PdPair* pd = nullptr;
    for (const PdPair& pair : pairs) {
      if (a.points[pair.pd].config == static_cast<int>(c)) pd = &pair;
    }
    if (pd != nullptr) {
      out.push_back({pd->twin, pd->pd, true});
      continue;
    }
    if (twin_configs.count(static_cast<int>(c)) != 0) continue;
    if (config.baseline == static_cast<int>(c)) continue;
    const int i = config.points.back();
    if (a.points[i].baseline_point < 0) continue;
    out.push_back({a.points[i].baseline_point, i, false});
  }
  return out;
}

// The KV tiers under a deployment's GPUs, as its summary echoes them
// ("host 100 GiB/GPU"), or "none".
std::string KvTiersLabel(const nlohmann::json& d) {
  if (!d.is_object() || !d.contains("kv_tiers") || !d["kv_tiers"].is_array()) return "none";
  std::string out;
  for (const auto& t : d["kv_tiers"]) {
    if (!t.is_object()) continue;
    const auto tier = t.find("tier");
    const auto gib = t.find("gib_per_gpu");
    if (tier == t.end() || !tier->is_string()) continue;
    out += (out.empty() ? "" : " + ") + tier->get<std::string>();
    if (gib != t.end() && gib->is_number()) out += " " + FormatNumber(gib->get<double>()) + " GiB/GPU";
  }
  return out.empty() ? "none" : out;
}

std::string WhatChanged(const Summary& base, const Summary& s) {
  std::vector<std::string> parts;
  if (base.model != s.model) parts.push_back("model " + base.model + kArrow + s.model);
  const std::string tiers_from = KvTiersLabel(base.deployment), tiers_to = KvTiersLabel(s.deployment);
  if (tiers_from != tiers_to) parts.push_back("KV tiers " + tiers_from + kArrow + tiers_to);
  // The levers a planner pulls first, then the rest (engine limits that
  // follow from them) in name order.
  std::vector<std::string> keys = {"replicas", "tp", "ep", "weights", "kv_cache", "kv_integrity"};
  std::set<std::string> rest;
  for (const auto* d : {&base.deployment, &s.deployment}) {
    if (!d->is_object()) continue;
    for (auto it = d->begin(); it != d->end(); ++it) {
      if (!it->is_object() && !it->is_array()) rest.insert(it.key());
    }
  }
  for (const auto& k : keys) rest.erase(k);
  keys.push_back("gpus");
  keys.insert(keys.end(), rest.begin(), rest.end());
  for (const auto& k : keys) {
    if (k == "gpus") {
      if (base.gpus != s.gpus) {
        parts.push_back("GPUs " + std::to_string(base.gpus) + kArrow + std::to_string(s.gpus));
      }
      continue;
    }
    // Phase follows from PD vs co-located.
    if (k == "phase") continue;
    const std::string from = base.DeploymentField(k), to = s.DeploymentField(k);
    if (from == to) continue;
    parts.push_back(k + " " + (from.empty() ? "n/a" : from) + kArrow + (to.empty() ? "n/a" : to));
  }
  std::string out;
  const size_t shown = std::min<size_t>(parts.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + parts[i];
  if (parts.size() > shown) out += ", +" + std::to_string(parts.size() - shown) + " more";
  return out.empty() ? "same deployment" : out;
}

BriefLine Compare(const Analysis& a, const Comparison& c, const std::string& title) {
  const Point& bp = a.points[c.base];
  const Point& p = a.points[c.point];
  const Summary& b = *bp.summary;
  const Summary& s = *p.summary;
  BriefLine out;
  out.lead =
      (title.empty() ? Name(a.configs[p.config]) + " vs " + Name(a.configs[bp.config]) : title) +
      " (" + WhatChanged(b, s) + ")" + Concurrency(s);
  std::vector<std::string> figures;
  if (b.kv_capacity_tokens && s.kv_capacity_tokens && *b.kv_capacity_tokens > 0 &&
      std::fabs(*s.kv_capacity_tokens / *b.kv_capacity_tokens - 1) > 0.005) {
    figures.push_back("KV capacity " +
                      FromTo(*b.kv_capacity_tokens, *s.kv_capacity_tokens, " tok"));
  }
  const bool prefill = IsPrefillPool(s);
  // Open-loop runs (no concurrency cap) are compared at their request rates.
  if (!s.concurrency && b.request_throughput > 0) {
    figures.push_back(FromTo(b.request_throughput, s.request_throughput, " req/s"));
  }
  const std::string tput = prefill ? "input_throughput" : "output_throughput";
  figures.push_back(FromToBanded(prefill ? b.input_throughput : b.output_throughput,
                                 prefill ? s.input_throughput : s.output_throughput,
                                 prefill ? " in tok/s" : " out tok/s", s.throughput_interval,
                                 tput));
  if (bp.cost && p.cost) {
    figures.push_back("$" + (prefill ? FromTo(bp.cost->usd_per_million_total,
                                              p.cost->usd_per_million_total, " /M tok")
                                     : FromTo(bp.cost->usd_per_million_output,
                                              p.cost->usd_per_million_output, " /M out tok")));
  }
  // Prefix caching changes what a prompt costs: its hit rate and the TTFT
  // users see.
  if (b.prefix_cache_hit_rate || s.prefix_cache_hit_rate) {
    figures.push_back("prefix cache hit " + Percent(b.prefix_cache_hit_rate.value_or(0)) + " " +
                      kArrow + " " + Percent(s.prefix_cache_hit_rate.value_or(0)));
    const auto bt = b.latency_ms.find("median_ttft"), st = s.latency_ms.find("median_ttft");
    if (bt != b.latency_ms.end() && st != s.latency_ms.end()) {
      figures.push_back("median TTFT " + FromTo(bt->second, st->second, " ms"));
    }
  }
  // Speculative decoding trades a costlier step for more tokens per step:
  // the accept length and the per-token latency show which wins.
  if (b.accept_length_mean || s.accept_length_mean) {
    figures.push_back("accept length " + FromTo(b.accept_length_mean.value_or(1),
                                                s.accept_length_mean.value_or(1), ""));
    const auto bt = b.latency_ms.find("median_tpot"), st = s.latency_ms.find("median_tpot");
    if (bt != b.latency_ms.end() && st != s.latency_ms.end()) {
      figures.push_back("median TPOT " + FromTo(bt->second, st->second, " ms"));
    }
  }
  if (s.kv_verify_time_share && *s.kv_verify_time_share > 0) {
    figures.push_back("verify " + Percent(*s.kv_verify_time_share) + " of step time");
  }
  const std::string& from = bp.binding.binds;
  const std::string& to = p.binding.binds;
  figures.push_back("binds " + (from == to ? to + " (both)" : from + " " + kArrow + " " + to));
  for (size_t i = 0; i < figures.size(); ++i) out.figures += (i ? "; " : "") + figures[i];
  return out;
}

std::string ComparisonLine(const Analysis& a, const Comparison& c) {
  const BriefLine l = Compare(a, c);
  return l.lead + ": " + l.figures;
}

std::vector<std::string> SummaryLines(const Analysis& a, size_t max_lines) {
  std::vector<std::string> out;
  const std::vector<Comparison> cmp = Comparisons(a);
  if (cmp.empty()) {
    for (size_t c = 0; c < a.configs.size() && out.size() < max_lines; ++c) {
      out.push_back(SingleLine(a, a.configs[c].points.back()));
    }
    return out;
  }
  const size_t fit = cmp.size() <= max_lines ? cmp.size() : max_lines - 1;
  for (size_t i = 0; i < fit; ++i) out.push_back(ComparisonLine(a, cmp[i]));
  if (fit < cmp.size()) {
    out.push_back("+" + std::to_string(cmp.size() - fit) +
                  " more comparisons in the Cost and What binds tables");
  }
  // A short report also says which result is cheapest overall, the answer
  // a planner looks for next.
  int cheapest = -1;
  for (size_t i = 0; i < a.points.size(); ++i) {
    const Point& p = a.points[i];
    if (!p.cost || !std::isfinite(p.cost->usd_per_million_output)) continue;
    if (cheapest < 0 ||
        p.cost->usd_per_million_output < a.points[cheapest].cost->usd_per_million_output) {
      cheapest = static_cast<int>(i);
    }
  }
  if (out.size() < 3 && out.size() < max_lines && cheapest >= 0 && a.points.size() > 2) {
    const Point& p = a.points[cheapest];
    out.push_back("Cheapest per output token of all " + std::to_string(a.points.size()) +
                  " results: " + Name(a.configs[p.config]) + Concurrency(*p.summary) + ", $" +
                  FormatCompact(p.cost->usd_per_million_output) + " /M out tok at " +
                  FormatCompact(p.summary->output_throughput) + " out tok/s; binds " +
                  p.binding.binds);
  }
  return out;
}

std::string RenderBrief(const Analysis& a) {
  const std::vector<Comparison> cmp = Comparisons(a);
  const bool titled = a.options.title != ReportOptions().title;
  std::ostringstream os;
  if (cmp.empty()) {
    for (const auto& line : SummaryLines(a)) os << line << "\n";
    return os.str();
  }
  for (const auto& c : cmp) {
    const BriefLine l = Compare(a, c, cmp.size() == 1 && titled ? a.options.title : "");
    os << l.lead << ":\n  " << l.figures << "\n";
  }
  return os.str();
}

// One line: every configuration at its highest concurrency, facility
// joules per output token and output tokens/s per provisioned MW
// (sim/energy.h); "" when no result has energy figures.
std::string RenderEnergyBrief(const Analysis& a) {
  std::string line;
  std::optional<double> pue;
  for (const Config& c : a.configs) {
    if (c.points.empty()) continue;
    const Summary& s = *a.points[c.points.back()].summary;
    if (!s.joules_per_output_token) continue;
    pue = s.pue;
    line += (line.empty() ? "" : "; ") + c.short_label + " " +
            FormatCompact(*s.joules_per_output_token) + ", " +
            FormatCompact(s.output_tokens_per_s_per_mw.value_or(0));
  }
  if (line.empty()) return "";
  const bool titled = a.options.title != ReportOptions().title;
  return (titled ? a.options.title : std::string("Energy")) +
         " (J/out tok, out tok/s per MW, PUE " + FormatCompact(pue.value_or(0)) + "): " + line +
         "\n";
}

}  // namespace capplan::report
