#include "sim/cost_model.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <sstream>
#include <unordered_map>

#include "hw/formats.h"
#include "hw/op_pricing.h"
#include "models/expert_parallel.h"

namespace capplan::sim {

const char* BoundName(Bound b) {
  switch (b) {
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kCommunication: return "communication";
    case Bound::kOverhead: return "overhead";
  }
  return "?";
}

void StepCost::Add(const StepCost& o) {
  seconds += o.seconds;
  for (int i = 0; i < kNumOpClasses; ++i) class_seconds[i] += o.class_seconds[i];
  for (int i = 0; i < kNumBounds; ++i) bound_seconds[i] += o.bound_seconds[i];
  verify_seconds += o.verify_seconds;
  draft_seconds += o.draft_seconds;
  spec_verify_seconds += o.spec_verify_seconds;
  launch_seconds += o.launch_seconds;
  kv_load_seconds += o.kv_load_seconds;
  overlap_hidden_seconds += o.overlap_hidden_seconds;
  drift_seconds += o.drift_seconds;
  tensor_peak_seconds += o.tensor_peak_seconds;
  hbm_peak_seconds += o.hbm_peak_seconds;
  gpu_joules += o.gpu_joules;
  peak_gpu_w = std::max(peak_gpu_w, o.peak_gpu_w);
  for (int i = 0; i < kNumOpProvenances; ++i) {
    provenance_seconds[i] += o.provenance_seconds[i];
    spread_seconds[i] += o.spread_seconds[i];
  }
}

void StepCost::AddTimes(const StepCost& o, int64_t times) {
  const double k = static_cast<double>(times);
  seconds += k * o.seconds;
  for (int i = 0; i < kNumOpClasses; ++i) class_seconds[i] += k * o.class_seconds[i];
  for (int i = 0; i < kNumBounds; ++i) bound_seconds[i] += k * o.bound_seconds[i];
  verify_seconds += k * o.verify_seconds;
  draft_seconds += k * o.draft_seconds;
  spec_verify_seconds += k * o.spec_verify_seconds;
  launch_seconds += k * o.launch_seconds;
  kv_load_seconds += k * o.kv_load_seconds;
  overlap_hidden_seconds += k * o.overlap_hidden_seconds;
  drift_seconds += k * o.drift_seconds;
  tensor_peak_seconds += k * o.tensor_peak_seconds;
  hbm_peak_seconds += k * o.hbm_peak_seconds;
  gpu_joules += k * o.gpu_joules;
  if (times > 0) peak_gpu_w = std::max(peak_gpu_w, o.peak_gpu_w);
  for (int i = 0; i < kNumOpProvenances; ++i) {
    provenance_seconds[i] += k * o.provenance_seconds[i];
    spread_seconds[i] += k * o.spread_seconds[i];
  }
}

HostTime PriceHost(const StepContext& ctx, double gpu) {
  HostTime h;
  h.host = ctx.host_s;
  h.schedule = ctx.cpu_schedule_s + ctx.cpu_schedule_per_request_s * static_cast<double>(ctx.requests);
  // With an overlapping scheduler the next batch is prepared while the GPU
  // runs this one; only the excess shows. The host's per-step work
  // (sampling, the output copy) waits for this step's results, so no
  // overlap hides it.
  h.schedule_shown = ctx.overlap_schedule ? std::max(0.0, h.schedule - gpu) : h.schedule;
  h.output = ctx.cpu_output_per_token_s * static_cast<double>(ctx.tokens_out);
  h.engine = gpu + h.host + h.schedule_shown + (ctx.output_separate ? 0.0 : h.output);
  // A process of its own turns the engine's outputs into responses while
  // the engine runs the next steps; in steady state the slower stage sets
  // the pace at which tokens reach clients.
  h.step = ctx.output_separate ? std::max(h.engine, h.output) : h.engine;
  return h;
}

namespace {

// A warning names its op and shape up to this word; what follows is numbers.
constexpr const char* kShapeWord = " shape ";

bool HasPrefix(const std::set<std::string>& warnings, const std::string& prefix) {
  auto it = warnings.lower_bound(prefix);
  return it != warnings.end() && it->compare(0, prefix.size(), prefix) == 0;
}

// The profile's model that prices a collective op kind; nullptr for every
// other kind, priced through its family (PricingInput). No default: a new op
// kind fails the build (-Wswitch) until it is placed on one side, here and
// in models::IsCollective, which PriceOps routes by.
using CollectiveTable = hw::CollectiveModel hw::HardwareProfile::*;
CollectiveTable CollectiveTableOf(models::OpKind k) {
  switch (k) {
    case models::OpKind::kAllReduce: return &hw::HardwareProfile::all_reduce;
    case models::OpKind::kAllGather: return &hw::HardwareProfile::all_gather;
    case models::OpKind::kReduceScatter: return &hw::HardwareProfile::reduce_scatter;
    case models::OpKind::kAllToAll: return &hw::HardwareProfile::all_to_all;
    case models::OpKind::kGemm:
    case models::OpKind::kGroupedGemm:
    case models::OpKind::kRouter:
    case models::OpKind::kAttentionDecode:
    case models::OpKind::kAttentionPrefill:
    case models::OpKind::kMlaDecode:
    case models::OpKind::kMlaPrefill:
    case models::OpKind::kMlaPrefillAbsorbed:
    case models::OpKind::kDsaIndexer:
    case models::OpKind::kKvAppend:
    case models::OpKind::kKvVerify:
    case models::OpKind::kElementwise:
    case models::OpKind::kEmbedding:
    case models::OpKind::kSampling:
      return nullptr;
  }
  return nullptr;
}

class RooflineCostModel : public CostModel {
 public:
  explicit RooflineCostModel(const hw::HardwareProfile& p)
      : p_(p), architecture_(hw::ArchitectureIndex(p.architecture)) {}
  std::string name() const override { return "roofline"; }

