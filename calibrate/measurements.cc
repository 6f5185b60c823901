#include "calibrate/measurements.h"

#include <cmath>
#include <cstdint>
#include <regex>

#include "common/json_util.h"

namespace capplan::calibrate {

namespace {

const std::vector<std::string> kOpClasses = {"attention",     "dense_gemm",  "moe",
                                             "communication", "elementwise", "overhead"};

// NaN cannot be written in JSON, but a writer may emit a huge or infinite
// value after a division by zero; Get() already rejects non-finite numbers.
Status Positive(JsonObject& r, const std::string& key, double v) {
  if (!(v > 0)) return r.Error(key, "must be > 0, got " + std::to_string(v));
  return Status::Ok();
}

// A kernel time beyond 1000 s is a unit mistake; the bound also keeps every
// sum and ratio the fit forms on these times finite.
constexpr double kMaxKernelUs = 1e9;
// Shape fields are dimensions, counts and message sizes (NCCL sweeps reach
// 2^32 bytes); far below int64 so that no use of them can overflow.
constexpr int64_t kMaxShapeValue = int64_t{1} << 50;

Status PositiveTime(JsonObject& r, const std::string& key, double v) {
  if (!(v > 0) || v > kMaxKernelUs) {
    return r.Error(key, "must be in (0, 1e9] microseconds, got " + std::to_string(v));
  }
  return Status::Ok();
}

// The cost of a kernel record: exactly one of median_us (a time),
// achieved_flops_per_s or bus_bandwidth_bytes_per_s (public files only: what
// the source printed when it printed no time).
Status ReadTiming(JsonObject& r, bool is_public, MeasuredKernel* k) {
  const bool has_time = r.Has("median_us");
  const bool has_rate = r.Has("achieved_flops_per_s");
  const bool has_bw = r.Has("bus_bandwidth_bytes_per_s");
  if (has_time + has_rate + has_bw > 1) {
    return r.Error(has_time ? "median_us" : "achieved_flops_per_s",
                   "give one of median_us, achieved_flops_per_s, bus_bandwidth_bytes_per_s");
  }
  if (!has_time && !is_public) {
    return r.Error("median_us", "missing required field");
  }
  if (has_time || !(has_rate || has_bw)) {
    if (!has_time) {
      return r.Error("median_us",
                     "missing required field (a public record without a time gives "
                     "achieved_flops_per_s or bus_bandwidth_bytes_per_s)");
    }
    CAPPLAN_RETURN_IF_ERROR(r.Get("median_us", &k->median_us, true));
    CAPPLAN_RETURN_IF_ERROR(PositiveTime(r, "median_us", k->median_us));
    k->timing = KernelTiming::kMedianUs;
    return Status::Ok();
  }
  if (has_rate) {
    CAPPLAN_RETURN_IF_ERROR(r.Get("achieved_flops_per_s", &k->achieved_flops_per_s, true));
    CAPPLAN_RETURN_IF_ERROR(Positive(r, "achieved_flops_per_s", k->achieved_flops_per_s));
    k->timing = KernelTiming::kFlopRate;
    return Status::Ok();
  }
  if (k->op != MeasuredOp::kCommunication) {
    return r.Error("bus_bandwidth_bytes_per_s", "only communication records give a bus bandwidth");
  }
  const nlohmann::json* bw = r.Raw("bus_bandwidth_bytes_per_s");
  if (bw->is_number()) {
    k->bus_bandwidth_lo = k->bus_bandwidth_hi = bw->get<double>();
  } else if (bw->is_array() && bw->size() == 2 && (*bw)[0].is_number() && (*bw)[1].is_number()) {
    k->bus_bandwidth_lo = (*bw)[0].get<double>();
    k->bus_bandwidth_hi = (*bw)[1].get<double>();
  } else {
    return r.Error("bus_bandwidth_bytes_per_s",
                   "must be a number or a range [lo, hi] in bytes/s, got " + EchoValue(bw->dump()));
  }
  if (!(k->bus_bandwidth_lo > 0) || !(k->bus_bandwidth_hi >= k->bus_bandwidth_lo) ||
      !std::isfinite(k->bus_bandwidth_hi)) {
    return r.Error("bus_bandwidth_bytes_per_s", "need 0 < lo <= hi, got " + EchoValue(bw->dump()));
  }
  k->timing = KernelTiming::kBusBandwidth;
  return Status::Ok();
}

Status ReadShape(JsonObject& r, MeasuredKernel* k) {
  const nlohmann::json* shape = r.Raw("shape");
  if (shape == nullptr) return r.Error("shape", "missing required field");
  if (!shape->is_object()) return r.Error("shape", "must be an object of integers");
  for (const auto& [key, v] : shape->items()) {
    // An unsigned value past INT64_MAX reads as negative here.
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxShapeValue) {
      return r.Error("shape", "'" + EchoValue(key) + "' must be an integer in [0, " +
                                  std::to_string(kMaxShapeValue) + "], got " + EchoValue(v.dump()));
    }
    k->shape[key] = v.get<int64_t>();
  }
  return Status::Ok();
}

// p10_us/p90_us and repeats: checked, not kept. Percentiles of one sample are
// ordered; anything else is a mislabelled column and the median cannot be
// trusted either.
Status CheckSpread(JsonObject& r, const MeasuredKernel& k) {
  std::optional<double> p10, p90;
  CAPPLAN_RETURN_IF_ERROR(r.Get("p10_us", &p10));
  if (p10) CAPPLAN_RETURN_IF_ERROR(PositiveTime(r, "p10_us", *p10));
  CAPPLAN_RETURN_IF_ERROR(r.Get("p90_us", &p90));
  if (p90) CAPPLAN_RETURN_IF_ERROR(PositiveTime(r, "p90_us", *p90));
  if (k.timing == KernelTiming::kMedianUs) {
    if (p10 && *p10 > k.median_us) {
      return r.Error("p10_us", "must be <= median_us (" + std::to_string(k.median_us) + "), got " +
                                   std::to_string(*p10));
    }
    if (p90 && *p90 < k.median_us) {
      return r.Error("p90_us", "must be >= median_us (" + std::to_string(k.median_us) + "), got " +
                                   std::to_string(*p90));
    }
  }
  std::optional<int64_t> repeats;
  CAPPLAN_RETURN_IF_ERROR(r.Get("repeats", &repeats));
  if (repeats) CAPPLAN_RETURN_IF_ERROR(r.CheckRange("repeats", *repeats, 1, 1e9));
  return Status::Ok();
}

// The napkin bytes and FLOPs; a FLOP-rate record's time follows from them.
Status ReadWork(JsonObject& r, MeasuredKernel* k) {
  // A bus bandwidth is all a collective record may give (no napkin bytes).
  const bool need_work = k->timing != KernelTiming::kBusBandwidth;
  CAPPLAN_RETURN_IF_ERROR(r.Get("bytes", &k->bytes, need_work));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("bytes", k->bytes, 0, 1e18));
  CAPPLAN_RETURN_IF_ERROR(r.Get("flops", &k->flops, need_work));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("flops", k->flops, 0, 1e21));
  if (k->timing == KernelTiming::kFlopRate) {
    if (!(k->flops > 0)) return r.Error("flops", "achieved_flops_per_s needs flops > 0");
    k->median_us = k->flops / k->achieved_flops_per_s * 1e6;
    if (!(k->median_us <= kMaxKernelUs)) {
      return r.Error("achieved_flops_per_s", "implies a kernel time beyond 1e9 microseconds");
    }
  }
  return Status::Ok();
}

