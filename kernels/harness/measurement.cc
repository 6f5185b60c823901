#include "kernels/harness/measurement.h"

#include <ctime>

#include "common/atomic_file.h"
#include "common/json_util.h"

namespace capplan::kernels {

int64_t MeasurementRecord::ShapeValue(const std::string& key, int64_t fallback) const {
  for (const auto& [k, v] : shape) {
    if (k == key) return v;
  }
  return fallback;
}

std::string UtcNowIso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json RecordToJson(const MeasurementRecord& r) {
  nlohmann::json j;
  j["kernel"] = r.kernel;
  j["op_class"] = r.op_class;
  if (!r.variant.empty()) j["variant"] = r.variant;
  j["dtype"] = r.dtype;
  if (!r.weight_dtype.empty()) j["weight_dtype"] = r.weight_dtype;
  if (!r.kv_dtype.empty()) j["kv_dtype"] = r.kv_dtype;
  nlohmann::json shape = nlohmann::json::object();
  for (const auto& [k, v] : r.shape) shape[k] = v;
  j["shape"] = shape;
  j["median_us"] = r.timing.median_us;
  j["p10_us"] = r.timing.p10_us;
  j["p90_us"] = r.timing.p90_us;
  j["repeats"] = r.timing.repeats;
  j["bytes"] = r.bytes;
  j["flops"] = r.flops;
  if (r.max_abs_err) j["max_abs_err"] = *r.max_abs_err;
  if (!r.check.empty()) j["check"] = r.check;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

nlohmann::json MeasurementsToJson(const RunInfo& info, const std::vector<MeasurementRecord>& recs) {
  nlohmann::json j;
  j["format"] = "capplan.measurements.v1";
  j["gpu"] = info.gpu;
  j["driver"] = info.driver;
  j["cuda"] = info.cuda;
  j["commit"] = info.commit;
  j["date"] = info.date.empty() ? UtcNowIso8601() : info.date;
  j["dry_run"] = info.dry_run;
  if (info.sm_clock_mhz) j["sm_clock_mhz"] = *info.sm_clock_mhz;
  j["records"] = nlohmann::json::array();
  for (const auto& r : recs) j["records"].push_back(RecordToJson(r));
  return j;
}

Status WriteMeasurements(const std::string& path, const RunInfo& info,
                         const std::vector<MeasurementRecord>& recs) {
  return WriteFileAtomic(path, DumpJson(MeasurementsToJson(info, recs)) + "\n");
}

Status ValidateMeasurementsJson(const nlohmann::json& doc, const std::string& origin) {
  JsonObject o(doc, origin, "");
  CAPPLAN_RETURN_IF_ERROR(o.CheckObject());
  std::string s;
  bool dry = false;
  CAPPLAN_RETURN_IF_ERROR(o.CheckFormat("capplan.measurements.v1"));
  for (const char* k : {"gpu", "driver", "cuda", "commit", "date"}) {
    CAPPLAN_RETURN_IF_ERROR(o.Get(k, &s, true));
  }
  CAPPLAN_RETURN_IF_ERROR(o.Get("dry_run", &dry, true));
  std::optional<int64_t> clock;
  CAPPLAN_RETURN_IF_ERROR(o.Get("sm_clock_mhz", &clock));
  const nlohmann::json* recs = o.Raw("records");
  if (recs == nullptr || !recs->is_array()) return o.Error("records", "must be an array");
  for (size_t i = 0; i < recs->size(); ++i) {
    JsonObject r((*recs)[i], origin, "/records/" + std::to_string(i));
    CAPPLAN_RETURN_IF_ERROR(r.CheckObject());
    std::string op, check;
    for (const char* k : {"kernel", "dtype"}) CAPPLAN_RETURN_IF_ERROR(r.Get(k, &s, true));
    CAPPLAN_RETURN_IF_ERROR(r.Get("op_class", &op, true));
    CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf(
        "op_class", op,
        {"attention", "dense_gemm", "moe", "communication", "elementwise", "overhead"}));
    for (const char* k : {"variant", "weight_dtype", "kv_dtype"}) {
      CAPPLAN_RETURN_IF_ERROR(r.Get(k, &s));
    }
    CAPPLAN_ASSIGN_OR_RETURN(JsonObject shape, r.Child("shape", true));
    for (auto it = shape.json().begin(); it != shape.json().end(); ++it) {
      if (!it.value().is_number_integer()) {
        return shape.Error(it.key(), "shape values must be integers");
      }
    }
    double v = 0;
    for (const char* k : {"median_us", "bytes", "flops"}) {
      CAPPLAN_RETURN_IF_ERROR(r.Get(k, &v, true));
      CAPPLAN_RETURN_IF_ERROR(r.CheckRange(k, v, 0.0, 1e30));
    }
    std::optional<double> opt;
    for (const char* k : {"p10_us", "p90_us", "max_abs_err"}) {
      CAPPLAN_RETURN_IF_ERROR(r.Get(k, &opt));
    }
    std::optional<int64_t> reps;
    CAPPLAN_RETURN_IF_ERROR(r.Get("repeats", &reps));
    CAPPLAN_RETURN_IF_ERROR(r.Get("check", &check));
    if (!check.empty()) {
      CAPPLAN_RETURN_IF_ERROR(r.CheckOneOf("check", check, {"pass", "fail", "skipped", "error"}));
    }
    std::string error;
    CAPPLAN_RETURN_IF_ERROR(r.Get("error", &error));
    if (check == "error" && error.empty()) return r.Error("error", "an error record says why");
    CAPPLAN_RETURN_IF_ERROR(r.Finish());
  }
  return o.Finish();
}

}  // namespace capplan::kernels
