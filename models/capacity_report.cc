#include "common/units.h"
#include "models/capacity_report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "common/json_util.h"

namespace capplan::models {

namespace {


std::string FormatInt(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(i, ",");
  return (v < 0 ? "-" : "") + s;
}

std::string FormatName(const WeightFormat& f) {
  std::string s = DtypeName(f.dtype);
  if (DtypeFamily(f.dtype) == Dtype::kInt4) s += " g" + std::to_string(f.group_size) + (f.symmetric ? "" : " asym");
  if (DtypeFamily(f.dtype) == Dtype::kFp8E4m3) {
    s += f.block_rows > 0 ? " " + std::to_string(f.block_rows) + "x" + std::to_string(f.block_cols)
                          : " per-tensor";
  }
  return s;
}

std::string LayoutText(const ParallelLayout& l) {
  std::string s = "TP" + std::to_string(l.tp);
  if (l.ep > 1) s += " EP" + std::to_string(l.ep);
  if (l.dp_attention) s += " DP-attention " + std::to_string(l.dp);
  return s;
}

// A ranged term's value as written in the profile: GiB for byte terms,
// true/false for booleans, else the number; Unit() names the unit once.
std::string TermNumber(const std::string& key, double v) {
  const auto ends = [&](const std::string& tail) {
    return key.size() > tail.size() &&
           key.compare(key.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends("_bytes")) return FormatGib(v);
  if (ends("_copies")) return v >= 0.5 ? "true" : "false";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string Unit(const std::string& key) {
  if (key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0) return " GiB";
  return key.find("_bytes_per_") != std::string::npos ? " B" : "";
}

// The KV pool's range: every ranged term at the end that gives less KV,
// then more; `explain` adds each term's own effect and where its range
// comes from.
void PrintKvRange(const MemoryPlan& p, bool explain, std::ostream& out) {
  out << "KV capacity range: " << FormatInt(p.kv_tokens_lo) << " .. " << FormatInt(p.kv_tokens_hi)
      << " tokens (kv_tokens_lo .. kv_tokens_hi)\n";
  const size_t n = p.kv_range_terms.size();
  if (n == 0) {
    out << "  every memory term of this plan comes from an engine rule or two or more public "
           "logs\n";
    return;
  }
  out << "  with the " << n << " memory term" << (n > 1 ? "s" : "")
      << " that rest on one public log or an assumption at their ends"
      << (explain ? ":" : " (--explain lists them)") << "\n";
  if (!explain) return;
  for (const KvRangeTerm& t : p.kv_range_terms) {
    const std::string lo = TermNumber(t.key, t.lo), hi = TermNumber(t.key, t.hi);
    out << "  " << t.key << " " << TermNumber(t.key, t.value) << Unit(t.key) << ", range " << lo
        << " .. " << hi << Unit(t.key) << ": KV tokens " << FormatInt(t.kv_tokens_at_lo) << " at "
        << lo << ", " << FormatInt(t.kv_tokens_at_hi) << " at " << hi << "\n"
        << "      source: " << t.source << "\n";
  }
}

nlohmann::json HybridPoolsToJson(const MemoryPlan& p) {
  const HybridPools& h = p.hybrid;
  const int ranks = p.attention_ranks;
  nlohmann::json j = {{"local_rule", h.local_rule},
                      {"linear_rule", h.linear_rule},
                      {"full_attention_layers", h.global_layers},
                      {"window_layers", h.local_layers},
                      {"linear_attention_layers", h.linear_layers},
                      {"state_bytes_per_sequence", h.state_bytes_per_sequence}};
  if (h.block_tokens > 0) {
    j["block_tokens"] = h.block_tokens;
    j["blocks"] = h.blocks_per_rank * ranks;
    j["layers_per_group"] = h.layers_per_group;
    j["groups"] = {{"full", h.full_groups}, {"window", h.local_groups}, {"state", h.state_groups}};
    j["state_blocks_per_sequence"] = h.state_groups;
  } else {
    j["state_pool_sequences"] = h.state_slots_per_rank * ranks;
    j["state_slots_per_request"] = h.state_slots_per_request;
    j["window_pool_tokens"] = h.local_tokens_per_rank * ranks;
  }
  return j;
}

}  // namespace

std::string FormatGib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kBytesPerGiB);
  return buf;
}

nlohmann::json PlanToJson(const ModelCard& card, const CapacityQuery& q, const MemoryPlan& p) {
  nlohmann::json j;
  j["model"] = card.name;
  j["hardware"] = q.hardware_name;
  j["gpus"] = q.layout.gpus;
  j["tp"] = q.layout.tp;
  j["ep"] = q.layout.ep;
  j["dp_attention"] = q.layout.dp_attention;
  j["attention_ranks"] = p.attention_ranks;
  j["weights"] = q.precision.weights;
  j["kv_dtype"] = DtypeName(q.precision.kv_cache);
  j["engine"] = p.engine;
  j["engine_version"] = p.engine_version;
  j["engine_rule"] = p.rule_source;
  j["engine_rule_version"] = p.engine_rule_version;
  if (!p.version_note.empty()) j["engine_version_note"] = p.version_note;
  j[p.knob] = p.mem_fraction;
  j["nvls"] = p.nvls;
  j["chunked_prefill_tokens"] = p.chunked_prefill_tokens;
  j["cuda_graph_max_bs"] = p.cuda_graph_max_bs;
  j["mem_fraction_defaulted"] = p.mem_fraction_defaulted;
  j["gpu_memory_bytes"] = p.gpu_memory_bytes;
  j["params_total"] = p.weights.params_total;
  j["params_per_gpu"] = p.weights.params_per_gpu;
  j["weights_bytes_per_gpu"] = p.weights.bytes_per_gpu;
  nlohmann::json comps = nlohmann::json::array();
  for (const ComponentWeights& c : p.weights.components) {
    comps.push_back({{"component", ComponentName(c.component)},
                     {"format", FormatName(c.format)},
                     {"params_total", c.params_total},
                     {"params_per_gpu", c.params_per_gpu},
                     {"bytes_per_gpu", c.bytes_per_gpu},
                     {"scale_bytes_per_gpu", c.scale_bytes_per_gpu}});
  }
  j["weights_by_component"] = comps;
  nlohmann::json quantized = nlohmann::json::array();
  for (Component c : card.QuantizedBy(q.precision.weights)) quantized.push_back(ComponentName(c));
  if (q.precision.weights != "default") j["weights_quantized_components"] = quantized;
  j["weights_resident_bytes_per_gpu"] = p.weights_resident_bytes;
  nlohmann::json terms = nlohmann::json::object();
  for (const MemoryTerm& t : p.terms) terms[t.key] = t.bytes;
  j["memory_bytes_per_gpu"] = terms;
  j["reserve_bytes_per_gpu"] = p.reserve_bytes_per_gpu;
  j["kv_pool_bytes_per_gpu"] = p.kv_pool_bytes_per_gpu;
  j["kv_bytes_per_token"] = p.kv.bytes_per_token;
  j["kv_main_bytes_per_token"] = p.kv.main_bytes_per_token;
  j["kv_indexer_bytes_per_token"] = p.kv.indexer_bytes_per_token;
  j["kv_scale_bytes_per_token"] = p.kv.scale_bytes_per_token;
  j["kv_tokens_per_rank"] = p.kv_tokens_per_rank;
  j["kv_capacity_tokens"] = p.kv_capacity_tokens;
  j["kv_tokens_lo"] = p.kv_tokens_lo;
  j["kv_tokens_hi"] = p.kv_tokens_hi;
  j["context_tokens"] = p.context_tokens;
  j["max_concurrent_requests"] = p.max_concurrent_requests;
  j["page_size_tokens"] = p.page_size;
  if (p.weights_shortfall_bytes > 0) j["weights_shortfall_bytes_per_gpu"] = p.weights_shortfall_bytes;
  if (p.hybrid.active()) j["hybrid_pools"] = HybridPoolsToJson(p);
  return j;
}

nlohmann::json KvRangeTermsToJson(const MemoryPlan& p) {
  nlohmann::json terms = nlohmann::json::array();
  for (const KvRangeTerm& t : p.kv_range_terms) {
    terms.push_back({{"term", t.key},
                     {"value", t.value},
                     {"range", {t.lo, t.hi}},
                     {"kv_tokens_at_range_lo", t.kv_tokens_at_lo},
                     {"kv_tokens_at_range_hi", t.kv_tokens_at_hi},
                     {"source", t.source}});
  }
  return terms;
}

namespace {

void PrintHybridPools(const MemoryPlan& p, std::ostream& out) {
  const HybridPools& h = p.hybrid;
  if (!h.active()) return;
  const int ranks = p.attention_ranks;
  out << "Hybrid pools: " << h.global_layers << " full-attention, " << h.local_layers
      << " window-limited, " << h.linear_layers << " linear-attention layers\n";
  if (h.block_tokens > 0) {
    out << "  one block pool: " << FormatInt(h.blocks_per_rank * ranks) << " blocks of "
        << h.block_tokens << " tokens x " << h.layers_per_group << " layers (groups: "
        << h.full_groups << " full, " << h.local_groups << " window, " << h.state_groups
        << " state); KV capacity counts the blocks as full-attention tokens\n";
    if (h.state_groups > 0) {
      out << "  state: " << h.state_groups << " blocks per running sequence (one per linear "
          << "group), " << FormatInt(h.state_bytes_per_sequence) << " B of state per sequence\n";
    }
  } else if (!h.linear_rule.empty()) {
    out << "  state pool: " << FormatInt(h.state_slots_per_rank * ranks) << " sequence states of "
        << FormatInt(h.state_bytes_per_sequence) << " B; a running request holds "
        << h.state_slots_per_request << ", so at most "
        << FormatInt(h.state_slots_per_rank / std::max<int64_t>(1, h.state_slots_per_request) * ranks)
        << " running requests\n";
  }
  if (h.local_tokens_per_rank > 0) {
    out << "  window-layer pool: " << FormatInt(h.local_tokens_per_rank * ranks)
        << " tokens beside the full-attention layers' " << FormatInt(p.kv_capacity_tokens) << "\n";
  }
}

// With --explain: each component a kernel rule lays out, shipped vs
// resident, and the rule with its source.
void PrintResidentWeights(const MemoryPlan& p, bool explain, std::ostream& out) {
  if (!explain || p.resident_weights.empty()) return;
  out << "\nweights shipped vs resident (as the engine's kernels keep them)\n";
  int64_t shipped = 0, resident = 0;
  for (const ResidentComponent& r : p.resident_weights) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-16s shipped %10s GiB  resident %10s GiB  ",
                  ComponentName(r.component), FormatGib(r.shipped_bytes).c_str(),
                  FormatGib(r.resident_bytes).c_str());
    out << line << r.rule_key << ": " << r.rule << "\n      source: " << r.source << "\n";
    shipped += r.shipped_bytes;
    resident += r.resident_bytes;
  }
  out << "  all weights: shipped " << FormatGib(p.weights.bytes_per_gpu) << " GiB, resident "
      << FormatGib(p.weights.bytes_per_gpu + resident - shipped) << " GiB per GPU ("
      << FormatInt(p.weights.bytes_per_gpu) << " B vs "
      << FormatInt(p.weights.bytes_per_gpu + resident - shipped) << " B)\n";
}

}  // namespace

