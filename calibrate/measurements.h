// Strict reader of `capplan.measurements.v1` files (calibrate/MEASUREMENTS.md)
// for calibration. Stricter than the writer-side validator in kernels/harness:
// calibration must never fit a NaN, a zero time or a record from another GPU,
// so every such record is a one-line error naming the file, the record index
// and the field.
#ifndef CAPPLAN_CALIBRATE_MEASUREMENTS_H_
#define CAPPLAN_CALIBRATE_MEASUREMENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace capplan {
class JsonObject;  // common/json_util.h
}  // namespace capplan

namespace capplan::calibrate {

// GPU models a measurement file may name (MEASUREMENTS.md): all SM90
// (Hopper), so a kernel's efficiency as a fraction of its own GPU's peak
// carries over between them. "" when `name` names none of them.
std::string GpuModelOf(const std::string& name);
const std::vector<std::string>& KnownGpuModels();  // {"H100", "H800", "H200"}

// Engines a measurement file's kernels may have been timed in (the header's
// `engine`): {"sglang", "trtllm", "vllm"}.
const std::vector<std::string>& KnownKernelEngines();

// Where a public figure was published (the `source` object of a public
// measurement file or a validation case): https address, date (YYYY-MM-DD,
// YYYY-MM or "not recorded"), a title naming the log / table / thread, and a
// note on the configuration and how the figures were copied.
struct PublicSource {
  std::string url, date, title, note;
};

// Reads `s` strictly; errors name the file and /source/KEY.
Status ReadPublicSource(JsonObject& s, PublicSource* out);

// Where a record came from: everything a provenance line needs.
struct MeasurementSource {
  std::string path;
  std::string gpu, driver, cuda, commit, date;
  // The serving engine whose code ran the file's kernels and its version as
  // the engine names it ("vllm", "0.24.0"): a kernel's time drifts between
  // versions of one engine. Both "" when the file names none.
  std::string engine, engine_version;
  bool dry_run = false;
  std::string gpu_model;  // GpuModelOf(gpu); "cpu" for dry runs
  // A public measurement (file with a `source` object): figures copied from
  // a published log, benchmark or kernel test, not measured here.
  bool is_public = false;
  PublicSource source;
  // "FILE (gpu G, driver D, cuda C, commit X, date Y)", or for a public file
  // "FILE (gpu G, public: URL, DATE)".
  std::string Describe() const;
};

// How a kernel record states its cost. Engine files always give a time;
// public files copy what their source printed.
enum class KernelTiming {
  kMedianUs,      // median_us: a time
  kFlopRate,      // achieved_flops_per_s only: time = flops / rate
  kBusBandwidth,  // bus_bandwidth_bytes_per_s (collectives): no time
};

// What a kernel record measures, read once from its op_class and, where
// kernels of one class are priced differently, its kernel name
// (MEASUREMENTS.md); calibration prices a record by this alone (fit.cc).
enum class MeasuredOp {
  kDenseGemm,         // dense_gemm
  kMoe,               // moe: a grouped GEMM over the touched experts
  kAttentionDecode,   // attention: any kernel not below
  kAttentionPrefill,  // attention: a kernel whose name contains "prefill"
  kKvAppend,          // attention: paged_kv_append (the simulator's kKvAppend)
  kElementwise,       // elementwise
  kKvVerify,          // overhead: kv_integrity_verify (the simulator's kKvVerify)
  kKernelLaunch,      // overhead: kernel_launch, an empty kernel launched eagerly
  kGraphLaunch,       // overhead: graph_launch, a graph of shape.nodes empty nodes
  kOtherOverhead,     // overhead: any other kernel (no op the simulator prices)
  kCommunication,     // communication: a collective
};

struct MeasuredKernel {
  std::string kernel, variant, dtype, weight_dtype, kv_dtype;
  MeasuredOp op = MeasuredOp::kDenseGemm;
  // The kernel implementation the record timed (a key of the profile's
  // "kernels" block, e.g. "sglang_marlin_moe"); "" when the record names
  // none and fits its efficiency class.
  std::string implementation;
  std::map<std::string, int64_t> shape;
  KernelTiming timing = KernelTiming::kMedianUs;
  double median_us = 0;             // kFlopRate: flops / achieved rate; kBusBandwidth: 0
  double achieved_flops_per_s = 0;  // kFlopRate only
  double bus_bandwidth_lo = 0, bus_bandwidth_hi = 0;  // B/s, kBusBandwidth only
  double bytes = 0;
  double flops = 0;
  std::string check;  // "" when absent
  std::string note;   // "" when absent
  int source = 0;     // index into MeasurementSet::sources
  int index = 0;      // record index inside its file
  int64_t Shape(const std::string& key, int64_t fallback = 0) const;
};

// One engine iteration or a latency benchmark (`kind: "step"` records,
// MEASUREMENTS.md): the batch it ran and what was measured.
struct MeasuredStep {
  // "decode": one decode step of `running_requests` holding `kv_tokens`
  //   (step_ms). "latency": a batch of `batch_size` requests of
  //   `input_tokens` in / `output_tokens` out run to completion
  //   (mean_latency_ms). "itl_vs_input": ITL at `concurrency` as a linear fit
  //   in the input length over [input_tokens_min, input_tokens_max].
  std::string step;
  std::string engine, engine_version, model, model_card, weights, kv_dtype;
  int tp = 1;
  bool cuda_graphs = true;
  int64_t running_requests = 0, kv_tokens = 0;
  int64_t batch_size = 0, input_tokens = 0, output_tokens = 0;
  int64_t concurrency = 0, input_tokens_min = 0, input_tokens_max = 0;
  double step_ms = 0, mean_latency_ms = 0;
  double itl_intercept_ms = 0, itl_ms_per_input_token = 0;
  std::string note;
  int source = 0;
  int index = 0;
};

struct MeasurementSet {
  std::vector<MeasurementSource> sources;
  std::vector<MeasuredKernel> records;
  std::vector<MeasuredStep> steps;
};

// Reads one file. Errors: "FILE: /records/3/median_us: must be > 0, got 0".
// Records whose check is "fail" are errors too: a wrong kernel's time is not
// a cost of the right one.
Status ReadMeasurementFile(const std::string& path, MeasurementSet* set);

struct ReadOptions {
  bool allow_dry_run = false;
};

// Reads every file; refuses dry runs unless allowed and files from different
// GPUs or drivers (one profile describes one GPU + driver). Public files are
// exempt from the one-GPU rule: each carries its GPU, and calibration decides
// what a record from another GPU may inform (fit.h).
Result<MeasurementSet> ReadMeasurements(const std::vector<std::string>& paths,
                                        const ReadOptions& options);

}  // namespace capplan::calibrate

#endif  // CAPPLAN_CALIBRATE_MEASUREMENTS_H_
