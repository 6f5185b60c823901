#include "sim/step_explain.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "models/layer_program.h"
#include "models/ops.h"
#include "sim/cost_model.h"
#include "sim/prepared_run.h"
#include "sim/speculative/acceptance.h"
#include "sim/step_pricer.h"

namespace capplan::sim {

namespace {

// The explained batch's sizes: the options', or read off the workload.
ExplainOptions Resolve(const ExplainOptions& o, const Workload& w, const PreparedRun& run) {
  ExplainOptions r = o;
  double in = 0, out = 0;
  for (const RequestSpec& q : w.requests) in += q.input_tokens, out += q.output_tokens;
  const double n = std::max<double>(1, static_cast<double>(w.requests.size()));
  if (r.decode_batch <= 0) r.decode_batch = std::max<int64_t>(1, w.concurrency);
  if (r.decode_context <= 0) {
    r.decode_context = std::max<int64_t>(1, static_cast<int64_t>(in / n + out / n / 2));
  }
  if (r.prefill_tokens <= 0) {
    const int64_t chunk = run.config().sched.chunked_prefill_tokens;
    r.prefill_tokens = std::max<int64_t>(1, static_cast<int64_t>(in / n));
    if (chunk > 0) r.prefill_tokens = std::min(r.prefill_tokens, chunk);
  }
  return r;
}

std::string Shape(const models::Op& op) {
  char buf[96];
  if (op.kind == models::OpKind::kGroupedGemm) {
    std::snprintf(buf, sizeof(buf), "rows %lld, experts %lld, %lldx%lld",
                  static_cast<long long>(op.m), static_cast<long long>(op.groups),
                  static_cast<long long>(op.n), static_cast<long long>(op.k));
  } else if (op.op_class == models::OpClass::kAttention && op.kind != models::OpKind::kGemm) {
    std::snprintf(buf, sizeof(buf), "q %lld, kv %lld, heads %d", static_cast<long long>(op.q_tokens),
                  static_cast<long long>(op.kv_tokens), op.heads);
  } else if (op.participants > 0) {
    std::snprintf(buf, sizeof(buf), "%d ranks, %.3g B", op.participants, op.message_bytes);
  } else if (op.n > 0) {
    std::snprintf(buf, sizeof(buf), "%lldx%lldx%lld", static_cast<long long>(op.m),
                  static_cast<long long>(op.n), static_cast<long long>(op.k));
  } else {
    buf[0] = '-', buf[1] = '\0';
  }
  return buf;
}

// The host side of the step: each engine host cost, what the step waits
// for, and where the values come from (the engine version's entry).
void HostLines(const StepContext& ctx, double gpu, const models::EngineStepCosts& c,
               std::ostringstream* out) {
  const HostTime h = PriceHost(ctx, gpu);
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "Host: GPU %.1f us; host %.1f us; scheduling %.1f us for %lld requests (%s, "
                "%.1f us shown); output processing %.1f us for %lld tokens (%s); engine loop "
                "%.1f us; step %.1f us.\n",
                1e6 * gpu, 1e6 * h.host, 1e6 * h.schedule, static_cast<long long>(ctx.requests),
                ctx.overlap_schedule ? "overlapped with the GPU" : "serial", 1e6 * h.schedule_shown,
                1e6 * h.output, static_cast<long long>(ctx.tokens_out),
                ctx.output_separate ? "a process of its own: the step takes the longer stage"
                                    : "in the engine loop",
                1e6 * h.engine, 1e6 * h.step);
  *out << buf << "Host costs from " << c.engine << " " << c.version
       << "'s entry (models/engine_step_costs.json), measured on CPU: " << c.cpu << "\n";
  for (const auto& [key, source] : c.sources) *out << "  " << key << ": " << source << "\n";
}

// One step's table: every op with its price (a speculative draft's ops
// named `draft.`), the op total, then the step as the simulator prices it;
// with `tokens_per_step` > 0 (speculative decoding's expected tokens a
// request emits a step), that step's time per emitted token too.
// Where the op's kernel table was measured; an op priced for another
// engine release says so with the table's drift.
std::string MeasuredCell(const OpPrice& p) {
  if (p.cross_version.empty()) return p.measured_at;
  char drift[48];
  std::snprintf(drift, sizeof(drift), " (version drift %.1f%%)", 100 * p.version_drift);
  return std::string(kCrossVersionText) + " " + p.cross_version + drift;
}

void StepTable(const std::string& title, const StepWork& work, ModelStepPricer* pricer,
               const PreparedRun& run, const models::EngineStepCosts& costs,
               double tokens_per_step, std::ostringstream* out) {
  StepContext ctx;
  // A copy: Price() below may build another signature's ops in its place.
  const std::vector<models::Op> ops = pricer->StepOps(work, &ctx);
  const std::vector<OpPrice> prices = run.cost().ExplainOps(ops, ctx);
  std::ostringstream& os = *out;
  os << title << "\n| op | x | kernel / table | shape | bytes | FLOPs | time us | bound | "
     << "efficiency | source | measured at |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  double total = 0, draft = 0;
  for (size_t i = 0; i < ops.size() && i < prices.size(); ++i) {
    const models::Op& op = ops[i];
    const OpPrice& p = prices[i];
    total += p.seconds;
    if (op.draft) draft += p.seconds;
    char row[512];
    std::snprintf(row, sizeof(row),
                  "| %s%s | %lld | %s (%s) | %s | %.4g | %.4g | %.2f | %s | %.3f%s | %s |",
                  op.draft ? "draft." : "", op.name.c_str(), static_cast<long long>(op.count),
                  p.table.c_str(), p.table_kind.c_str(), Shape(op).c_str(), op.bytes, op.flops,
                  1e6 * p.seconds, BoundName(p.bound), p.efficiency,
                  p.in_range ? "" : " (extrapolated)", p.provenance.c_str());
    os << row << " " << MeasuredCell(p) << " |\n";
  }
  char sum[320];
  if (draft > 0) {
    std::snprintf(sum, sizeof(sum), "\nOps total %.1f us (draft %.1f us, verify %.1f us).\n",
                  1e6 * total, 1e6 * draft, 1e6 * (total - draft));
  } else {
    std::snprintf(sum, sizeof(sum), "\nOps total %.1f us.\n", 1e6 * total);
  }
  os << sum;
  const StepCost priced = pricer->Price(work);
  const double step = priced.seconds;
  std::snprintf(sum, sizeof(sum),
                "Step as the simulator prices it: %.1f us (%s, with launch and host costs).\n",
                1e6 * step, ctx.cuda_graph ? "CUDA graph" : "eager launches");
  os << sum;
  HostLines(ctx, total + priced.launch_seconds, costs, out);
  if (tokens_per_step > 0) {
    std::snprintf(sum, sizeof(sum),
                  "Each request emits %.3f tokens a step on average (the acceptance): %.1f us "
                  "per emitted token.\n",
                  tokens_per_step, 1e6 * step / tokens_per_step);
    os << sum;
  }
  os << "\n";
}

// The layer groups of a card whose layers are not all alike (linear or
// window-limited attention beside full attention): which layers run which
// of the step's ops. A uniform card's one group says nothing new.
void GroupTable(const PreparedRun& run, std::ostringstream* out) {
  const models::ShardedModel& m = run.sharded();
  if (!m.card.HasMixedLayers() || m.program == nullptr) return;
  const models::LayerProgram& p = *m.program;
  std::ostringstream& os = *out;
  os << "Layer groups (each layer runs its group's ops)\n| group | layers | first layers | ops |\n"
     << "|---|---|---|---|\n";
  for (const models::LayerGroup& g : p.groups) {
    std::string first, ops;
    for (size_t i = 0; i < g.layers.size() && i < 4; ++i) {
      first += (i ? ", " : "") + std::to_string(g.layers[i]);
    }
    if (g.layers.size() > 4) first += ", ...";
    for (int i : g.ops) ops += (ops.empty() ? "" : ", ") + p.layer_ops[i].id;
    os << "| " << g.name << " | " << g.layers.size() << " | " << first << " | " << ops << " |\n";
  }
  os << "\n";
}

}  // namespace

