#include "report/tables.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "report/pd_compare.h"
#include "report/text_util.h"

namespace capplan::report {
namespace {

std::string Opt(const std::optional<double>& v, int digits = 3) {
  return v ? FormatNumber(*v, digits) : "n/a";
}

std::string Parallelism(const Summary& s) {
  std::string out;
  for (const char* k : {"tp", "ep", "pp", "replicas"}) {
    const std::string v = s.DeploymentField(k);
    if (v.empty()) continue;
    if (!out.empty()) out += " ";
    // A PD run's replicas read "1P:2D", which says what they are.
    out += v.find(':') == std::string::npos ? std::string(k) + v : v;
  }
  if (s.DeploymentField("dp_attention") == "true")
    out += (out.empty() ? "" : " ") + std::string("dp-attn");
  return out.empty() ? "n/a" : out;
}

std::string OrNa(const std::string& s) { return s.empty() ? "n/a" : s; }
std::string OrNa(const std::optional<double>& v) { return v ? FormatNumber(*v) : "n/a"; }

std::string Latency(const Summary& s, const std::string& key) {
  auto it = s.latency_ms.find(key);
  return it == s.latency_ms.end() ? "n/a" : FormatNumber(it->second);
}

}  // namespace

std::string ConcurrencyText(const Summary& s) {
  return s.concurrency ? FormatNumber(*s.concurrency, 6) : "n/a";
}

std::vector<std::string> ReportNotes(const Analysis& a) {
  std::vector<std::string> n;
  std::string bases;
  for (int b : a.baseline_configs) {
    bases += (bases.empty() ? "" : ", ") + a.configs[b].short_label;
  }
  n.push_back(std::to_string(a.results.size()) + " result(s) in " +
              std::to_string(a.configs.size()) + " configuration(s); baseline(s): " + bases +
              " (each configuration is compared with the nearest baseline listed before it).");
  n.push_back(
      "Output tok/s counts generated tokens only; input+output tok/s counts prompt and "
      "generated tokens (vLLM total_token_throughput). Per-GPU figures divide by every "
      "GPU of the deployment.");
  n.push_back("Tokens/s per user = 1000 / median TPOT (ms). The Pareto chart's y axis counts " +
              std::string(a.options.pareto_tokens == "total" ? "input+output" : "output") +
              " tokens per second per GPU.");
  n.push_back(
      "Cost per million tokens = USD per GPU-hour x GPUs / 3600 / tokens per second x "
      "1e6; the output figure charges all GPU time to output tokens, the input+output "
      "figure to every token processed.");
  if (!a.concurrency_source.empty()) {
    n.push_back("Concurrency is read from the summaries' " + a.concurrency_source + ".");
  }
  return n;
}

namespace {

// Prefix caching and speculative decoding change what a token costs in
// different ways (prefill skipped vs more tokens per decode step); their
// figures side by side with the latency and cost they lead to.
std::optional<Table> AgenticTable(const Analysis& a) {
  Table t{"cache_and_speculation",
          "Prefix caching and speculative decoding",
          "Hit rate = prompt tokens found cached / prompt tokens admitted; accept length = "
          "tokens emitted per request decode step (1 without speculation).",
          {"configuration", "concurrency", "prefix_cache_hit_rate", "accept_length_mean",
           "median_ttft_ms", "median_tpot_ms", "output_tok_s", "usd_per_million_output_tokens"},
          {}};
  // The configurations that cache or speculate, and the baselines they are
  // compared with (a baseline without either shows "off").
  std::vector<bool> shown(a.configs.size(), false);
  for (size_t ci = 0; ci < a.configs.size(); ++ci) {
    for (int i : a.configs[ci].points) {
      const Summary& s = *a.points[i].summary;
      if (s.prefix_cache_hit_rate || s.accept_length_mean) {
        shown[ci] = true;
        shown[a.configs[ci].baseline] = true;
      }
    }
  }
  for (size_t ci = 0; ci < a.configs.size(); ++ci) {
    if (!shown[ci]) continue;
    const auto& c = a.configs[ci];
    for (int i : c.points) {
      const Point& p = a.points[i];
      const Summary& s = *p.summary;
      t.rows.push_back({c.short_label, ConcurrencyText(s),
                        s.prefix_cache_hit_rate ? FormatNumber(*s.prefix_cache_hit_rate) : "off",
                        s.accept_length_mean ? FormatNumber(*s.accept_length_mean) : "off",
                        Latency(s, "median_ttft"), Latency(s, "median_tpot"),
                        FormatNumber(s.output_throughput),
                        p.cost ? FormatNumber(p.cost->usd_per_million_output) : "n/a"});
    }
  }
  if (t.rows.empty()) return std::nullopt;
  return t;
}

}  // namespace

namespace {

Table DeploymentsTable(const Analysis& a) {
  Table dep{"deployments",
            "Configurations (legend)",
            "One row per configuration; results that differ only in offered load share one. "
            "Tables and charts name each configuration by its label.",
            {"label", "configuration", "model", "hardware", "gpus", "parallelism", "engine",
             "weights", "kv_cache", "kv_integrity", "profile", "profile_provenance", "results"},
            {}};
  for (const auto& c : a.configs) {
    const Summary& s = *c.first;
    // A profile by name; its path only when relative (as the user gave it),
    // since an absolute one names a directory of the machine that made it.
    std::string profile = s.profile_name;
    if (!s.profile_path.empty() && !IsAbsolutePath(s.profile_path)) {
      profile += profile.empty() ? s.profile_path : " (" + s.profile_path + ")";
    }
    dep.rows.push_back({c.short_label, c.label, OrNa(s.model), OrNa(s.hardware),
                        std::to_string(s.gpus), Parallelism(s), OrNa(s.DeploymentField("engine")),
                        OrNa(s.DeploymentField("weights")), OrNa(s.DeploymentField("kv_cache")),
                        OrNa(s.DeploymentField("kv_integrity")), OrNa(profile),
                        OrNa(s.profile_provenance), std::to_string(c.points.size())});
  }
  return dep;
}

// One row of the memory table: the weight components' columns, then the
// totals.
std::vector<std::string> MemoryRow(const Config& c,
                                   const std::set<std::string>& components) {
  const Summary& s = *c.first;
  std::vector<std::string> row{c.short_label};
  if (s.memory) {
    const MemoryPerGpu& m = *s.memory;
    for (const auto& k : components) {
      auto it = m.weights_by_component.find(k);
      row.push_back(it == m.weights_by_component.end() ? "0" : FormatGiB(it->second));
    }
    row.push_back(FormatGiB(m.weights_bytes));
    row.push_back(FormatGiB(m.reserve_bytes));
    row.push_back(FormatGiB(m.kv_pool_bytes));
    row.push_back(m.gpu_memory_bytes > 0 ? FormatGiB(m.gpu_memory_bytes - m.weights_bytes -
                                                     m.reserve_bytes - m.kv_pool_bytes)
                                         : "n/a");
    row.push_back(m.gpu_memory_bytes > 0 ? FormatGiB(m.gpu_memory_bytes) : "n/a");
  } else {
    for (size_t i = 0; i < components.size() + 5; ++i) row.push_back("n/a");
  }
  row.push_back(Opt(s.kv_bytes_per_token, 6));
  row.push_back(Opt(s.kv_capacity_tokens, 9));
  return row;
}

// Memory: one column per weight component seen in any configuration.
Table MemoryTable(const Analysis& a) {
  std::set<std::string> components;
  for (const auto& c : a.configs) {
    if (c.first->memory) {
      for (const auto& [k, v] : c.first->memory->weights_by_component) components.insert(k);
    }
  }
  Table mem{"memory",
            "Memory per GPU and KV capacity",
            "GiB per GPU. Free = HBM minus weights, reserve and KV pool.",
            {"configuration"},
            {}};
  for (const auto& k : components) mem.columns.push_back("weights_" + k + "_gib");
  for (const char* col : {"weights_gib", "reserve_gib", "kv_pool_gib", "free_gib", "hbm_gib",
                          "kv_bytes_per_token", "kv_capacity_tokens"}) {
    mem.columns.push_back(col);
  }
  for (const auto& c : a.configs) mem.rows.push_back(MemoryRow(c, components));
  return mem;
}

// The tables with one row (or one per metric) per result: throughput,
// latency, cost and what binds.
struct PointTables {
  Table tput{"throughput",
             "Throughput vs concurrency",
             "Output = generated tokens only; total = input + output tokens. "
             "Tokens/s/user = 1000 / median TPOT.",
             {"configuration", "concurrency", "request_throughput", "output_tok_s", "total_tok_s",
              "output_tok_s_per_gpu", "total_tok_s_per_gpu", "tok_s_per_user", "pareto_front"},
             {}};
  Table lat{"latency",
            "Latency percentiles (ms)",
            "TTFT, TPOT (request-weighted), ITL (token-weighted), E2E as the vLLM and "
            "SGLang serving benchmarks define them.",
            {"configuration", "concurrency", "metric", "mean_ms", "median_ms", "p90_ms", "p99_ms"},
            {}};
  Table cost{
      "cost",
      "Cost per million tokens",
      "USD; the change is against the configuration's baseline at the nearest "
      "offered concurrency.",
      {"configuration", "concurrency", "usd_per_gpu_hour", "gpus", "usd_per_million_output_tokens",
       "usd_per_million_total_tokens", "vs_baseline_output", "vs_baseline_total"},
      {}};
  Table bind{"binding",
             "What binds",
             "KV = peak KV tokens / KV capacity; step-time shares from the simulator's "
             "bound_time_share; SLO from p99 latency and goodput when SLOs were given.",
             {"configuration", "concurrency", "binds", "headroom", "next_limit"},
             {}};