Status ReadCheck(JsonObject& r, MeasuredKernel* k) {
  std::optional<double> err;
  CAPPLAN_RETURN_IF_ERROR(r.Get("max_abs_err", &err));
  CAPPLAN_RETURN_IF_ERROR(r.Get("check", &k->check));
  if (k->check.empty()) return Status::Ok();
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("check", k->check, {"pass", "fail", "skipped"}));
  if (k->check == "fail") {
    return r.Error("check", "the kernel failed its correctness check; its time is not usable");
  }
  return Status::Ok();
}

// An attention record's op: the KV append, a prefill or (any other
// attention kernel) a decode.
MeasuredOp AttentionOp(const std::string& kernel) {
  if (kernel == "paged_kv_append") return MeasuredOp::kKvAppend;
  if (kernel.find("prefill") != std::string::npos) return MeasuredOp::kAttentionPrefill;
  return MeasuredOp::kAttentionDecode;
}

// An overhead record's op: the verify batch, the two launch costs, or an
// overhead no fit uses.
MeasuredOp OverheadOp(const std::string& kernel) {
  if (kernel == "kv_integrity_verify") return MeasuredOp::kKvVerify;
  if (kernel == "kernel_launch") return MeasuredOp::kKernelLaunch;
  if (kernel == "graph_launch") return MeasuredOp::kGraphLaunch;
  return MeasuredOp::kOtherOverhead;
}

