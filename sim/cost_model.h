// The step cost model: prices one scheduler iteration's operator list (from
// models/BuildStepOps) with a hardware profile. Registered by name so
// calibration can add fitted variants; "roofline" is the first.
//
// roofline, per op (all `count` invocations):
//   time = max(flops / (rate(compute_dtype) * eff_compute(shape)),
//              bytes / (hbm_bytes_per_s * eff_memory(bytes)))
//   W4A16 (int4 weights) runs at the 16-bit rate, compute time scaled by
//   (1 + int4_dequant_compute_overhead); FP8 GEMMs at the FP8 rate.
//   collectives: latency + message_bytes * algorithm factor / bus bandwidth
//     (all-reduce 2(p-1)/p, all-gather / reduce-scatter / all-to-all (p-1)/p);
//     an all-reduce under NVLS uses the profile's NVLS bus bandwidth; one
//     whose participants span more GPUs than share NVLink
//     (StepContext::nvlink_gpus) runs at the RDMA rate per GPU, the ring's
//     slowest link.
//   DeepEP all-to-alls (op.a2a, models/expert_parallel.h): the mode's
//     latency + max(NVLink bytes / (NVLink rate * eff), RDMA bytes / (RDMA
//     rate * eff)), from the profile's collectives.deepep.
//   launch: every invocation pays kernel_launch_s eagerly, or graph_node_s
//     inside a CUDA graph plus graph_launch_s once per step.
//   engine host costs (StepContext, from models/engine_step_costs.h),
//   PriceHost:
//     engine = gpu + host_s + scheduling shown [+ output, in the loop]
//       scheduling = cpu_schedule_s + cpu_schedule_per_request_s * requests,
//       of which an overlapping scheduler shows only the part longer than
//       the GPU step; output = cpu_output_per_token_s * tokens returned.
//     step = engine, when output processing runs in the engine's loop;
//            max(engine, output) when it runs in a process of its own (a
//            pipeline stage: the slower of the two sets the pace).
#ifndef CAPPLAN_SIM_COST_MODEL_H_
#define CAPPLAN_SIM_COST_MODEL_H_

#include <array>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hw/profile.h"
#include "common/registry.h"
#include "common/status.h"
#include "models/ops.h"
#include "sim/op_provenance.h"