  void AddThroughput(const std::string& label, const std::string& conc, const Point& p) {
    const Summary& s = *p.summary;
    tput.rows.push_back(
        {label, conc, FormatNumber(s.request_throughput), FormatNumber(s.output_throughput),
         FormatNumber(s.total_token_throughput), FormatNumber(s.output_throughput_per_gpu),
         FormatNumber(s.total_token_throughput_per_gpu),
         p.tokens_per_s_per_user > 0 ? FormatNumber(p.tokens_per_s_per_user) : "n/a",
         p.on_pareto_front ? "yes" : "no"});
  }

  void AddLatency(const std::string& label, const std::string& conc, const Summary& s) {
    for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
      const std::string m = metric;
      std::string name = "E2E";
      if (m != "e2el") {
        name.clear();
        for (char ch : m) name += static_cast<char>(std::toupper(ch));
      }
      lat.rows.push_back({label, conc, name, Latency(s, "mean_" + m), Latency(s, "median_" + m),
                          Latency(s, "p90_" + m), Latency(s, "p99_" + m)});
    }
  }

  void AddCost(const std::string& label, const std::string& conc, const Point& p,
               const std::string& base_label) {
    const Summary& s = *p.summary;
    std::vector<std::string> crow{label, conc};
    if (p.cost) {
      crow.push_back(FormatNumber(p.cost->usd_per_gpu_hour));
      crow.push_back(std::to_string(s.gpus));
      crow.push_back(FormatNumber(p.cost->usd_per_million_output));
      crow.push_back(FormatNumber(p.cost->usd_per_million_total));
    } else {
      crow.insert(crow.end(), {"n/a", std::to_string(s.gpus), "n/a", "n/a"});
    }
    if (p.baseline_point < 0) {
      crow.push_back("baseline");
      crow.push_back("baseline");
    } else {
      crow.push_back(p.output_cost_change ? ChangePhrase(*p.output_cost_change,
                                                         "cost per output token", base_label)
                                          : "n/a");
      crow.push_back(p.total_cost_change ? ChangePhrase(*p.total_cost_change,
                                                        "cost per input+output token", base_label)
                                         : "n/a");
    }
    cost.rows.push_back(std::move(crow));
  }

