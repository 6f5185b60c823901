#include "sim/workload/quantile_dist.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/data_path.h"

namespace capplan::sim {
namespace {

constexpr const char* kPresetDir = "sim/workload/presets";

class QuantileDist : public LengthDist {
 public:
  QuantileDist(std::vector<double> points, double scale, std::string what)
      : points_(std::move(points)), scale_(scale), what_(std::move(what)) {}

 protected:
  double Draw(WorkloadRng& rng) const override {
    const double u = rng.Uniform01() * static_cast<double>(points_.size() - 1);
    const size_t i = std::min(static_cast<size_t>(u), points_.size() - 2);
    const double f = u - static_cast<double>(i);
    return (points_[i] + f * (points_[i + 1] - points_[i])) * scale_;
  }
  std::string DescribeParams() const override { return "quantiles(" + what_ + ")"; }

 private:
  std::vector<double> points_;
  double scale_;
  std::string what_;
};

// The mean of the piecewise-linear quantile function over [0, 1].
double QuantileMean(const std::vector<double>& q) {
  double sum = 0;
  for (size_t i = 0; i + 1 < q.size(); ++i) sum += 0.5 * (q[i] + q[i + 1]);
  return sum / static_cast<double>(q.size() - 1);
}

std::string PresetNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(DataPath(kPresetDir), ec)) {
    if (e.path().extension() == ".txt") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none found under " + DataPath(kPresetDir) : out;
}

bool IsPresetName(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Reads the points from `preset`, `path` or `values` (exactly one); `what`
// names the source for Describe().
Status ReadPoints(JsonObject& spec, const std::string& dir, std::vector<double>* points,
                  std::string* what) {
  const int given = spec.Has("preset") + spec.Has("path") + spec.Has("values");
  if (given != 1) {
    return spec.Error(spec.Has("preset") ? "preset" : spec.Has("path") ? "path" : "values",
                      "give exactly one of preset, path or values");
  }
  std::string file, key;
  if (spec.Has("preset")) {
    key = "preset";
    CAPPLAN_RETURN_IF_ERROR(spec.Get("preset", what, true));
    if (!IsPresetName(*what) || !std::filesystem::exists(DataPath(std::string(kPresetDir) + "/" +
                                                                  *what + ".txt"))) {
      return spec.Error("preset", "unknown preset '" + *what + "'; presets: " + PresetNames());
    }
    file = DataPath(std::string(kPresetDir) + "/" + *what + ".txt");
  } else if (spec.Has("path")) {
    key = "path";
    std::string path;
    CAPPLAN_RETURN_IF_ERROR(spec.Get("path", &path, true));
    file = ResolvePath(path, dir);
    *what = path;
  }
  if (!file.empty()) {
    std::vector<int64_t> values;
    std::vector<double> weights;
    Status st = ReadLengthsFile(file, &values, &weights);
    if (!st.ok()) return st.WithPrefix(spec.origin() + ": " + spec.PathOf(key));
    if (std::any_of(weights.begin(), weights.end(), [](double w) { return w != 1.0; })) {
      return spec.Error(key, file + " has weights; quantile points are one length per line");
    }
    points->assign(values.begin(), values.end());
  } else {
    CAPPLAN_RETURN_IF_ERROR(spec.Get("values", points, true));
    *what = "values";
  }
  if (points->size() < 2) return spec.Error(key.empty() ? "values" : key, "needs at least 2 points");
  for (size_t i = 0; i < points->size(); ++i) {
    const double v = (*points)[i];
    if (!(v >= 1) || v > static_cast<double>(kMaxRequestTokens)) {
      return spec.Error(key.empty() ? "values" : key,
                        "points must be token counts in [1, " + std::to_string(kMaxRequestTokens) +
                            "]");
    }
    if (i > 0 && v < (*points)[i - 1]) {
      return spec.Error(key.empty() ? "values" : key,
                        "points must not decrease (quantiles in probability order); point " +
                            std::to_string(i) + " is below the one before it");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<LengthDist>> MakeQuantiles(JsonObject& spec, const std::string& dir) {
  std::vector<double> points;
  std::string what;
  CAPPLAN_RETURN_IF_ERROR(ReadPoints(spec, dir, &points, &what));
  std::optional<double> mean;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("mean", &mean));
  double scale = 1.0;
  std::ostringstream desc;
  desc << what << "," << points.size() << " points";
  if (mean) {
    CAPPLAN_RETURN_IF_ERROR(
        spec.CheckRange("mean", *mean, 1.0, static_cast<double>(kMaxRequestTokens)));
    scale = *mean / QuantileMean(points);
    desc << ",mean=" << *mean;
  }
  return std::unique_ptr<LengthDist>(new QuantileDist(std::move(points), scale, desc.str()));
}

}  // namespace capplan::sim
