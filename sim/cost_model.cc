#include "sim/cost_model.h"

#include <algorithm>
#include <sstream>

namespace capplan {

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
}

namespace {

bool IsCollective(OpKind k) {
  return k == OpKind::kAllReduce || k == OpKind::kAllGather || k == OpKind::kReduceScatter ||
         k == OpKind::kAllToAll;
}

class RooflineCostModel : public CostModel {
 public:
  explicit RooflineCostModel(const HardwareProfile& p) : p_(p) {}
  std::string name() const override { return "roofline"; }

  StepCost PriceOps(const std::vector<Op>& ops, const StepContext& ctx,
                    std::set<std::string>* warnings) const override {
    StepCost c;
    double gpu = 0;
    int64_t kernels = 0;
    for (const Op& op : ops) {
      const double n = static_cast<double>(std::max<int64_t>(op.count, 0));
      kernels += op.count;
      double t = 0;
      Bound bound = Bound::kMemory;
      if (IsCollective(op.kind)) {
        t = CollectiveSeconds(op);
        bound = Bound::kCommunication;
      } else {
        const auto [tc, tm] = ComputeAndMemorySeconds(op, warnings);
        t = std::max(tc, tm);
        bound = tc >= tm ? Bound::kCompute : Bound::kMemory;
      }
      t *= n;
      gpu += t;
      c.class_seconds[static_cast<int>(op.op_class)] += t;
      c.bound_seconds[static_cast<int>(bound)] += t;
      if (op.kind == OpKind::kKvVerify) c.verify_seconds += t;
    }
    // Launch cost: a graph replay pays a fixed cost plus a small per-node
    // cost; eager execution pays a host launch per kernel.
    double launch = ctx.cuda_graph ? p_.graph_launch_s + p_.graph_node_s * kernels
                                   : p_.kernel_launch_s * kernels;
    gpu += launch;
    double cpu = p_.cpu_schedule_s + p_.cpu_schedule_per_request_s * ctx.requests;
    // With an overlapping scheduler the next batch is prepared while the
    // GPU runs this one; only the excess shows.
    if (ctx.overlap_schedule) cpu = std::max(0.0, cpu - gpu);
    const double overhead = launch + cpu;
    c.class_seconds[static_cast<int>(OpClass::kOverhead)] += overhead;
    c.bound_seconds[static_cast<int>(Bound::kOverhead)] += overhead;
    c.seconds = gpu + cpu;
    return c;
  }

 private:
  double CollectiveSeconds(const Op& op) const {
    const int parts = op.participants;
    if (parts <= 1 || op.message_bytes <= 0) return 0;
    const double frac = static_cast<double>(parts - 1) / parts;
    const CollectiveModel* m = &p_.all_reduce;
    double factor = frac;
    switch (op.kind) {
      case OpKind::kAllReduce: factor = 2 * frac; break;
      case OpKind::kAllGather: m = &p_.all_gather; break;
      case OpKind::kReduceScatter: m = &p_.reduce_scatter; break;
      default: m = &p_.all_to_all; break;
    }
    return m->latency_s + op.message_bytes * factor / m->bus_bandwidth_bytes_per_s;
  }

  double Rate(Dtype d) const {
    switch (d) {
      case Dtype::kFp8E4m3: return p_.fp8_flops_per_s;
      case Dtype::kFp32: return p_.fp32_flops_per_s;
      default: return p_.bf16_flops_per_s;  // bf16, fp16, and W4A16 (16-bit MMA)
    }
  }

  // Which efficiency curves an op uses, and the compute-shape variable.
  std::pair<const OpEfficiency*, double> Curves(const Op& op) const {
    const char* key = "elementwise";
    double x = static_cast<double>(std::max<int64_t>(op.m, 1));
    switch (op.kind) {
      case OpKind::kGemm:
      case OpKind::kRouter:
      case OpKind::kEmbedding:
      case OpKind::kSampling:
        key = op.weight_dtype == Dtype::kInt4                                         ? "gemm_int4"
              : (op.weight_dtype == Dtype::kFp8E4m3 && op.compute_dtype == Dtype::kFp8E4m3) ? "gemm_fp8"
                                                                                     : "gemm_bf16";
        break;
      case OpKind::kGroupedGemm:
        key = "grouped_gemm";
        x = op.groups > 0 ? static_cast<double>(op.m) / op.groups : x;
        break;
      case OpKind::kAttentionDecode:
      case OpKind::kMlaDecode:
      case OpKind::kDsaIndexer:
      case OpKind::kKvVerify:
        key = "attention_decode";
        x = static_cast<double>(std::max(op.heads, 1)) * std::max<int64_t>(op.q_tokens, 1);
        break;
      case OpKind::kAttentionPrefill:
      case OpKind::kMlaPrefill:
        key = "attention_prefill";
        x = static_cast<double>(std::max<int64_t>(op.q_tokens, 1));
        break;
      default:
        break;
    }
    auto it = p_.efficiency.find(key);
    return {&it->second, x};
  }

  std::pair<double, double> ComputeAndMemorySeconds(const Op& op,
                                                    std::set<std::string>* warnings) const {
    const auto [eff, x] = Curves(op);
    double tc = 0, tm = 0;
    if (op.flops > 0) {
      tc = op.flops / (Rate(op.compute_dtype) * eff->compute.At(x));
      if (op.weight_dtype == Dtype::kInt4) tc *= 1 + p_.int4_dequant_compute_overhead;
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
    return {tc, tm};
  }

  static void Warn(const Op& op, const char* which, const EfficiencyCurve& c,
                   std::set<std::string>* warnings) {
    std::ostringstream os;
    os << "op '" << op.name << "' (" << OpKindName(op.kind) << "): " << which << " shape "
       << c.x << " outside the profile's valid range [" << c.valid_lo << ", " << c.valid_hi
       << "]";
    if (warnings->size() < 32) warnings->insert(os.str());
  }

  HardwareProfile p_;
};

Registry<CostModelFactory>* BuildRegistry() {
  auto* r = new Registry<CostModelFactory>("cost model");
  r->Add(
      "roofline",
      [](const HardwareProfile& p) -> Result<std::unique_ptr<CostModel>> {
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

Registry<CostModelFactory>& CostModels() {
  static Registry<CostModelFactory>* r = BuildRegistry();
  return *r;
}

Result<std::unique_ptr<CostModel>> MakeCostModel(const std::string& name,
                                                 const HardwareProfile& profile) {
  CAPPLAN_ASSIGN_OR_RETURN(CostModelFactory f, CostModels().Find(name));
  return f(profile);
}

StepCost PriceBatch(const CostModel& model, const ShardedModel& sharded, const BatchShape& batch,
                    const StepContext& ctx, std::set<std::string>* warnings) {
  std::vector<Op> ops;
  BuildStepOps(sharded, batch, &ops);
  return model.PriceOps(ops, ctx, warnings);
}

}  // namespace capplan