namespace capplan::sim {

constexpr int kNumOpClasses = 6;  // OpClass values
enum class Bound { kCompute = 0, kMemory, kCommunication, kOverhead };
constexpr int kNumBounds = 4;
const char* BoundName(Bound b);  // "compute", "memory", ...

struct StepCost {
  double seconds = 0;
  std::array<double, kNumOpClasses> class_seconds{};  // indexed by OpClass
  std::array<double, kNumBounds> bound_seconds{};     // indexed by Bound
  double verify_seconds = 0;  // KV-integrity verification ops (inside class_seconds too)
  // Speculative decoding (inside class_seconds too): the draft model's ops,
  // and the target's ops in steps that verify drafts.
  double draft_seconds = 0;
  double spec_verify_seconds = 0;
  // Kernel launches or graph replay (inside the overhead class).
  double launch_seconds = 0;
  // Waiting for KV loaded back from a host tier (inside the communication
  // class and bound, and the collective provenance: a transfer priced from
  // the link's datasheet bandwidth, like a collective).
  double kv_load_seconds = 0;
  // Two-batch overlap (sim/micro_batch_overlap.h): all-to-all seconds run
  // under the other micro-batch's compute. Outside `seconds` and every
  // class, bound and provenance sum: taken out of the communication class
  // and bound and the collective provenance.
  double overlap_hidden_seconds = 0;
  // Sum over ops priced by a kernel table measured at another engine
  // release of their seconds times that table's version drift: divided by
  // `seconds`, the step-time-weighted drift (sim/prediction_intervals.h).
  double drift_seconds = 0;
  // What the step's kernels use of the GPU's datapaths, as seconds at the
  // datasheet peak: the sum over ops of flops / the dense peak of the op's
  // math format, and of bytes / peak HBM bandwidth (sim/energy.h turns them
  // into power).
  double tensor_peak_seconds = 0;
  double hbm_peak_seconds = 0;
  // One GPU's board energy over the step (sim/energy.h ChargeStepPower), and
  // the most any step drew (a maximum in Add and AddTimes, not a sum).
  double gpu_joules = 0;
  double peak_gpu_w = 0;
  // Seconds priced by each provenance class (OpProvenance; host holds the
  // launch and host overhead), and for the measured and cross-version
  // classes the sum of seconds times each op's log-error spread: a band's
  // inputs (sim/prediction_intervals.h).
  std::array<double, kNumOpProvenances> provenance_seconds{};
  std::array<double, kNumOpProvenances> spread_seconds{};
  void Add(const StepCost& o);
  void AddTimes(const StepCost& o, int64_t times);  // `times` identical steps
};

struct StepContext {
  bool cuda_graph = false;        // this step replays a captured graph
  bool overlap_schedule = false;  // engine overlaps CPU scheduling with the GPU
  int64_t requests = 0;           // requests in the batch (CPU scheduling cost)
  // The engine's per-step host costs (models/engine_step_costs.h).
  double host_s = 0;
  double cpu_schedule_s = 0;
  double cpu_schedule_per_request_s = 0;
  double cpu_output_per_token_s = 0;
  // Output processing runs in a process of its own (OutputStage).
  bool output_separate = false;
  // Tokens the step returns to clients: one per decode row and one per
  // prompt chunk (the chunk that ends a prompt emits its first token;
  // counting every chunk keeps the step's price a function of its batch).
  int64_t tokens_out = 0;
  // All-reduces run NCCL's NVLS algorithm (the memory plan's decision).
  bool nvls = false;
  // GPUs of the instance that share one NVLink domain; 0: all of them.
  int nvlink_gpus = 0;
};

// The host side of one step (seconds): what each engine host cost adds to
// a step whose GPU work (kernels and launches) takes `gpu`.
struct HostTime {
  double host = 0;            // host_s
  double schedule = 0;        // CPU scheduling, all of it
  double schedule_shown = 0;  // the part the step waits for
  double output = 0;          // output processing
  double engine = 0;          // the engine loop's step
  double step = 0;            // the step's period
};
HostTime PriceHost(const StepContext& ctx, double gpu);

// One op as a cost model priced it (`capplan simulate --explain-step`).
struct OpPrice {
  double seconds = 0;  // all `count` invocations
  Bound bound = Bound::kMemory;
  std::string table;       // the kernel implementation or efficiency class whose curves priced it
  std::string table_kind;  // "kernel", "assumed from <table>", "class", ...
  std::string provenance;  // the binding curve's provenance kind (fitted, anchor, ...)
  double efficiency = 0;   // the binding curve's value at the op's shape
  bool in_range = true;    // the shape lies in the binding curve's valid range
  // Kernel tables only: where the table's records were measured
  // (hw::MeasuredAtText), and when the deployment runs another engine or
  // release, "measured at vllm 0.24.0 (H100, H200), priced for vllm 0.10.0"
  // with the table's version drift.
  std::string measured_at;
  std::string cross_version;
  double version_drift = 0;
};

// Every warning for a kernel table priced for another engine release says
// this after the table's name and op (once per table), then the note.
inline constexpr const char* kCrossVersionText = "cross-version:";

// A kernel priced by another implementation's table says this before the
// table's name (and widens the prediction intervals).
inline constexpr const char* kAssumedKernelText = "priced by the table assumed from";

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // The engine and release (as resolved: "0.19.0") the deployment runs,
  // which decides the ops priced cross-version; none set: no op is.
  virtual void SetPricedFor(const std::string& engine, const std::string& version) {
    (void)engine, (void)version;
  }
  // Prices the ops of one step on one GPU. Shapes outside the profile's
  // valid ranges add a line to *warnings (when given).
  virtual StepCost PriceOps(const std::vector<models::Op>& ops, const StepContext& ctx,
                            std::set<std::string>* warnings) const = 0;
  // Each op's price and what priced it, in `ops` order (launch and host
  // costs are the step's, not an op's); empty when the model cannot say.
  virtual std::vector<OpPrice> ExplainOps(const std::vector<models::Op>& ops,
                                          const StepContext& ctx) const {
    (void)ops, (void)ctx;
    return {};
  }
};

// Adds `from`'s out-of-range warnings to `into` by PriceOps's rule (one
// message per op and shape, the first kept) and returns true; returns false,
// changing nothing, when that would pass kMaxPriceWarnings (then which ones
// stay depends on the order PriceOps meets them).
inline constexpr size_t kMaxPriceWarnings = 32;
// Every such warning says this (after the op and shape, before the range).
inline constexpr const char* kOutOfRangeText = "outside the profile's valid range";
bool MergePriceWarnings(const std::set<std::string>& from, std::set<std::string>* into);

using CostModelFactory =
    std::function<Result<std::unique_ptr<CostModel>>(const hw::HardwareProfile& profile)>;
Registry<CostModelFactory>& CostModels();
Result<std::unique_ptr<CostModel>> MakeCostModel(const std::string& name,
                                                 const hw::HardwareProfile& profile);

// BuildStepOps + PriceOps: what `capplan validate` replays measured batches
// through.
StepCost PriceBatch(const CostModel& model, const models::ShardedModel& sharded,
                    const models::BatchShape& batch, const StepContext& ctx,
                    std::set<std::string>* warnings);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_COST_MODEL_H_
