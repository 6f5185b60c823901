#include "models/expert_parallel.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/op_ids.h"
#include "models/ops.h"

namespace capplan::models {

namespace {

// FP8 activations carry one FP32 scale per 128 values.
constexpr int64_t kScaleBlock = 128;

double AlignUp16(double bytes) { return std::ceil(bytes / 16.0) * 16.0; }

// GPUs of the EP group that share one NVLink domain, and the domains.
int DomainRanks(const ParallelLayout& l) { return std::max(1, std::min(l.ep, l.NvlinkGpus())); }

}  // namespace

const char* AllToAllModeName(AllToAllMode m) {
  switch (m) {
    case AllToAllMode::kCollective: return "collective";
    case AllToAllMode::kLowLatency: return "low_latency";
    case AllToAllMode::kNormal: return "normal";
  }
  return "?";
}

const char* MoeAllToAllName(MoeAllToAll a) {
  return a == MoeAllToAll::kDeepEp ? "deepep" : "collective";
}

const char* DeepEpModeName(DeepEpMode m) {
  switch (m) {
    case DeepEpMode::kAuto: return "auto";
    case DeepEpMode::kLowLatency: return "low_latency";
    case DeepEpMode::kNormal: return "normal";
  }
  return "?";
}

double LowLatencyDispatchBytes(int64_t hidden) {
  return 16.0 + double(hidden) + 4.0 * double(hidden / kScaleBlock);
}

double LowLatencyCombineBytes(int64_t hidden) { return 2.0 * double(hidden); }

double NormalDispatchBytes(int64_t hidden, int top_k) {
  return AlignUp16(double(hidden) + 8.0 + 4.0 * double(hidden / kScaleBlock) + 8.0 * top_k);
}

double NormalCombineBytes(int64_t hidden, int top_k) {
  return AlignUp16(2.0 * double(hidden) + 8.0 + 4.0 * top_k);
}

double TokenHitsExperts(int experts, int top_k, int s) {
  if (s <= 0 || top_k <= 0 || experts <= 0) return 0;
  if (s + top_k > experts) return 1;
  double miss = 1;  // C(E-s, k) / C(E, k) = prod_i (E-s-i) / (E-i)
  for (int i = 0; i < top_k; ++i) miss *= double(experts - s - i) / double(experts - i);
  return 1 - miss;
}

AllToAllMode ExchangeMode(const ParallelLayout& l, bool step_has_prefill) {
  if (l.expert.all_to_all != MoeAllToAll::kDeepEp) return AllToAllMode::kCollective;
  switch (l.expert.deepep_mode) {
    case DeepEpMode::kLowLatency: return AllToAllMode::kLowLatency;
    case DeepEpMode::kNormal: return AllToAllMode::kNormal;
    case DeepEpMode::kAuto: break;
  }
  return step_has_prefill ? AllToAllMode::kNormal : AllToAllMode::kLowLatency;
}

namespace {

// Messages per EP rank over each fabric, before their size.
AllToAllTraffic Messages(const ModelCard& card, const ParallelLayout& l, double tokens,
                         AllToAllMode mode) {
  AllToAllTraffic t;
  t.mode = mode;
  const int ep = std::max(1, l.ep), d = DomainRanks(l), domains = std::max(1, ep / d);
  const int experts = card.n_routed_experts, k = card.experts_per_token;
  if (mode == AllToAllMode::kLowLatency) {
    t.nvlink_bytes = tokens * k * double(d - 1) / ep;
    t.rdma_bytes = tokens * k * double(ep - d) / ep;
  } else {
    const int per_rank = experts / ep;
    t.nvlink_bytes = tokens * domains * (d - 1) * TokenHitsExperts(experts, k, per_rank);
    t.rdma_bytes = tokens * (domains - 1) * TokenHitsExperts(experts, k, per_rank * d);
  }
  return t;
}

AllToAllTraffic Scaled(AllToAllTraffic t, double bytes_per_message, double hot) {
  t.nvlink_bytes *= bytes_per_message * hot;
  t.rdma_bytes *= bytes_per_message * hot;
  return t;
}

}  // namespace

AllToAllTraffic DispatchTraffic(const ModelCard& card, const ParallelLayout& l,
                                double tokens_per_rank, AllToAllMode mode) {
  const int64_t h = card.hidden_size;
  const double msg = mode == AllToAllMode::kLowLatency
                         ? LowLatencyDispatchBytes(h)
                         : NormalDispatchBytes(h, card.experts_per_token);
  return Scaled(Messages(card, l, tokens_per_rank, mode), msg, HotExpertFactor(l));
}

AllToAllTraffic CombineTraffic(const ModelCard& card, const ParallelLayout& l,
                               double tokens_per_rank, AllToAllMode mode) {
  const int64_t h = card.hidden_size;
  const double msg = mode == AllToAllMode::kLowLatency
                         ? LowLatencyCombineBytes(h)
                         : NormalCombineBytes(h, card.experts_per_token);
  return Scaled(Messages(card, l, tokens_per_rank, mode), msg, HotExpertFactor(l));
}

double PlacementImbalance(const std::vector<double>& load, int ep, int redundant) {
  const int experts = static_cast<int>(load.size());
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  if (ep <= 0 || experts == 0 || total <= 0) return 1;
  if (redundant > 0 && (experts + redundant) % ep != 0) return 1;
  std::vector<double> rank(ep, 0.0);
  if (redundant <= 0) {
    // Contiguous, the first experts % ep ranks holding one more.
    const int base = experts / ep, extra = experts % ep;
    for (int r = 0, e = 0; r < ep; ++r) {
      for (int i = 0; i < base + (r < extra ? 1 : 0); ++i) rank[r] += load[e++];
    }
    return *std::max_element(rank.begin(), rank.end()) / (total / ep);
  }
  // EPLB: each redundant slot replicates the expert whose replicas carry the
  // most load each; then the heaviest replicas go first, each to the least
  // loaded rank with a free slot.
  std::vector<int> copies(experts, 1);
  for (int i = 0; i < redundant; ++i) {
    int best = 0;
    for (int e = 1; e < experts; ++e) {
      if (load[e] / copies[e] > load[best] / copies[best]) best = e;
    }
    ++copies[best];
  }
  std::vector<double> replicas;
  for (int e = 0; e < experts; ++e) replicas.insert(replicas.end(), copies[e], load[e] / copies[e]);
  std::sort(replicas.begin(), replicas.end(), std::greater<>());
  const size_t slots = replicas.size() / ep;
  std::vector<size_t> used(ep, 0);
  for (double w : replicas) {
    int pick = -1;
    for (int r = 0; r < ep; ++r) {
      if (used[r] < slots && (pick < 0 || rank[r] < rank[pick])) pick = r;
    }
    rank[pick] += w;
    ++used[pick];
  }
  return *std::max_element(rank.begin(), rank.end()) / (total / ep);
}

double HotExpertFactor(const ParallelLayout& l) {
  const ExpertPlacement& x = l.expert;
  if (x.expert_load.empty()) return x.hot_expert_factor;
  return PlacementImbalance(x.expert_load, l.ep, x.redundant_experts);
}

ExpertRankLoad BusiestExpertRank(const ModelCard& card, const ParallelLayout& l, double tokens) {
  const int ep = std::max(1, l.ep);
  const int experts = card.n_routed_experts, k = card.experts_per_token;
  const int redundant = l.expert.redundant_experts;
  const double hot = HotExpertFactor(l);
  ExpertRankLoad out;
  out.rows = tokens * k / ep;
  if (redundant == 0 && hot == 1.0) {
    out.touched_experts = ExpectedUniqueExperts(tokens, k, experts) / ep;
    return out;
  }
  // Each of the E + R physical slots is picked like an expert of E + R.
  const int slots = l.ExpertSlotsPerRank(experts), physical = experts + redundant;
  out.rows *= hot;
  out.touched_experts = slots * (1.0 - std::pow(1.0 - double(k) / physical, hot * tokens));
  return out;
}

namespace {

void SetExchange(const ModelCard& card, const ParallelLayout& l, double tokens_per_rank,
                 bool dispatch, AllToAllMode mode, Op* op) {
  op->a2a = dispatch ? DispatchTraffic(card, l, tokens_per_rank, mode)
                     : CombineTraffic(card, l, tokens_per_rank, mode);
  op->message_bytes = op->a2a.nvlink_bytes + op->a2a.rdma_bytes;
  op->bytes = 2 * op->message_bytes;  // read the input, write the result
}

// The balanced grouped GEMM the op builder wrote, moved to the busiest
// rank: rows and touched experts replaced, one expert's weight bytes kept.
void LoadBusiestRank(const ModelCard& card, const ParallelLayout& l, double tokens, Op* op) {
  const int ep = std::max(1, l.ep);
  const double rows = tokens * card.experts_per_token / ep;
  const double touched = ExpectedUniqueExperts(tokens, card.experts_per_token,
                                               card.n_routed_experts) / ep;
  if (rows <= 0 || touched <= 0) return;
  const double act = 2.0 * rows * op->k * 2;  // BF16 rows in and out
  const double w_expert = (op->bytes - act) / touched;
  const ExpertRankLoad busy = BusiestExpertRank(card, l, tokens);
  op->m = static_cast<int64_t>(std::ceil(busy.rows));
  op->groups = static_cast<int64_t>(std::llround(busy.touched_experts));
  op->flops *= busy.rows / rows;
  op->bytes = busy.touched_experts * w_expert + act * busy.rows / rows;
}

}  // namespace

void ApplyExpertParallel(const ShardedModel& model, const BatchShape& batch,
                         std::vector<Op>* ops) {
  const ParallelLayout& l = model.layout;
  const ModelCard& card = model.card;
  const bool deepep = l.expert.all_to_all == MoeAllToAll::kDeepEp;
  const bool skewed = HotExpertFactor(l) != 1.0 || l.expert.redundant_experts > 0;
  if (!card.IsMoe() || l.ep <= 1 || (!deepep && !skewed)) return;
  const double tokens = double(batch.TotalTokens()) * l.AttentionRanks();
  const double per_rank = double(std::max<int64_t>(1, int64_t(tokens) / l.tp));
  const AllToAllMode mode = ExchangeMode(l, !batch.prefill.empty());
  for (Op& op : *ops) {
    if (op.name == op_ids::kMoeDispatch || op.name == op_ids::kMoeCombine) {
      if (deepep) SetExchange(card, l, per_rank, op.name == op_ids::kMoeDispatch, mode, &op);
    } else if (op.name == op_ids::kMoeExperts) {
      if (skewed) LoadBusiestRank(card, l, tokens, &op);
    }
  }
}

Status CheckExpertPlacement(const ModelCard& card, const ParallelLayout& l) {
  const ExpertPlacement& x = l.expert;
  const bool placed = x.all_to_all == MoeAllToAll::kDeepEp || x.redundant_experts > 0 ||
                      x.hot_expert_factor != 1.0 || !x.expert_load.empty();
  if (!placed) return Status::Ok();
  if (!card.IsMoe() || l.ep <= 1) {
    return Status::Invalid("expert_parallel: needs an MoE model with ep > 1 (got ep " +
                           std::to_string(l.ep) + ", model " + card.name +
                           "); remove the block or set ep");
  }
  if (x.all_to_all == MoeAllToAll::kDeepEp && l.ep != l.tp) {
    return Status::Invalid("expert_parallel/all_to_all: deepep runs one EP rank per GPU: ep " +
                           std::to_string(l.ep) + " must equal tp " + std::to_string(l.tp) +
                           "; set ep " + std::to_string(l.tp) + " or all_to_all \"collective\"");
  }
  if (!x.expert_load.empty() &&
      static_cast<int>(x.expert_load.size()) != card.n_routed_experts) {
    return Status::Invalid("expert_parallel/expert_load: has " +
                           std::to_string(x.expert_load.size()) + " entries; " + card.name +
                           " has " + std::to_string(card.n_routed_experts) +
                           " routed experts, give one load per expert");
  }
  if (x.redundant_experts > card.n_routed_experts) {
    return Status::Invalid("expert_parallel/redundant_experts: " +
                           std::to_string(x.redundant_experts) + " is more than the " +
                           std::to_string(card.n_routed_experts) +
                           " routed experts each redundant one replicates; lower it");
  }
  return Status::Ok();
}

Status CheckExpertSplit(const ModelCard& card, const ParallelLayout& l,
                        const EngineProfile& engine) {
  const int routed = card.n_routed_experts, redundant = l.expert.redundant_experts;
  if (!card.IsMoe() || l.ep <= 1) return Status::Ok();
  const std::string who = engine.engine + " " + engine.version;
  if (redundant > 0 && !engine.expert_split.redundant_experts) {
    return Status::Invalid("expert_parallel/redundant_experts: " + who +
                           " runs no redundant experts (models/engines/" + engine.engine +
                           ".json expert_parallel); remove it or choose a later engine_version");
  }
  const int physical = routed + redundant;
  if (physical % l.ep == 0) return Status::Ok();
  if (redundant == 0 && engine.expert_split.uneven_without_redundant) return Status::Ok();
  const int fill = l.ep - physical % l.ep;
  return Status::Invalid(
      "expert_parallel/redundant_experts: " + std::to_string(routed) + " routed + " +
      std::to_string(redundant) + " redundant experts do not divide over ep " +
      std::to_string(l.ep) + "; " + who + " places (routed + redundant) / ep on every rank " +
      "(models/engines/" + engine.engine + ".json expert_parallel): set it to " +
      std::to_string(redundant + fill) + " (" +
      std::to_string(physical + fill) + " = " + std::to_string((physical + fill) / l.ep) + " x " +
      std::to_string(l.ep) + "), or an ep that divides " + std::to_string(physical));
}

namespace {

std::string Num(int v) { return std::to_string(v); }

}  // namespace

Status CheckFabric(const ParallelLayout& l, const hw::HardwareProfile& p) {
  const int domain = p.nvlink_domain_gpus;
  if (l.expert.all_to_all == MoeAllToAll::kDeepEp && !p.has_deepep) {
    return Status::Invalid("expert_parallel/all_to_all: deepep needs the profile's "
                           "collectives.deepep block; " + p.name +
                           " has none: add it to its base profile, or use \"collective\"");
  }
  // One node holds at most one NVLink domain's GPUs (an HGX board's 8): a
  // larger instance spans nodes, whose links price its collectives.
  if (domain > 0 && l.GpusPerNode() > domain) {
    return Status::Invalid("gpus_per_node: " + Num(l.GpusPerNode()) + " GPUs exceeds the " +
                           Num(domain) + " one " + p.name + " NVLink domain joins; set " +
                           "gpus_per_node " + Num(domain) + " and nodes " +
                           Num((l.gpus + domain - 1) / domain));
  }
  if (l.nodes <= 1) return Status::Ok();
  if (l.node_link == NodeLink::kNvlink && l.gpus > domain) {
    return Status::Invalid(
        "node_link: nvlink across " + Num(l.nodes) + " nodes needs one NVLink domain of " +
        Num(l.gpus) + " GPUs; " + p.name + "'s joins " + Num(domain) + " (form_factor " +
        (p.form_factor.empty() ? std::string("unknown") : p.form_factor) +
        "); use node_link \"rdma\", or a rack profile such as gb200-nvl72");
  }
  if (l.node_link == NodeLink::kRdma && p.rdma_bytes_per_s <= 0) {
    return Status::Invalid("node_link: rdma needs the profile's collectives.rdma_bytes_per_s; " +
                           p.name + " has none");
  }
  return Status::Ok();
}

}  // namespace capplan::models