// The record's op_class (one of kOpClasses, else an error naming them) and,
// with its kernel name (read first), the op it measures.
Status ReadOp(JsonObject& r, MeasuredKernel* k) {
  std::string op_class;
  CAPPLAN_RETURN_IF_ERROR(r.Get("op_class", &op_class, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("op_class", op_class, kOpClasses));
  if (op_class == "attention") {
    k->op = AttentionOp(k->kernel);
  } else if (op_class == "dense_gemm") {
    k->op = MeasuredOp::kDenseGemm;
  } else if (op_class == "moe") {
    k->op = MeasuredOp::kMoe;
  } else if (op_class == "communication") {
    k->op = MeasuredOp::kCommunication;
  } else if (op_class == "elementwise") {
    k->op = MeasuredOp::kElementwise;
  } else {  // "overhead", the one class left in kOpClasses
    k->op = OverheadOp(k->kernel);
  }
  return Status::Ok();
}

Status ReadRecord(JsonObject& r, bool is_public, MeasuredKernel* k) {
  CAPPLAN_RETURN_IF_ERROR(r.Get("kernel", &k->kernel, true));
  CAPPLAN_RETURN_IF_ERROR(ReadOp(r, k));
  CAPPLAN_RETURN_IF_ERROR(r.Get("variant", &k->variant));
  CAPPLAN_RETURN_IF_ERROR(r.Get("implementation", &k->implementation));
  CAPPLAN_RETURN_IF_ERROR(r.Get("dtype", &k->dtype, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("weight_dtype", &k->weight_dtype));
  CAPPLAN_RETURN_IF_ERROR(r.Get("kv_dtype", &k->kv_dtype));
  CAPPLAN_RETURN_IF_ERROR(r.Get("note", &k->note));
  CAPPLAN_RETURN_IF_ERROR(ReadShape(r, k));
  CAPPLAN_RETURN_IF_ERROR(ReadTiming(r, is_public, k));
  CAPPLAN_RETURN_IF_ERROR(CheckSpread(r, *k));
  CAPPLAN_RETURN_IF_ERROR(ReadWork(r, k));
  CAPPLAN_RETURN_IF_ERROR(ReadCheck(r, k));
  return r.Finish({"kind"});
}

Status GetCount(JsonObject& o, const char* key, int64_t lo, int64_t* out) {
  CAPPLAN_RETURN_IF_ERROR(o.Get(key, out, true));
  if (*out < lo) {
    return o.Error(key,
                   "must be an integer >= " + std::to_string(lo) + ", got " + std::to_string(*out));
  }
  return Status::Ok();
}

// A step record's batch, read per `step` (MEASUREMENTS.md); unknown or
// missing keys name /records/N/batch/KEY.
Status ReadStepBatch(JsonObject& b, MeasuredStep* s) {
  CAPPLAN_RETURN_IF_ERROR(b.CheckObject());
  if (s->step == "decode") {
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "running_requests", 1, &s->running_requests));
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "kv_tokens", s->running_requests, &s->kv_tokens));
  } else if (s->step == "latency") {
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "batch_size", 1, &s->batch_size));
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "input_tokens", 1, &s->input_tokens));
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "output_tokens", 1, &s->output_tokens));
  } else {
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "concurrency", 1, &s->concurrency));
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "output_tokens", 1, &s->output_tokens));
    CAPPLAN_RETURN_IF_ERROR(GetCount(b, "input_tokens_min", 1, &s->input_tokens_min));
    CAPPLAN_RETURN_IF_ERROR(
        GetCount(b, "input_tokens_max", s->input_tokens_min, &s->input_tokens_max));
  }
  return b.Finish();
}