void PrintPlanText(const ModelCard& card, const CapacityQuery& q, const MemoryPlan& p,
                   bool explain, std::ostream& out) {
  out << card.display_name << " (" << card.name << ") on " << q.layout.gpus << "x "
      << q.hardware_name << " (" << FormatGib(p.gpu_memory_bytes) << " GiB per GPU), "
      << LayoutText(q.layout) << ", weights " << q.precision.weights << ", KV "
      << DtypeName(q.precision.kv_cache) << "\n";
  char frac[16];
  std::snprintf(frac, sizeof frac, "%.4f", p.mem_fraction);
  out << "engine " << p.engine << " " << p.engine_version << " (rules of "
      << p.engine_rule_version << "): " << p.knob << " " << frac
      << (p.mem_fraction_defaulted ? " (engine default)" : " (given)") << ", page "
      << p.page_size << ", chunk " << p.chunked_prefill_tokens << ", NVLS "
      << (p.nvls ? "on" : "off") << "\n";
  if (!p.version_note.empty()) out << "  note: " << p.version_note << "\n";
  if (q.precision.weights != "default") {
    out << "  weights " << q.precision.weights << " re-quantizes:";
    for (Component c : card.QuantizedBy(q.precision.weights)) out << " " << ComponentName(c);
    auto src = card.quantize_source.find(q.precision.weights);
    out << (src != card.quantize_source.end() ? " (" + src->second + ")"
                                              : std::string(" (the card's quantizable set)"))
        << "\n";
  }
  out << "  rule: " << p.rule_source << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %-16s %16s %12s %12s\n", "weights per GPU", "format",
                "params", "GiB", "scales GiB");
  out << line;
  for (const ComponentWeights& c : p.weights.components) {
    std::snprintf(line, sizeof line, "%-16s %-16s %16s %12s %12s\n", ComponentName(c.component),
                  FormatName(c.format).c_str(), FormatInt(c.params_per_gpu).c_str(),
                  FormatGib(c.bytes_per_gpu + c.scale_bytes_per_gpu).c_str(),
                  FormatGib(c.scale_bytes_per_gpu).c_str());
    out << line;
  }
  PrintResidentWeights(p, explain, out);
  out << "\nmemory per GPU (terms add up to the device total)\n";
  for (const MemoryTerm& t : p.terms) {
    std::snprintf(line, sizeof line, "  %-28s %10s GiB  %s\n", t.key.c_str(),
                  FormatGib(static_cast<double>(t.bytes)).c_str(), t.what.c_str());
    out << line;
    if (explain) out << "      source: " << t.source << "\n";
  }
  std::snprintf(line, sizeof line, "  %-28s %10s GiB\n\n", "total",
                FormatGib(static_cast<double>(p.gpu_memory_bytes)).c_str());
  out << line;
  out << "KV bytes per token (one attention rank): " << FormatInt(p.kv.bytes_per_token)
      << " (latent/KV " << FormatInt(p.kv.main_bytes_per_token) << ", indexer "
      << FormatInt(p.kv.indexer_bytes_per_token) << ", of which scales "
      << FormatInt(p.kv.scale_bytes_per_token) << ")\n";
  out << "KV capacity: " << FormatInt(p.kv_capacity_tokens) << " tokens (" << p.attention_ranks
      << " attention rank" << (p.attention_ranks > 1 ? "s" : "") << " x "
      << FormatInt(p.kv_tokens_per_rank) << ")\n";
  PrintKvRange(p, explain, out);
  PrintHybridPools(p, out);
  out << "Concurrent requests of " << FormatInt(p.context_tokens)
      << " tokens that fit: " << FormatInt(p.max_concurrent_requests) << "\n";
}

