// A hardware profile: datasheet peaks, measured ceilings, efficiency curves
// per op class, the collective and overhead models; every parameter carries
// its provenance. Files live in calibrate/profiles/<name>.json and are
// documented field by field in calibrate/PROFILE.md.
//
// LoadHardwareProfile and gpu_memory_bytes are a stable surface used by
// models/; the cost-model fields below are what sim/cost_model.cc prices with
// and what calibration refits.
#ifndef CAPPLAN_HW_PROFILE_H_
#define CAPPLAN_HW_PROFILE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "hw/power.h"

namespace capplan::hw {

struct Provenance {
  std::string kind;  // datasheet | measured | anchor | default | fitted
  std::string source;
};

// Efficiency as a saturating function of one shape variable:
//   eff(x) = max * x / (x + half)
// A GEMM's compute efficiency rises with M; a memory-bound kernel's
// bandwidth efficiency rises with the bytes it streams. `valid` is the shape
// range the curve was fitted or anchored on; outside it the simulator warns.
struct EfficiencyCurve {
  double max = 1.0;
  double half = 0.0;
  std::string x;  // name of the shape variable ("m", "bytes", ...)
  double valid_lo = 0, valid_hi = 1e300;
  Provenance provenance;
  // Written by `capplan calibrate` (optional "fit" object): records fitted
  // on and leave-one-out relative time error; -1 when not fitted.
  int fit_points = 0;
  double loo_median_rel_err = -1, loo_p90_rel_err = -1;
  // Median error of the records of each source when the curve is refitted
  // without that source (calibrate/README.md); -1 when not computed.
  double held_out_source_median_rel_err = -1;
  double At(double v) const { return v <= 0 ? max : max * v / (v + half); }
  bool InRange(double v) const { return v >= valid_lo && v <= valid_hi; }
};

struct OpEfficiency {
  EfficiencyCurve compute;
  EfficiencyCurve memory;
};

// The efficiency table of one named kernel implementation (an engine's
// Marlin MoE, FA3 prefill, ...): the same curve pair as an efficiency class,
// over that class's shape variable, fitted only from records of this
// implementation. A table with no record of its own names the table it is
// assumed from and why; the simulator reports every op priced that way.
// Where a kernel table's records were measured: the serving engine whose
// code ran the kernel, its release as it names it, and the GPU model.
struct MeasuredAt {
  std::string engine;          // "vllm"; "" when the records name no engine
  std::string engine_version;  // "0.24.0"; "" with engine ""
  std::string gpu;             // "H200"
};

// How far a kernel's time moves between releases of its engine, as a
// fraction of its time (0.12: 12%), and where that figure comes from.
struct VersionDrift {
  double value = 0;
  std::string source;
};

struct KernelTable {
  std::string efficiency_class;  // the class whose shape variable and rate it uses
  OpEfficiency efficiency;       // its own curves, or those of `assumed_from`
  std::string assumed_from;      // "" when the table is this implementation's own
  std::string assumed_reason;
  // Where the fitted records were measured (every engine release and GPU
  // that fed the table), and the drift that pricing another release with it
  // carries; an assumed table has its source's. Empty / absent: the table's
  // curves were not fitted from records that name an engine.
  std::vector<MeasuredAt> measured_at;
  std::optional<VersionDrift> version_drift;
  bool assumed() const { return !assumed_from.empty(); }
};

// The leading major.minor.patch of an engine release name ("0.5.6.post2" ->
// {0, 5, 6}, "1.3.0rc20" -> {1, 3, 0}); false when it does not start so.
bool ReleaseTriple(std::string_view version, std::array<int, 3>* out);

// "vllm 0.24.0 (H100, H200)": each release the table was measured at with
// its GPUs; "" when measured_at is empty.
std::string MeasuredAtText(const KernelTable& table);

// "" when a deployment of `engine` at `version` (a release name) runs the
// release a table was measured at (same engine and major.minor.patch), or
// the table names no engine; else "measured at vllm 0.24.0, priced for vllm
// 0.10.0" (every release the table was measured at, with its GPUs).
std::string CrossVersionNote(const KernelTable& table, std::string_view engine,
                             std::string_view version);

// Collective time = latency + bytes * algorithm factor / bus bandwidth.
struct CollectiveModel {
  double latency_s = 0;
  double bus_bandwidth_bytes_per_s = 1;
  // All-reduce only: the bus bandwidth with NCCL's NVLS (NVLink SHARP)
  // algorithm, which an engine enables from some GPU count on
  // (models/engine_profile.h nvls_*); 0: no figure, priced as the ring.
  double nvls_bus_bandwidth_bytes_per_s = 0;
};

// DeepEP's dispatch/combine kernels in one mode (collectives.deepep):
// time = latency_s + the slower of NVLink bytes / (nvlink_bytes_per_s *
// nvlink_efficiency) and RDMA bytes / (rdma_bytes_per_s * rdma_efficiency).
struct DeepEpModel {
  double latency_s = 0;
  double nvlink_efficiency = 0;
  double rdma_efficiency = 0;
};

struct HardwareProfile {
  std::string name;        // "h200-sxm"
  std::string gpu;         // "NVIDIA H200 SXM"
  std::string path;        // file it was loaded from
  // CUDA compute capability family ("sm90", "sm100", "sm103"): which
  // tensor-core formats run natively and which kernels an engine picks.
  // Required with the cost model; "" in a memory-only profile.
  std::string architecture;
  // "sxm" (an HGX baseboard, at most 8 GPUs on one NVLink switch) or
  // "nvl72" (a rack-scale NVLink domain); bounds nvlink_domain_gpus.
  std::string form_factor;
  int64_t gpu_memory_bytes = 0;  // what the driver reports as total (nvidia-smi)
  // What the CUDA runtime reports as total (cudaMemGetInfo), which
  // gpu_memory_utilization multiplies; 0 when the profile has no reading
  // (then gpu_memory_bytes stands in).
  int64_t gpu_runtime_memory_bytes = 0;

