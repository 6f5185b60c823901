#include "calibrate/measurements.h"

#include <cmath>

#include "common/json_util.h"

namespace capplan {

namespace {

const std::vector<std::string> kOpClasses = {"attention",     "dense_gemm",  "moe",
                                             "communication", "elementwise", "overhead"};

// NaN cannot be written in JSON, but a writer may emit a huge or infinite
// value after a division by zero; Get() already rejects non-finite numbers.
Status Positive(JsonObject& r, const std::string& key, double v) {
  if (!(v > 0)) return r.Error(key, "must be > 0, got " + std::to_string(v));
  return Status::Ok();
}

Status ReadRecord(JsonObject& r, MeasuredKernel* k) {
  CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
  CAPPLAN_RETURN_IF_ERROR(r.Get("kernel", &k->kernel, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("op_class", &k->op_class, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("op_class", k->op_class, kOpClasses));
  CAPPLAN_RETURN_IF_ERROR(r.Get("variant", &k->variant));
  CAPPLAN_RETURN_IF_ERROR(r.Get("dtype", &k->dtype, true));
  CAPPLAN_RETURN_IF_ERROR(r.Get("weight_dtype", &k->weight_dtype));
  CAPPLAN_RETURN_IF_ERROR(r.Get("kv_dtype", &k->kv_dtype));
  const nlohmann::json* shape = r.Raw("shape");
  if (shape == nullptr) return r.Error("shape", "missing required field");
  if (!shape->is_object()) return r.Error("shape", "must be an object of integers");
  for (const auto& [key, v] : shape->items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      return r.Error("shape", "'" + key + "' must be a non-negative integer, got " + v.dump());
    }
    k->shape[key] = v.get<int64_t>();
  }
  CAPPLAN_RETURN_IF_ERROR(r.Get("median_us", &k->median_us, true));
  CAPPLAN_RETURN_IF_ERROR(Positive(r, "median_us", k->median_us));
  for (const char* opt : {"p10_us", "p90_us"}) {
    std::optional<double> v;
    CAPPLAN_RETURN_IF_ERROR(r.Get(opt, &v));
    if (v) CAPPLAN_RETURN_IF_ERROR(Positive(r, opt, *v));
  }
  std::optional<int64_t> repeats;
  CAPPLAN_RETURN_IF_ERROR(r.Get("repeats", &repeats));
  if (repeats && *repeats < 1) return r.Error("repeats", "must be >= 1");
  CAPPLAN_RETURN_IF_ERROR(r.Get("bytes", &k->bytes, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("bytes", k->bytes, 0, 1e18));
  CAPPLAN_RETURN_IF_ERROR(r.Get("flops", &k->flops, true));
  CAPPLAN_RETURN_IF_ERROR(r.CheckRange("flops", k->flops, 0, 1e21));
  std::optional<double> err;
  CAPPLAN_RETURN_IF_ERROR(r.Get("max_abs_err", &err));
  CAPPLAN_RETURN_IF_ERROR(r.Get("check", &k->check));
  if (!k->check.empty()) {
    CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("check", k->check, {"pass", "fail", "skipped"}));
    if (k->check == "fail") {
      return r.Error("check", "the kernel failed its correctness check; its time is not usable");
    }
  }
  return r.Finish();
}

}  // namespace

std::string MeasurementSource::Describe() const {
  return path + " (gpu " + gpu + ", driver " + (driver.empty() ? "-" : driver) + ", cuda " +
         (cuda.empty() ? "-" : cuda) + ", commit " + commit + ", date " + date + ")";
}

int64_t MeasuredKernel::Shape(const std::string& key, int64_t fallback) const {
  auto it = shape.find(key);
  return it == shape.end() ? fallback : it->second;
}

Status ReadMeasurementFile(const std::string& path, MeasurementSet* set) {
  CAPPLAN_ASSIGN_OR_RETURN(nlohmann::json doc, ReadJsonFile(path));
  JsonObject root(doc, path, "");
  CAPPLAN_RETURN_IF_ERROR(root.CheckObject());
  std::string format;
  CAPPLAN_RETURN_IF_ERROR(root.Get("format", &format, true));
  if (format != "capplan.measurements.v1") {
    return root.Error("format", "expected 'capplan.measurements.v1', got '" + format + "'");
  }
  MeasurementSource src;
  src.path = path;
  CAPPLAN_RETURN_IF_ERROR(root.Get("gpu", &src.gpu, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("driver", &src.driver, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("cuda", &src.cuda, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("commit", &src.commit, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("date", &src.date, true));
  CAPPLAN_RETURN_IF_ERROR(root.Get("dry_run", &src.dry_run, true));
  std::optional<int64_t> clock;
  CAPPLAN_RETURN_IF_ERROR(root.Get("sm_clock_mhz", &clock));
  const nlohmann::json* recs = root.Raw("records");
  if (recs == nullptr) return root.Error("records", "missing required field");
  if (!recs->is_array() || recs->empty()) {
    return root.Error("records", "must be a non-empty array of measurement records");
  }
  CAPPLAN_RETURN_IF_ERROR(root.Finish());
  const int source = static_cast<int>(set->sources.size());
  for (size_t i = 0; i < recs->size(); ++i) {
    JsonObject r((*recs)[i], path, "/records/" + std::to_string(i));
    MeasuredKernel k;
    CAPPLAN_RETURN_IF_ERROR(ReadRecord(r, &k));
    k.source = source;
    k.index = static_cast<int>(i);
    set->records.push_back(std::move(k));
  }
  set->sources.push_back(std::move(src));
  return Status::Ok();
}

Result<MeasurementSet> ReadMeasurements(const std::vector<std::string>& paths,
                                        const ReadOptions& options) {
  if (paths.empty()) return Status::Usage("calibrate: no measurement files given");
  MeasurementSet set;
  for (const std::string& p : paths) {
    CAPPLAN_RETURN_IF_ERROR(ReadMeasurementFile(p, &set));
    const MeasurementSource& s = set.sources.back();
    if (s.dry_run && !options.allow_dry_run) {
      return Status::Invalid(p +
                             ": /dry_run: file holds dry-run CPU timings, not GPU times; "
                             "measure on the GPU (engine/device/run.sh) or pass "
                             "--allow-dry-run to fit them anyway (marked as such)");
    }
    const MeasurementSource& first = set.sources.front();
    if (s.gpu != first.gpu || s.driver != first.driver) {
      return Status::Invalid(p + ": /gpu: measured on '" + s.gpu + "' driver '" + s.driver +
                             "' but " + first.path + " on '" + first.gpu + "' driver '" +
                             first.driver +
                             "'; one profile describes one GPU and driver, "
                             "calibrate each separately");
    }
  }
  return set;
}

}  // namespace capplan