Status RunCapacityTable(const CapacityQuery& q, bool json, CommandContext& ctx) {
  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream text;
  char line[512];
  const std::string ctx_col = "req@" + std::to_string(q.context_tokens);
  std::snprintf(line, sizeof line, "%-16s %-4s %10s %10s %11s %14s %10s\n", "model", "kv",
                "weights", "KV B/tok", "KV pool", "KV tokens", ctx_col.c_str());
  text << "# " << q.layout.gpus << "x " << q.hardware_name << ", " << LayoutText(q.layout)
       << ", engine " << q.engine.engine << ", weights " << q.precision.weights
       << "; GiB per GPU\n"
       << line;
  for (const std::string& name : ShippedModelNames()) {
    CAPPLAN_ASSIGN_OR_RETURN(ModelCard card, LoadModelCard(name));
    for (Dtype kv : {Dtype::kBf16, Dtype::kFp8E4m3}) {
      CapacityQuery cq = q;
      cq.precision.kv_cache = kv;
      // A context beyond the model's window is clipped to it, so every card gets a row.
      cq.context_tokens = std::min<int64_t>(q.context_tokens, card.max_position_embeddings);
      auto plan = PlanMemoryAllowShortfall(card, cq.layout, cq.precision, cq.engine, cq.device,
                                           cq.context_tokens);
      if (!plan.ok()) {
        if (plan.status().code() != StatusCode::kInvalidConfig) return plan.status();
        // An impossible layout for this card (TP not dividing heads): say so.
        rows.push_back({{"model", name}, {"kv_dtype", DtypeName(kv)}, {"fits", false},
                        {"error", plan.status().message()}});
        std::snprintf(line, sizeof line, "%-16s %-4s %s\n", name.c_str(), DtypeName(kv),
                      plan.status().message().c_str());
        text << line;
        continue;
      }
      const MemoryPlan& p = *plan;
      nlohmann::json row = PlanToJson(card, cq, p);
      row["fits"] = p.weights_shortfall_bytes == 0;
      rows.push_back(row);
      if (p.weights_shortfall_bytes > 0) {
        std::snprintf(line, sizeof line, "%-16s %-4s %10s %10s   does not fit: needs %s GiB more per GPU\n",
                      name.c_str(), DtypeName(kv), FormatGib(p.weights_resident_bytes).c_str(),
                      FormatInt(p.kv.bytes_per_token).c_str(),
                      FormatGib(p.weights_shortfall_bytes).c_str());
      } else {
        std::snprintf(line, sizeof line, "%-16s %-4s %10s %10s %11s %14s %10s\n", name.c_str(),
                      DtypeName(kv), FormatGib(p.weights_resident_bytes).c_str(),
                      FormatInt(p.kv.bytes_per_token).c_str(),
                      FormatGib(p.kv_pool_bytes_per_gpu).c_str(),
                      FormatInt(p.kv_capacity_tokens).c_str(),
                      FormatInt(p.max_concurrent_requests).c_str());
      }
      text << line;
    }
  }
  if (json) {
    *ctx.out << DumpJson(rows) << "\n";
  } else {
    *ctx.out << text.str();
  }
  return Status::Ok();
}

}  // namespace capplan::models