Result<std::string> ExplainSteps(const Scenario& scenario, const ExplainOptions& options) {
  std::ostringstream os;
  for (size_t pool = 0; pool < scenario.pools.size(); ++pool) {
    RunOptions ro;
    CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedRun> run, PrepareRun(scenario, pool, ro));
    const ExplainOptions e = Resolve(options, scenario.workload, *run);
    const std::string pool_name =
        scenario.pools.size() > 1 ? " (pool " + std::to_string(pool) + ")" : "";
    GroupTable(*run, &os);
    const DeploymentSpec& dep = scenario.pools[pool].deployment;
    for (const auto& [field, name] : dep.launch_backends) {
      const models::LaunchBackend& b =
          dep.engine_resolution.profile->launch_backends.at(field).choices.at(name);
      os << "Launch backend" << pool_name << ": " << field << " " << name
         << " (deployment; its kernels over " << dep.engine << " "
         << dep.engine_resolution.version << "'s own, models/engines/" << dep.engine
         << ".json launch_backends): " << b.source << "\n\n";
    }
    auto* pricer = dynamic_cast<ModelStepPricer*>(&run->pricer());
    if (pricer == nullptr) return Status::Internal("explain-step needs the model step pricer");
    const speculative::Spec& sp = scenario.pools[pool].deployment.speculative;
    const models::EngineStepCosts& costs = scenario.pools[pool].deployment.step_costs;
    const int64_t spec = sp.draft_tokens();
    StepWork decode;
    decode.decode_n = e.decode_batch;
    decode.decode_ctx_sum = e.decode_batch * e.decode_context;
    StepTable("Decode step" + pool_name + ": " + std::to_string(e.decode_batch) +
                  " requests at context " + std::to_string(e.decode_context) + " tokens" +
                  (spec > 0 ? ", verifying " + std::to_string(spec) + " draft tokens each" : "") +
                  ", per GPU",
              decode, pricer, *run, costs, spec > 0 ? sp.acceptance.ExpectedTokensPerStep() : 0,
              &os);
    StepWork prefill;
    prefill.prefill.push_back({e.prefill_tokens, e.prefill_cached});
    StepTable("Prefill step" + pool_name + ": one chunk of " + std::to_string(e.prefill_tokens) +
                  " new tokens after " + std::to_string(e.prefill_cached) +
                  " cached, per GPU",
              prefill, pricer, *run, costs, 0, &os);
  }
  return os.str();
}

}  // namespace capplan::sim