  explicit PointTables(const Analysis& a) {
    for (const auto& c : a.configs) {
      for (int i : c.points) {
        const Point& p = a.points[i];
        const std::string conc = ConcurrencyText(*p.summary);
        AddThroughput(c.short_label, conc, p);
        AddLatency(c.short_label, conc, *p.summary);
        AddCost(c.short_label, conc, p, a.configs[c.baseline].short_label);
        bind.rows.push_back({c.short_label, conc, p.binding.binds, OrNa(p.binding.headroom),
                             p.binding.next_limit});
      }
    }
  }
};

// Energy per result (sim/energy.h), when any summary has it: facility
// joules per output token, output tokens/s per provisioned MW, peak kW per
// node and the electricity per million output tokens.
std::optional<Table> EnergyTable(const Analysis& a) {
  Table t{"energy",
          "Energy",
          "Facility energy (GPU boards by bound, idle time, the nodes' non-GPU power, times the "
          "PUE) per output token; tokens/s per MW of provisioned power; kW per node is IT power.",
          {"configuration", "concurrency", "joules_per_output_token", "output_tokens_per_s_per_mw",
           "peak_kw_per_node", "pue", "electricity_usd_per_million_output_tokens"},
          {}};
  for (const auto& c : a.configs) {
    for (int i : c.points) {
      const Summary& s = *a.points[i].summary;
      if (!s.joules_per_output_token) continue;
      t.rows.push_back({c.short_label, ConcurrencyText(s), FormatNumber(*s.joules_per_output_token),
                        OrNa(s.output_tokens_per_s_per_mw), OrNa(s.peak_kw_per_node), OrNa(s.pue),
                        OrNa(s.electricity_usd_per_million_output_tokens)});
    }
  }
  if (t.rows.empty()) return std::nullopt;
  return t;
}

// Each distinct warning once, with how many results carry it and which
// (configuration and concurrency): a study's runs repeat the same few.
std::optional<Table> WarningsTable(const Analysis& a) {
  Table warn{"warnings",
             "Simulator warnings",
             "Copied from the summaries, each distinct warning once: results = how many results "
             "carry it; seen_in = their configuration and concurrency.",
             {"warning", "results", "seen_in"},
             {}};
  std::map<std::string, size_t> row_of;
  std::vector<int> counts;
  for (const auto& c : a.configs) {
    for (int i : c.points) {
      const Summary& s = *a.points[i].summary;
      const std::string where = c.short_label + " " + ConcurrencyText(s);
      std::set<std::string> seen;  // a result repeating a warning counts once
      for (const auto& w : s.warnings) {
        if (!seen.insert(w).second) continue;
        auto [it, fresh] = row_of.emplace(w, warn.rows.size());
        if (fresh) {
          warn.rows.push_back({w, "", where});
          counts.push_back(0);
        } else {
          warn.rows[it->second][2] += ", " + where;
        }
        ++counts[it->second];
      }
    }
  }
  if (warn.rows.empty()) return std::nullopt;
  for (size_t r = 0; r < warn.rows.size(); ++r) warn.rows[r][1] = std::to_string(counts[r]);
  return warn;
}

}  // namespace

std::vector<Table> BuildTables(const Analysis& a) {
  std::vector<Table> tables;
  tables.push_back(DeploymentsTable(a));
  tables.push_back(MemoryTable(a));
  PointTables pt(a);
  tables.push_back(std::move(pt.tput));
  tables.push_back(std::move(pt.lat));
  tables.push_back(std::move(pt.cost));
  if (auto energy = EnergyTable(a)) tables.push_back(std::move(*energy));
  tables.push_back(std::move(pt.bind));
  if (auto pd = PdComparisonTable(a)) tables.push_back(std::move(*pd));
  if (auto agentic = AgenticTable(a)) tables.push_back(std::move(*agentic));
  if (auto warn = WarningsTable(a)) tables.push_back(std::move(*warn));
  // Warnings and provenance are free text from the summaries; they may name
  // files of the machine that ran the simulation.
  for (auto& t : tables) {
    for (auto& row : t.rows) {
      for (auto& cell : row) cell = ScrubAbsolutePaths(cell);
    }
  }
  return tables;
}

}  // namespace capplan::report