Status ReadStep(JsonObject& r, MeasuredStep* s) {
  CAPPLAN_RETURN_IF_ERROR(r.Get("step", &s->step, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("step", s->step, {"decode", "latency", "itl_vs_input"}));
  CAPPLAN_RETURN_IF_ERROR(r.Get("engine", &s->engine, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("engine", s->engine, {"sglang", "vllm"}));
  CAPPLAN_RETURN_IF_ERROR(r.Get("engine_version", &s->engine_version, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("model", &s->model, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("model_card", &s->model_card));
  CAPPLAN_RETURN_IF_ERROR(r.Get("tp", &s->tp, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("tp", s->tp, 1, 1024));
  CAPPLAN_RETURN_IF_ERROR(r.Get("weights", &s->weights, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("weights", s->weights, {"bf16", "fp16", "fp8", "int4"}));
  CAPPLAN_RETURN_IF_ERROR(r.Get("kv_dtype", &s->kv_dtype, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("kv_dtype", s->kv_dtype, {"bf16", "fp16", "fp8"}));
  CAPPLAN_RETURN_IF_ERROR(r.Get("cuda_graphs", &s->cuda_graphs));
  CAPPLAN_RETURN_IF_ERROR(r.Get("note", &s->note));
  {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject b, r.Child("batch", true));
    CAPPLAN_RETURN_IF_ERROR(ReadStepBatch(b, s));
  }
  if (s->step == "decode") {
    CAPPLAN_RETURN_IF_ERROR(r.Get("step_ms", &s->step_ms, true));
    CAPPLAN_RETURN_IF_ERROR(Positive(r, "step_ms", s->step_ms));
  } else if (s->step == "latency") {
    CAPPLAN_RETURN_IF_ERROR(r.Get("mean_latency_ms", &s->mean_latency_ms, true));
    CAPPLAN_RETURN_IF_ERROR(Positive(r, "mean_latency_ms", s->mean_latency_ms));
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject f, r.Child("itl_fit", true));
    CAPPLAN_RETURN_IF_ERROR(f.Get("intercept_ms", &s->itl_intercept_ms, true));
    CAPPLAN_RETURN_IF_ERROR(Positive(f, "intercept_ms", s->itl_intercept_ms));
    CAPPLAN_RETURN_IF_ERROR(f.Get("ms_per_input_token", &s->itl_ms_per_input_token, true));
    CAPPLAN_RETURN_IF_ERROR(f.CheckRange("ms_per_input_token", s->itl_ms_per_input_token, 0, 1e3));
    CAPPLAN_RETURN_IF_ERROR(f.Finish());
  }
  return r.Finish({"kind"});
}

}  // namespace

// The `source` object of a public file: where its figures were published.
Status ReadPublicSource(JsonObject& s, PublicSource* src) {
  CAPPLAN_RETURN_IF_ERROR(s.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(s.Get("url", &src->url, true));
  if (src->url.rfind("https://", 0) != 0) {
    return s.Error("url", "must be an https:// address, got '" + EchoValue(src->url) + "'");
  }
  CAPPLAN_RETURN_IF_ERROR(s.Get("date", &src->date, true));
  static const std::regex kDate(R"(\d{4}-\d{2}(-\d{2})?)");
  if (!std::regex_match(src->date, kDate) && src->date != "not recorded") {
    return s.Error("date", "must be YYYY-MM-DD, YYYY-MM or \"not recorded\", got '" +
                               EchoValue(src->date) + "'");
  }
  CAPPLAN_RETURN_IF_ERROR(s.Get("title", &src->title, true));
  CAPPLAN_RETURN_IF_ERROR(s.Get("note", &src->note, true));
  return s.Finish();
}

const std::vector<std::string>& KnownGpuModels() {
  static const std::vector<std::string> kModels = {"H100", "H800",  "H200", "B200",
                                                   "B300", "GB200", "GB300"};
  return kModels;
}

const std::vector<std::string>& KnownKernelEngines() {
  static const std::vector<std::string> kEngines = {"sglang", "trtllm", "vllm"};
  return kEngines;
}

// "GB200" contains "B200": a model inside a longer match is not a second one.
std::string GpuModelOf(const std::string& name) {
  std::vector<std::string> found;
  for (const std::string& m : KnownGpuModels()) {
    if (name.find(m) != std::string::npos) found.push_back(m);
  }
  std::string best;
  for (const std::string& m : found) {
    bool inside_another = false;
    for (const std::string& o : found) {
      inside_another |= o != m && o.find(m) != std::string::npos;
    }
    if (inside_another) continue;
    if (!best.empty()) return "";
    best = m;
  }
  return best;
}

std::string MeasurementSource::Describe() const {
  if (is_public) {
    return path + " (gpu " + gpu + ", public: " + source.url + ", " + source.date + ")";
  }
  return path + " (gpu " + gpu + ", driver " + (driver.empty() ? "-" : driver) + ", cuda " +
         (cuda.empty() ? "-" : cuda) + ", commit " + commit + ", date " + date + ")";
}

int64_t MeasuredKernel::Shape(const std::string& key, int64_t fallback) const {
  auto it = shape.find(key);
  return it == shape.end() ? fallback : it->second;
}

namespace {

// The engine and version the file's kernels ran in: optional, but never one
// without the other (a time without its version cannot be placed on a drift).
Status ReadEngineVersion(JsonObject& root, MeasurementSource* src) {
  CAPPLAN_RETURN_IF_ERROR(root.Get("engine", &src->engine));
  CAPPLAN_RETURN_IF_ERROR(root.Get("engine_version", &src->engine_version));
  if (src->engine.empty() && src->engine_version.empty()) return Status::Ok();
  if (src->engine.empty()) {
    return root.Error("engine", "missing: engine_version '" + EchoValue(src->engine_version) +
                                    "' needs the engine it versions");
  }
  CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("engine", src->engine, KnownKernelEngines()));
  // Release names as engines print them: 0.24.0, 1.3.0rc20, 0.4.5.post3.
  static const std::regex kVersion(R"(\d+(\.[0-9A-Za-z]+)+)");
  if (!std::regex_match(src->engine_version, kVersion)) {
    return root.Error("engine_version",
                      "must be the engine's release such as 0.24.0 or 1.3.0rc20, got '" +
                          EchoValue(src->engine_version) + "'");
  }
  return Status::Ok();
}

// The file's header: format, its public source or the local run's GPU,
// driver, CUDA, commit and date.
Status ReadSourceHeader(JsonObject& root, const std::string& path, MeasurementSource* src) {
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != "capplan.measurements.v1") {
    return root.Error("format",
                      "expected 'capplan.measurements.v1', got '" + EchoValue(format) + "'");
  }
  src->path = path;
  src->is_public = root.Has("source");
  if (src->is_public) {
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject so, root.Child("source", true));
    CAPPLAN_RETURN_IF_ERROR(ReadPublicSource(so, &src->source));
  }
  // A public source rarely records driver, CUDA or commit: optional there.
  const bool local = !src->is_public;
  CAPPLAN_RETURN_IF_ERROR(root.Get("gpu", &src->gpu, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("driver", &src->driver, local));
  CAPPLAN_RETURN_IF_ERROR(root.Get("cuda", &src->cuda, local));
  CAPPLAN_RETURN_IF_ERROR(root.Get("commit", &src->commit, local));
  CAPPLAN_RETURN_IF_ERROR(root.Get("date", &src->date, local));
  CAPPLAN_RETURN_IF_ERROR(root.Get("dry_run", &src->dry_run, local));
  CAPPLAN_RETURN_IF_ERROR(ReadEngineVersion(root, src));
  if (src->is_public) {
    if (src->dry_run) return root.Error("dry_run", "a public measurement is not a dry run");
    CAPPLAN_RETURN_IF_ERROR(root.CheckOneOf("gpu", src->gpu, KnownGpuModels()));
    src->gpu_model = src->gpu;
  } else if (src->dry_run && src->gpu == "cpu") {
    src->gpu_model = "cpu";
  } else {
    src->gpu_model = GpuModelOf(src->gpu);
    if (src->gpu_model.empty()) {
      return root.Error(
          "gpu", "unknown GPU '" + src->gpu +
                     "': measurements describe H100, H800, H200, B200, B300, GB200 or GB300 GPUs "
                     "(\"cpu\" for dry runs)");
    }
  }
  std::optional<int64_t> clock;  // type-checked only: no fit reads the clock
  return root.Get("sm_clock_mhz", &clock);
}

// Reads every record of the file into *kernels and *steps; `source` is the
// file's index in the set.
Status ReadRecords(const nlohmann::json& recs, const std::string& path, bool is_public, int source,
                   std::vector<MeasuredKernel>* kernels, std::vector<MeasuredStep>* steps) {
  for (size_t i = 0; i < recs.size(); ++i) {
    JsonObject r(recs[i], path, "/records/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
    std::string kind = "kernel";
    CAPPLAN_RETURN_IF_ERROR(r.Get("kind", &kind));
    CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("kind", kind, {"kernel", "step"}));
    if (kind == "step") {
      MeasuredStep st;
      CAPPLAN_RETURN_IF_ERROR(ReadStep(r, &st));
      st.source = source;
      st.index = static_cast<int>(i);
      steps->push_back(std::move(st));
      continue;
    }
    // A case the device sweep could not measure (check "error", its
    // message in "error") has no time to fit; the file keeps it as a finding.
    if (const nlohmann::json* c = r.Raw("check"); c != nullptr && *c == "error") continue;
    MeasuredKernel k;
    CAPPLAN_RETURN_IF_ERROR(ReadRecord(r, is_public, &k));
    k.source = source;
    k.index = static_cast<int>(i);
    kernels->push_back(std::move(k));
  }
  return Status::Ok();
}

}  // namespace

Status ReadMeasurementFile(const std::string& path, MeasurementSet* set) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  MeasurementSource src;
  CAPPLAN_RETURN_IF_ERROR(ReadSourceHeader(root, path, &src));
  const nlohmann::json* recs = root.Raw("records");
  if (recs == nullptr) return root.Error("records", "missing required field");
  if (!recs->is_array() || recs->empty()) {
    return root.Error("records", "must be a non-empty array of measurement records");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  // Parse into scratch vectors so a bad file adds nothing to *set.
  std::vector<MeasuredKernel> kernels;
  std::vector<MeasuredStep> steps;
  CAPPLAN_RETURN_IF_ERROR(ReadRecords(*recs, path, src.is_public,
                                      static_cast<int>(set->sources.size()), &kernels, &steps));
  for (auto& k : kernels) set->records.push_back(std::move(k));
  for (auto& st : steps) set->steps.push_back(std::move(st));
  set->sources.push_back(std::move(src));
  return Status::Ok();
}

Result<MeasurementSet> ReadMeasurements(const std::vector<std::string>& paths,
                                        const ReadOptions& options) {
  if (paths.empty()) return Status::Usage("calibrate: no measurement files given");
  MeasurementSet set;
  int first_local = -1;  // the first file measured here (index: sources grows)
  for (const std::string& p : paths) {
    CAPPLAN_RETURN_IF_ERROR(ReadMeasurementFile(p, &set));
    const MeasurementSource& s = set.sources.back();
    if (s.dry_run && !options.allow_dry_run) {
      return Status::Invalid(p +
                             ": /dry_run: file holds dry-run CPU timings, not GPU times; "
                             "measure on the GPU (engine/device/run.sh) or pass "
                             "--allow-dry-run to fit them anyway (marked as such)");
    }
    if (s.is_public) continue;
    if (first_local < 0) {
      first_local = static_cast<int>(set.sources.size()) - 1;
      continue;
    }
    const MeasurementSource* first = &set.sources[first_local];
    if (s.gpu != first->gpu || s.driver != first->driver) {
      return Status::Invalid(p + ": /gpu: measured on '" + s.gpu + "' driver '" + s.driver +
                             "' but " + first->path + " on '" + first->gpu + "' driver '" +
                             first->driver +
                             "'; one profile describes one GPU and driver, "
                             "calibrate each separately");
    }
  }
  return set;
}

}  // namespace capplan::calibrate
