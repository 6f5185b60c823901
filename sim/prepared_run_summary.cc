// The pool's part of the run summary (sim/simulate.h keys): deployment,
// memory, time shares, prefix cache, speculative decoding, warnings.
#include <string>
#include <vector>

#include "common/json_util.h"
#include "models/expert_parallel.h"
#include "sim/energy.h"
#include "sim/prediction_intervals.h"
#include "sim/prepared_run.h"
#include "sim/prepared_run_state.h"

namespace capplan::sim {

void PreparedRun::AddDeployment(schema::PoolSummary* p) const {
  const DeploymentSpec& d = st_->deployment();
  const models::MemoryPlan& plan = *st_->plan;
  p->deployment = {{"engine", d.engine},
                   {"engine_version", plan.engine_version},
                   {"gpus", d.gpus},
                   {"tp", d.tp},
                   {"ep", d.ep},
                   {"dp_attention", d.dp_attention},
                   {"attention_ranks", st_->layout.AttentionRanks()},
                   {"replicas", d.replicas},
                   {"weights", d.weights},
                   {"kv_cache", models::DtypeName(d.kv_cache)},
                   {"page_size", plan.page_size},
                   {"kv_integrity", KvIntegrityName(d.kv_integrity)},
                   {"phase", PhaseName(d.phase)},
                   {"scheduler", st_->cfg.scheduler},
                   {"router", d.router},
                   {"chunked_prefill_tokens", plan.chunked_prefill_tokens},
                   {"max_running_requests", st_->mrr},
                   {"cuda_graphs", d.cuda_graphs},
                   {"cuda_graph_max_bs", st_->cgbs},
                   {"overlap_schedule", st_->overlap},
                   {"two_batch_overlap", d.two_batch_overlap},
                   {"mem_fraction_static", plan.mem_fraction},
                   {"cost_model", d.cost_model},
                   {"memory_rule", plan.rule_source}};
  // Which engine release priced the run, when the scenario did not say, or
  // when the release it named has no entry of its own.
  if (d.engine_version.empty()) {
    p->deployment["engine_version_note"] = "the scenario names no engine_version: " + d.engine +
                                 "'s newest entry (" + plan.engine_version +
                                 ") prices it; set deployment.engine_version to the release you run";
  } else if (!d.engine_resolution.note.empty()) {
    p->deployment["engine_version_note"] = d.engine_resolution.note;
  }
  if (d.kv_tiers.has_host()) p->deployment["kv_tiers"] = KvTiersJson(d.kv_tiers);
  if (d.dense_ffn_per_dp_rank) p->deployment["dense_ffn_per_dp_rank"] = *d.dense_ffn_per_dp_rank;
  if (d.lm_head_per_dp_rank) p->deployment["lm_head_per_dp_rank"] = *d.lm_head_per_dp_rank;
  if (d.nodes > 1 || d.expert.all_to_all != models::MoeAllToAll::kCollective) {
    p->deployment["nodes"] = d.nodes;
    p->deployment["gpus_per_node"] = d.gpus_per_node;
    p->deployment["node_link"] = d.node_link == models::NodeLink::kNvlink ? "nvlink" : "rdma";
    p->deployment["expert_parallel"] = {
        {"all_to_all", models::MoeAllToAllName(d.expert.all_to_all)},
        {"deepep_mode", models::DeepEpModeName(d.expert.deepep_mode)},
        {"redundant_experts", d.expert.redundant_experts},
        {"hot_expert_factor", models::HotExpertFactor(st_->layout)}};
  }
}

void PreparedRun::AddMemory(schema::PoolSummary* p) const {
  const models::MemoryPlan& plan = *st_->plan;
  p->kv_bytes_per_token = plan.kv.bytes_per_token;
  schema::Memory& mem = p->memory.emplace();
  mem.weights_bytes_per_gpu = plan.weights.bytes_per_gpu;
  auto& comps = mem.weights_by_component_bytes.emplace();
  for (const auto& c : plan.weights.components) {
    comps[models::ComponentName(c.component)] = c.bytes_per_gpu + c.scale_bytes_per_gpu;
  }
  mem.reserve_bytes_per_gpu = plan.reserve_bytes_per_gpu;
  mem.kv_pool_bytes_per_gpu = plan.kv_pool_bytes_per_gpu;
  mem.gpu_memory_bytes = plan.gpu_memory_bytes;
  mem.mem_fraction_static = plan.mem_fraction;
  mem.mem_fraction_defaulted = plan.mem_fraction_defaulted;
  mem.kv_tokens_per_rank = plan.kv_tokens_per_rank;
  mem.kv_tokens_lo = plan.kv_tokens_lo;
  mem.kv_tokens_hi = plan.kv_tokens_hi;
  if (plan.draft_weights_bytes > 0) mem.draft_weights_bytes_per_gpu = plan.draft_weights_bytes;
  auto& terms = mem.terms_bytes_per_gpu.emplace();
  for (const models::MemoryTerm& t : plan.terms) terms[t.key] += t.bytes;
}

void PreparedRun::AddTimeShares(const SimResult& sim, schema::PoolSummary* p) const {
  const StepCost& b = sim.busy;
  const double tot = b.seconds > 0 ? b.seconds : 1;
  auto& share = p->op_time_share.emplace();
  for (int i = 0; i < kNumOpClasses; ++i) {
    share[models::OpClassName(static_cast<models::OpClass>(i))] = b.class_seconds[i] / tot;
  }
  auto& bshare = p->bound_time_share.emplace();
  for (int i = 0; i < kNumBounds; ++i) {
    bshare[BoundName(static_cast<Bound>(i))] = b.bound_seconds[i] / tot;
  }
  p->kv_verify_time_share = b.verify_seconds / tot;
  if (b.drift_seconds > 0) p->cross_version_drift = b.drift_seconds / tot;
  SetProvenance(b, p);
  p->iterations = sim.iterations;
  p->busy_s = b.seconds;
}

void PreparedRun::AddPower(const SimResult& sim, schema::PoolSummary* p) const {
  const DeploymentSpec& d = st_->deployment();
  if (d.power_limit_w) p->deployment["power_limit_w"] = *d.power_limit_w;
  const double span_s = static_cast<double>(sim.end_ns) / 1e9;
  AddPoolPower(PoolPowerOf(st_->profile.power, sim.busy, d.gpus, d.replicas, span_s,
                           d.power_limit_w.value_or(0)),
               p);
}

void PreparedRun::AddPrefixCache(const SimResult& sim, schema::PoolSummary* p) const {
  if (!st_->cfg.prefix_cache || st_->cfg.prefix_self_only) return;
  p->prefix_cache_hit_rate = sim.prefix_prompt_tokens > 0
                                 ? static_cast<double>(sim.prefix_hit_tokens) /
                                       static_cast<double>(sim.prefix_prompt_tokens)
                                 : 0.0;
  p->prefill_tokens_saved = sim.prefix_hit_tokens;
  p->cached_kv_tokens_peak = sim.prefix_cached_tokens_peak;
  p->prefix_cache_evicted_blocks = sim.prefix_evicted_blocks;
  const SimConfig::HostTier& h = st_->cfg.host_tier;
  if (h.blocks_per_rank == 0) return;
  const double gib = h.bytes_per_block / kBytesPerGiB;
  p->host_cache_hit_rate = sim.prefix_prompt_tokens > 0
                               ? static_cast<double>(sim.host_hit_tokens) /
                                     static_cast<double>(sim.prefix_prompt_tokens)
                               : 0.0;
  p->host_kv_loaded_gib = static_cast<double>(sim.host_loaded_blocks) * gib;
  p->host_kv_written_gib = static_cast<double>(sim.host_written_blocks) * gib;
  p->host_kv_peak_gib = static_cast<double>(sim.host_blocks_peak) * gib;
  p->host_kv_evicted_blocks = sim.host_evicted_blocks;
  p->kv_load_stall_s = sim.busy.kv_load_seconds;
}

void PreparedRun::AddSpeculative(const SimResult& sim, schema::PoolSummary* p) const {
  const speculative::Spec& spec = st_->deployment().speculative;
  if (!spec.on()) return;
  const StepCost& b = sim.busy;
  const double tot = b.seconds > 0 ? b.seconds : 1;
  p->deployment["speculative"] = {
      {"method", speculative::MethodName(spec.method)},
      {"draft_tokens", spec.draft_tokens()},
      {"draft_layers", st_->draft->card.num_layers},
      {"acceptance", spec.acceptance.p},
      {"expected_accept_length", spec.acceptance.ExpectedTokensPerStep()}};
  p->accept_length_mean = sim.spec_decode_steps > 0 ? static_cast<double>(sim.spec_emitted_tokens) /
                                                          static_cast<double>(sim.spec_decode_steps)
                                                    : 0.0;
  p->spec_verify_time_share = b.spec_verify_seconds / tot;
  p->spec_draft_time_share = b.draft_seconds / tot;
}

std::vector<std::string> PreparedRun::Warnings(const SimResult& sim, int64_t failed) const {
  std::vector<std::string> warnings;
  for (const auto& w : st_->pricer->warnings()) warnings.push_back(w);
  if (failed > 0) {
    warnings.push_back(std::to_string(failed) +
                       " request(s) failed: they can never fit one attention rank's KV pool (" +
                       std::to_string(st_->plan->kv_tokens_per_rank) + " tokens)");
  }
  if (sim.trace_truncated) warnings.push_back("trace truncated to the first iterations");
  return warnings;
}

// One of several pools: its pages (reserved and held pages carry no tokens
// yet, or any more, but are taken all the same), its utilization and its
// own requests; the in-flight peak and the step memo are the run's.
void PreparedRun::AddLinkedPool(const SimResult& sim, const PoolTally& tally,
                                schema::PoolSummary* p) const {
  p->max_concurrent_requests.reset();
  p->kv_verify_time_share.reset();
  p->simulator.emplace().fast_forward_iterations = sim.fast_forward_iterations;
  p->simulator->fast_forward_completions = sim.fast_forward_completions;
  p->completed = tally.completed;
  p->failed = tally.failed_here;
  p->kv_pages_per_rank = sim.kv_pages_per_rank;
  p->peak_kv_pages_per_rank = sim.peak_kv_pages_per_rank;
  p->peak_kv_page_fraction =
      sim.kv_pages_per_rank
          ? static_cast<double>(sim.peak_kv_pages_per_rank) / sim.kv_pages_per_rank
          : 0.0;
  p->peak_transfer_pages = sim.peak_transfer_pages;
  // Over the whole simulated span (warmup included, as busy_s is): dividing
  // by the measured duration_s, which leaves warmup out, could exceed 1.
  // busy_s sums every replica's iterations, so divide by replicas.
  const double span_s = static_cast<double>(sim.end_ns) / 1e9;
  p->utilization =
      span_s > 0 ? p->busy_s.value_or(0.0) / (st_->deployment().replicas * span_s) : 0.0;
}

schema::PoolSummary PreparedRun::SummarizePool(const SimResult& sim, const PoolTally& tally,
                                               bool linked) const {
  schema::PoolSummary p;
  p.role = schema::PoolRole::kBoth;
  AddDeployment(&p);
  p.gpus = gpus();
  p.kv_capacity_tokens = sim.kv_capacity_tokens_per_replica;
  p.peak_kv_tokens = sim.peak_kv_tokens;
  p.peak_kv_fraction =
      sim.kv_capacity_tokens_per_replica
          ? static_cast<double>(sim.peak_kv_tokens) / sim.kv_capacity_tokens_per_replica
          : 0.0;
  p.max_concurrent_requests = sim.max_concurrent_requests;
  p.max_running_requests_observed = sim.max_running_requests;
  p.retractions = sim.retractions;
  AddPrefixCache(sim, &p);
  p.kv_bound = sim.kv_bound;
  AddMemory(&p);
  AddTimeShares(sim, &p);
  AddSpeculative(sim, &p);
  AddPower(sim, &p);
  schema::SimulatorStats& stats = p.simulator.emplace();
  stats.step_cost_memo_hits = st_->pricer->hits();
  stats.step_cost_memo_misses = st_->pricer->misses();
  stats.fast_forward_iterations = sim.fast_forward_iterations;
  stats.fast_forward_completions = sim.fast_forward_completions;
  stats.context_bucket_relative_error = 1.0 / 512;
  stats.itl_histogram_relative_error = 1.0 / 256;
  stats.simulated_end_s = static_cast<double>(sim.end_ns) / 1e9;
  p.warnings = Warnings(sim, linked ? tally.failed_here : tally.failed);
  if (linked) AddLinkedPool(sim, tally, &p);
  return p;
}

nlohmann::json PreparedRun::ReplicaTrace(const SimResult& sim) const {
  nlohmann::json ev = nlohmann::json::array();
  for (int i = 0; i < st_->deployment().replicas; ++i) {
    ev.push_back({{"name", "process_name"},
                  {"ph", "M"},
                  {"pid", i},
                  {"args", {{"name", "replica " + std::to_string(i)}}}});
  }
  for (const auto& e : sim.trace_events) ev.push_back(e);
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace capplan::sim