  // Cost-model parameters (absent fields in older files keep these zero and
  // the cost model refuses the profile with a message naming the field).
  bool has_cost_model = false;
  double hbm_bytes_per_s = 0;       // ceiling the memory curves scale
  double hbm_spec_bytes_per_s = 0;  // datasheet, reported only
  // One GPU's link to host memory, per direction (a host KV tier loads over
  // it); 0 when the profile does not say.
  double host_link_bytes_per_s = 0;
  double bf16_flops_per_s = 0;
  double fp8_flops_per_s = 0;
  double fp4_flops_per_s = 0;  // dense FP4 tensor rate; 0: none (pre-Blackwell)
  double fp32_flops_per_s = 0;
  // Keys: gemm_bf16, gemm_fp8, gemm_int4, grouped_gemm, attention_decode,
  // attention_prefill, elementwise. Looked up by string_view too.
  std::map<std::string, OpEfficiency, std::less<>> efficiency;
  // Kernel implementation name -> its table ("kernels" block; optional).
  std::map<std::string, KernelTable, std::less<>> kernels;
  double int4_dequant_compute_overhead = 0;
  CollectiveModel all_reduce, all_gather, reduce_scatter, all_to_all;
  double nvlink_bytes_per_s = 0;
  // GPUs one NVLink switch fabric connects (8 on HGX, 72 on NVL72); beyond
  // it GPUs talk over rdma_bytes_per_s. 0 when the profile does not say.
  int nvlink_domain_gpus = 0;
  double rdma_bytes_per_s = 0;
  // DeepEP's low-latency (decode) and normal (prefill) kernels; absent
  // (has_deepep false): a DeepEP deployment is refused on this profile.
  bool has_deepep = false;
  DeepEpModel deepep_low_latency, deepep_normal;
  double kernel_launch_s = 0;
  double graph_node_s = 0;
  double graph_launch_s = 0;
  double kv_verify_tag_bytes_per_page_per_layer = 0;
  double kv_verify_kernels_per_step = 0;
  // What one GPU of this kind costs an hour ("price" block), the cost
  // figures' default when a scenario names no price; 0: the profile gives
  // none, and a scenario must.
  double usd_per_gpu_hour = 0;
  // Board, idle and per-state power, the node's non-GPU power ("power"
  // block, hw/power.h); power.present false: the profile has none, and the
  // summary has no energy figures.
  PowerModel power;
  // "dotted.path" -> provenance of every scalar parameter, for the summary.
  std::map<std::string, Provenance> provenance;
};

// The profile a scenario, command or tool uses when it names none.
inline constexpr char kDefaultProfileName[] = "h200-sxm";

// The architecture values a profile may name, oldest first.
const std::vector<std::string>& KnownArchitectures();
// The largest NVLink domain a form factor has; 0 for an unknown one.
int MaxNvlinkDomainGpus(std::string_view form_factor);

// `name_or_path`: a .json path or a name under DataPath("calibrate/profiles").
Result<HardwareProfile> LoadHardwareProfile(const std::string& name_or_path);
// Parses a profile document; `origin` prefixes every error.
Result<HardwareProfile> ParseHardwareProfile(const nlohmann::json& doc, const std::string& origin);
std::vector<std::string> ShippedProfileNames();

}  // namespace capplan::hw

#endif  // CAPPLAN_HW_PROFILE_H_