  void SetPricedFor(const std::string& engine, const std::string& version) override {
    lookups_.clear();
    cross_.clear();
    for (const auto& [name, t] : p_.kernels) {
      std::string note = hw::CrossVersionNote(t, engine, version);
      if (note.empty()) continue;
      cross_[name] = {std::move(note), t.version_drift ? t.version_drift->value : 0.0};
    }
  }

  StepCost PriceOps(const std::vector<models::Op>& ops, const StepContext& ctx,
                    std::set<std::string>* warnings) const override {
    StepCost c;
    double gpu = 0;
    int64_t kernels = 0;
    const CrossVersion* cross = nullptr;
    for (const models::Op& op : ops) {
      const double n = static_cast<double>(std::max<int64_t>(op.count, 0));
      kernels += op.count;
      double t = 0;
      Bound bound = Bound::kMemory;
      OpSpread spread;
      if (models::IsCollective(op.kind)) {
        t = CollectiveSeconds(op, ctx);
        bound = Bound::kCommunication;
        spread.provenance = OpProvenance::kCollective;
      } else {
        double at_peak[2] = {0, 0};
        const auto [tc, tm] =
            ComputeAndMemorySeconds(op, warnings, nullptr, &cross, &spread, at_peak);
        t = std::max(tc, tm);
        bound = tc >= tm ? Bound::kCompute : Bound::kMemory;
        c.tensor_peak_seconds += at_peak[0] * n;
        c.hbm_peak_seconds += at_peak[1] * n;
      }
      t *= n;
      if (cross != nullptr) c.drift_seconds += t * cross->drift, cross = nullptr;
      c.provenance_seconds[static_cast<int>(spread.provenance)] += t;
      c.spread_seconds[static_cast<int>(spread.provenance)] += t * spread.sigma;
      gpu += t;
      c.class_seconds[static_cast<int>(op.op_class)] += t;
      c.bound_seconds[static_cast<int>(bound)] += t;
      if (op.kind == models::OpKind::kKvVerify) c.verify_seconds += t;
      if (op.draft) c.draft_seconds += t;
    }
    // Launch cost: a graph replay pays a fixed cost plus a small per-node
    // cost; eager execution pays a host launch per kernel.
    double launch = ctx.cuda_graph ? p_.graph_launch_s + p_.graph_node_s * kernels
                                   : p_.kernel_launch_s * kernels;
    gpu += launch;
    const HostTime h = PriceHost(ctx, gpu);
    const double overhead = launch + (h.step - gpu);
    c.class_seconds[static_cast<int>(models::OpClass::kOverhead)] += overhead;
    c.provenance_seconds[static_cast<int>(OpProvenance::kHost)] += overhead;
    c.bound_seconds[static_cast<int>(Bound::kOverhead)] += overhead;
    c.seconds = h.step;
    c.launch_seconds = launch;
    return c;
  }

  std::vector<OpPrice> ExplainOps(const std::vector<models::Op>& ops,
                                  const StepContext& ctx) const override {
    std::vector<OpPrice> out;
    out.reserve(ops.size());
    for (const models::Op& op : ops) {
      OpPrice p;
      if (models::IsCollective(op.kind)) {
        p.seconds = CollectiveSeconds(op, ctx);
        p.bound = Bound::kCommunication;
        p.table = "collectives";
        p.table_kind = CollectiveAlgorithm(op, ctx);
        p.provenance = "profile";
      } else {
        const auto [tc, tm] = ComputeAndMemorySeconds(op, nullptr, &p);
        p.seconds = std::max(tc, tm);
        p.bound = tc >= tm ? Bound::kCompute : Bound::kMemory;
      }
      p.seconds *= static_cast<double>(std::max<int64_t>(op.count, 0));
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  // A kernel table measured at another engine release than the deployment's.
  struct CrossVersion {
    std::string note;  // hw::CrossVersionNote
    double drift = 0;  // the table's version_drift (0: none given)
  };

  // An op's provenance class and, where its table has held-out fit errors,
  // its log-error spread (StepCost::spread_seconds).
  struct OpSpread {
    OpProvenance provenance = OpProvenance::kMeasured;
    double sigma = 0;
    bool assumed = false;  // priced by a table assumed from another kernel's
  };

  // Precedence: a shape outside the binding curve's range is extrapolated
  // whatever priced it; a curve with no held-out error of its own (assumed,
  // default, an anchor) is assumed; a table measured at another release
  // adds its drift to its fit's spread.
  static void Classify(const hw::EfficiencyCurve& bound, double x, const CrossVersion* cv,
                       OpSpread* s) {
    const double fit = CurveSpread(bound);
    if (!bound.InRange(x)) {
      s->provenance = OpProvenance::kExtrapolated;
    } else if (s->assumed || fit < 0) {
      s->provenance = OpProvenance::kAssumed;
    } else if (cv != nullptr) {
      s->provenance = OpProvenance::kCrossVersion;
      const double d = DriftSpread(cv->drift);
      s->sigma = std::sqrt(fit * fit + d * d);
    } else {
      s->provenance = OpProvenance::kMeasured;
      s->sigma = fit;
    }
  }

  static bool CrossesNodes(const models::Op& op, const StepContext& ctx) {
    return ctx.nvlink_gpus > 0 && op.participants > ctx.nvlink_gpus;
  }

  static std::string CollectiveAlgorithm(const models::Op& op, const StepContext& ctx) {
    if (op.a2a.mode != models::AllToAllMode::kCollective) {
      return std::string("deepep ") + models::AllToAllModeName(op.a2a.mode);
    }
    if (CrossesNodes(op, ctx)) return "ring over rdma";
    return ctx.nvls && op.kind == models::OpKind::kAllReduce ? "nvls" : "ring";
  }

  // DeepEP keeps NVLink and RDMA busy at once: the slower fabric bounds it.
  double DeepEpSeconds(const models::Op& op) const {
    const hw::DeepEpModel& m = op.a2a.mode == models::AllToAllMode::kLowLatency
                                   ? p_.deepep_low_latency
                                   : p_.deepep_normal;
    const double nvlink = op.a2a.nvlink_bytes > 0
                              ? op.a2a.nvlink_bytes / (p_.nvlink_bytes_per_s * m.nvlink_efficiency)
                              : 0;
    const double rdma =
        op.a2a.rdma_bytes > 0 ? op.a2a.rdma_bytes / (p_.rdma_bytes_per_s * m.rdma_efficiency) : 0;
    return m.latency_s + std::max(nvlink, rdma);
  }

  double CollectiveSeconds(const models::Op& op, const StepContext& ctx) const {
    if (op.a2a.mode != models::AllToAllMode::kCollective) return DeepEpSeconds(op);
    const bool nvls = ctx.nvls;
    const int parts = op.participants;
    if (parts <= 1 || op.message_bytes <= 0) return 0;
    const double frac = static_cast<double>(parts - 1) / parts;
    const hw::CollectiveModel* m = &(p_.*CollectiveTableOf(op.kind));
    // A ring all-reduce moves each byte twice (reduce-scatter + all-gather).
    const double factor = op.kind == models::OpKind::kAllReduce ? 2 * frac : frac;
    double bw =
        nvls && op.kind == models::OpKind::kAllReduce && m->nvls_bus_bandwidth_bytes_per_s > 0
            ? m->nvls_bus_bandwidth_bytes_per_s
            : m->bus_bandwidth_bytes_per_s;
    if (CrossesNodes(op, ctx)) bw = std::min(bw, p_.rdma_bytes_per_s);
    return m->latency_s + op.message_bytes * factor / bw;
  }

  // The op as hw/op_pricing.h classifies it (one rule for the simulator and
  // for calibration).
  static hw::OpPricingInput PricingInput(const models::Op& op) {
    hw::OpPricingInput in;
    in.weights = op.weight_dtype;
    in.compute = op.compute_dtype;
    in.m = static_cast<double>(op.m);
    in.groups = static_cast<double>(op.groups);
    in.heads = static_cast<double>(op.heads);
    in.q_tokens = static_cast<double>(op.q_tokens);
    switch (op.kind) {
      case models::OpKind::kGemm:
      case models::OpKind::kRouter:
      case models::OpKind::kEmbedding:
      case models::OpKind::kSampling:
        in.family = hw::OpFamily::kDenseGemm;
        break;
      case models::OpKind::kGroupedGemm:
        in.family = hw::OpFamily::kGroupedGemm;
        break;
      case models::OpKind::kAttentionDecode:
      case models::OpKind::kMlaDecode:
      case models::OpKind::kDsaIndexer:
      case models::OpKind::kKvVerify:
        in.family = hw::OpFamily::kAttentionDecode;
        break;
      case models::OpKind::kAttentionPrefill:
      case models::OpKind::kMlaPrefill:
      case models::OpKind::kMlaPrefillAbsorbed:
        in.family = hw::OpFamily::kAttentionPrefill;
        break;
      case models::OpKind::kKvAppend:
      case models::OpKind::kElementwise:
        in.family = hw::OpFamily::kElementwise;
        break;
      // Priced by CollectiveSeconds, never through a family (PriceOps and
      // ExplainOps route them there first).
      case models::OpKind::kAllReduce:
      case models::OpKind::kAllGather:
      case models::OpKind::kReduceScatter:
      case models::OpKind::kAllToAll:
        in.family = hw::OpFamily::kElementwise;
        break;
    }
    // No default: a new op kind fails the build (-Wswitch) until it is
    // given a family here.
    return in;
  }

  // The table an op is priced with: its kernel implementation's when the
  // engine names one and the profile has it for the op's class, else the
  // class's. `table` (when given) says which, for --explain-step.
  const hw::OpEfficiency* Efficiency(const models::Op& op, std::string_view cls,
                                     std::set<std::string>* warnings, OpPrice* table = nullptr,
                                     const CrossVersion** cross = nullptr,
                                     OpSpread* spread = nullptr) const {
    const Lookup& l = LookUp(op.impl, cls);
    const hw::OpEfficiency* eff = l.class_eff;
    if (table != nullptr) table->table = std::string(cls), table->table_kind = "class";
    if (op.impl.empty()) return eff;
    if (l.table == nullptr) {
      if (warnings != nullptr) {
        WarnKernel(op, warnings, [&] {
          return "has no table of class " + std::string(cls) + " in profile '" + p_.name +
                 "': priced by its class's curves";
        });
      }
      if (table != nullptr) table->table_kind = "class (no table for " + std::string(op.impl) + ")";
      if (spread != nullptr) spread->assumed = true;
      return eff;
    }
    const hw::KernelTable& k = *l.table;
    if (spread != nullptr && k.assumed()) spread->assumed = true;
    if (k.assumed() && warnings != nullptr) {
      WarnKernel(op, warnings, [&] {
        return std::string(kAssumedKernelText) + " '" + k.assumed_from + "': " + k.assumed_reason;
      });
    } else if (warnings != nullptr && l.all_default) {
      WarnKernel(op, warnings, [&] {
        return std::string(kAssumedKernelText) + " its class (no record of it fitted): " +
               k.efficiency.memory.provenance.source;
      });
    }
    const CrossVersion* cv = l.cv;
    if (cv != nullptr && warnings != nullptr) WarnCrossVersion(op, *cv, warnings);
    if (cross != nullptr) *cross = cv;
    if (table != nullptr) {
      table->table = std::string(op.impl);
      table->table_kind = k.assumed() ? "assumed from " + k.assumed_from : "kernel";
      table->measured_at = hw::MeasuredAtText(k);
      if (cv != nullptr) table->cross_version = cv->note, table->version_drift = cv->drift;
    }
    return &k.efficiency;
  }

  // What Efficiency() finds by name for one (implementation, class):
  // every priced step meets the same few ops again, so each pair is looked
  // up in the profile's maps once.
  struct Lookup {
    std::string impl, cls;
    const hw::OpEfficiency* class_eff = nullptr;
    const hw::KernelTable* table = nullptr;  // null: the profile has none of the class
    const CrossVersion* cv = nullptr;        // measured at another release
    bool all_default = false;                // neither curve fitted from a record
  };

  const Lookup& LookUp(std::string_view impl, std::string_view cls) const {
    for (const Lookup& l : lookups_) {
      if (l.impl == impl && l.cls == cls) return l;
    }
    Lookup l;
    l.impl = std::string(impl);
    l.cls = std::string(cls);
    // Every class is in a loaded profile (hw/profile.cc checks).
    l.class_eff = &p_.efficiency.find(cls)->second;
    if (!impl.empty()) {
      auto it = p_.kernels.find(impl);
      if (it != p_.kernels.end() && it->second.efficiency_class == cls) {
        l.table = &it->second;
        l.all_default = l.table->efficiency.memory.provenance.kind == "default" &&
                        l.table->efficiency.compute.provenance.kind == "default";
        if (auto c = cross_.find(impl); c != cross_.end()) l.cv = &c->second;
      }
    }
    lookups_.push_back(std::move(l));
    return lookups_.back();
  }

  // One warning per kernel implementation (the first op that meets it).
  // Every priced batch meets its ops again: the message is only built the
  // first time, and the prefix looked up in a reused buffer.
  template <typename What>
  void WarnKernel(const models::Op& op, std::set<std::string>* warnings, What what) const {
    if (warnings->size() >= kMaxPriceWarnings) return;
    std::string& prefix = prefix_;
    prefix.assign("kernel '").append(op.impl).append("' ");
    if (HasPrefix(*warnings, prefix)) return;
    warnings->insert(prefix + "(op '" + op.name + "', " + models::OpKindName(op.kind) + ") " +
                     what());
  }

  // One warning per cross-version table (the first op that meets it).
  void WarnCrossVersion(const models::Op& op, const CrossVersion& cv,
                        std::set<std::string>* warnings) const {
    if (warnings->size() >= kMaxPriceWarnings) return;
    std::string& prefix = prefix_;
    prefix.assign("kernel table '").append(op.impl).append("' ");
    if (HasPrefix(*warnings, prefix)) return;
    char drift[64];
    std::snprintf(drift, sizeof(drift), "; version drift %.1f%%", 100 * cv.drift);
    warnings->insert(prefix + "(op '" + op.name + "', " + models::OpKindName(op.kind) + ") " +
                     kCrossVersionText + " " + cv.note + drift +
                     " widens the prediction intervals by its share of step time");
  }

  std::pair<double, double> ComputeAndMemorySeconds(const models::Op& op,
                                                    std::set<std::string>* warnings,
                                                    OpPrice* table = nullptr,
                                                    const CrossVersion** cross = nullptr,
                                                    OpSpread* spread = nullptr,
                                                    double* peak = nullptr) const {
    const hw::OpPricing pricing = hw::PriceOp(PricingInput(op), p_, architecture_);
    const CrossVersion* cv = nullptr;
    const hw::OpEfficiency* eff =
        Efficiency(op, pricing.efficiency_class, warnings, table, &cv, spread);
    if (cross != nullptr) *cross = cv;
    const double x = pricing.x;
    double tc = 0, tm = 0;
    if (op.flops > 0) {
      tc = op.flops / (pricing.peak_flops_per_s * eff->compute.At(x));
      if (warnings != nullptr && !eff->compute.InRange(x)) {
        Warn(op, "compute", eff->compute, warnings);
      }
    }
    if (op.bytes > 0) {
      tm = op.bytes / (p_.hbm_bytes_per_s * eff->memory.At(op.bytes));
      if (warnings != nullptr && !eff->memory.InRange(op.bytes)) {
        Warn(op, "memory", eff->memory, warnings);
      }
    }
    // The op's seconds at the datasheet peaks, {tensor, HBM} (power, sim/energy.h).
    if (peak != nullptr) {
      peak[0] = op.flops > 0 ? op.flops / pricing.peak_flops_per_s : 0;
      peak[1] = op.bytes > 0 ? op.bytes / p_.hbm_bytes_per_s : 0;
    }
    if (spread != nullptr) Classify(tc >= tm ? eff->compute : eff->memory,
                                    tc >= tm ? x : op.bytes, cv, spread);
    if (table != nullptr) {
      const hw::EfficiencyCurve& bound = tc >= tm ? eff->compute : eff->memory;
      table->efficiency = bound.At(tc >= tm ? x : op.bytes);
      table->provenance = bound.provenance.kind;
      table->in_range = bound.InRange(tc >= tm ? x : op.bytes);
    }
    return {tc, tm};
  }

  void Warn(const models::Op& op, const char* which, const hw::EfficiencyCurve& c,
            std::set<std::string>* warnings) const {
    // Every priced batch re-checks its ops: look the op up by the message's
    // prefix, and format a message (numbers, the costly part) once per op and
    // shape, so a run whose ops sit outside a fitted range does not pay for
    // it on every step.
    if (warnings->size() >= kMaxPriceWarnings) return;
    std::string& prefix = prefix_;  // reused: no allocation per check
    prefix.assign("op '");
    prefix.append(op.name).append("' (").append(models::OpKindName(op.kind)).append("): ");
    prefix.append(which).append(kShapeWord);
    if (HasPrefix(*warnings, prefix)) return;
    std::string& message = messages_[prefix];
    if (message.empty()) {
      std::ostringstream os;
      os << prefix << c.x << " " << kOutOfRangeText << " [" << c.valid_lo << ", " << c.valid_hi
         << "]";
      message = os.str();
    }
    warnings->insert(message);
  }

  hw::HardwareProfile p_;
  int architecture_;  // p_.architecture as hw::ArchitectureIndex resolves it
  // Warning text by prefix (one run's cost model is used by one thread).
  mutable std::unordered_map<std::string, std::string> messages_;
  mutable std::string prefix_;  // Warn's scratch
  // Kernel tables measured at another release than SetPricedFor's.
  std::map<std::string, CrossVersion, std::less<>> cross_;
  // Efficiency()'s lookups so far; a deque, so a reference stays valid.
  mutable std::deque<Lookup> lookups_;
};

Registry<CostModelFactory>* BuildRegistry() {
  auto* r = new Registry<CostModelFactory>("cost model");
  r->Add(
      "roofline",
      [](const hw::HardwareProfile& p) -> Result<std::unique_ptr<CostModel>> {
        if (!p.has_cost_model) {
          return Status::Usage(p.path +
                               ": profile has no cost-model parameters (/compute, /efficiency, "
                               "...); see calibrate/PROFILE.md");
        }
        return std::unique_ptr<CostModel>(new RooflineCostModel(p));
      },
      "max(compute, memory) per op + launch + CPU scheduling overheads");
  return r;
}

}  // namespace

bool MergePriceWarnings(const std::set<std::string>& from, std::set<std::string>* into) {
  const std::string word = kShapeWord;
  std::vector<const std::string*> added;
  for (const std::string& w : from) {
    const size_t at = w.find(word);
    if (!HasPrefix(*into, at == std::string::npos ? w : w.substr(0, at + word.size()))) {
      added.push_back(&w);
    }
  }
  if (into->size() + added.size() > kMaxPriceWarnings) return false;
  for (const std::string* w : added) into->insert(*w);
  return true;
}

Registry<CostModelFactory>& CostModels() {
  static Registry<CostModelFactory>* r = BuildRegistry();
  return *r;
}

Result<std::unique_ptr<CostModel>> MakeCostModel(const std::string& name,
                                                 const hw::HardwareProfile& profile) {
  CAPPLAN_ASSIGN_OR_RETURN(CostModelFactory f, CostModels().Find(name));
  return f(profile);
}

StepCost PriceBatch(const CostModel& model, const models::ShardedModel& sharded,
                    const models::BatchShape& batch, const StepContext& ctx,
                    std::set<std::string>* warnings) {
  std::vector<models::Op> ops;
  models::BuildStepOps(sharded, batch, &ops);
  return model.PriceOps(ops, ctx, warnings);
}

}  // namespace capplan::sim
