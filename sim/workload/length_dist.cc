#include "sim/workload/length_dist.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

#include "common/atomic_file.h"
#include "sim/workload/quantile_dist.h"

namespace capplan::sim {

namespace {

// Standard normal 0.9 quantile, Phi^-1(0.9) (any statistics table; also
// scipy.stats.norm.ppf(0.9)). Turns a median/p90 pair into sigma.
constexpr double kNormalZ90 = 1.2815515655446004;

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

class FixedDist : public LengthDist {
 public:
  explicit FixedDist(int64_t v) : v_(v) {}

 protected:
  double Draw(WorkloadRng&) const override { return static_cast<double>(v_); }
  std::string DescribeParams() const override { return "fixed(" + std::to_string(v_) + ")"; }

 private:
  int64_t v_;
};

class UniformDist : public LengthDist {
 public:
  UniformDist(int64_t lo, int64_t hi) : lo_(lo), hi_(hi) {}

 protected:
  double Draw(WorkloadRng& rng) const override {
    return static_cast<double>(rng.UniformInt(lo_, hi_));
  }
  std::string DescribeParams() const override {
    return "uniform[" + std::to_string(lo_) + "," + std::to_string(hi_) + "]";
  }

 private:
  int64_t lo_, hi_;
};

class NormalDist : public LengthDist {
 public:
  NormalDist(double mean, double std) : mean_(mean), std_(std) {}

 protected:
  double Draw(WorkloadRng& rng) const override { return mean_ + std_ * rng.StandardNormal(); }
  std::string DescribeParams() const override {
    return "normal(mean=" + Num(mean_) + ",std=" + Num(std_) + ")";
  }

 private:
  double mean_, std_;
};

class LognormalDist : public LengthDist {
 public:
  LognormalDist(double mu, double sigma) : mu_(mu), sigma_(sigma) {}

 protected:
  double Draw(WorkloadRng& rng) const override {
    return std::exp(mu_ + sigma_ * rng.StandardNormal());
  }
  std::string DescribeParams() const override {
    return "lognormal(median=" + Num(std::exp(mu_)) + ",sigma=" + Num(sigma_) + ")";
  }

 private:
  double mu_, sigma_;
};

class EmpiricalDist : public LengthDist {
 public:
  EmpiricalDist(std::vector<int64_t> values, std::vector<double> weights)
      : values_(std::move(values)) {
    double sum = 0;
    cumulative_.reserve(weights.size());
    for (double w : weights) cumulative_.push_back(sum += w);
  }

 protected:
  double Draw(WorkloadRng& rng) const override {
    const double u = rng.Uniform01() * cumulative_.back();
    auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    // u < total always, but guard the last bucket against rounding.
    if (it == cumulative_.end()) --it;
    return static_cast<double>(values_[it - cumulative_.begin()]);
  }
  std::string DescribeParams() const override {
    return "empirical(" + std::to_string(values_.size()) + " values)";
  }

 private:
  std::vector<int64_t> values_;
  std::vector<double> cumulative_;
};

Status CheckPositiveInt(JsonObject& spec, std::string_view key, int64_t v) {
  if (v < 1 || v > kMaxRequestTokens) {
    return spec.Error(key, "must be a token count in [1, " + std::to_string(kMaxRequestTokens) +
                               "], got " + std::to_string(v));
  }
  return Status::Ok();
}

Result<std::unique_ptr<LengthDist>> MakeFixed(JsonObject& spec, const std::string&) {
  int64_t v = 0;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("value", &v, true));
  CAPPLAN_RETURN_IF_ERROR(CheckPositiveInt(spec, "value", v));
  return std::unique_ptr<LengthDist>(new FixedDist(v));
}

// Either {"min", "max"} (inclusive) or {"value", "range_ratio", "convention"}
// mirroring the two serving benchmarks' --random-range-ratio (the same flag
// means different ranges in vLLM's vllm/benchmarks/serve.py and SGLang's
// python/sglang/bench_serving.py).
Result<std::unique_ptr<LengthDist>> MakeUniform(JsonObject& spec, const std::string&) {
  if (spec.Has("value") || spec.Has("range_ratio") || spec.Has("convention")) {
    if (spec.Has("min")) {
      return spec.Error("min", "give either min/max or value/range_ratio, not both");
    }
    int64_t value = 0;
    double r = 0;
    std::string convention;
    CAPPLAN_RETURN_IF_ERROR(spec.Get("value", &value, true));
    CAPPLAN_RETURN_IF_ERROR(CheckPositiveInt(spec, "value", value));
    CAPPLAN_RETURN_IF_ERROR(spec.Get("range_ratio", &r, true));
    CAPPLAN_RETURN_IF_ERROR(spec.Get("convention", &convention, true));
    CAPPLAN_RETURN_IF_ERROR(spec.CheckOneOf("convention", convention, {"vllm", "sglang"}));
    const double v = static_cast<double>(value);
    int64_t lo, hi;
    if (convention == "vllm") {
      // vLLM RandomDataset: [floor(v*(1-r)), ceil(v*(1+r))], r in [0, 1).
      CAPPLAN_RETURN_IF_ERROR(spec.CheckRange("range_ratio", r, 0.0, 0.999999));
      lo = static_cast<int64_t>(std::floor(v * (1.0 - r)));
      hi = static_cast<int64_t>(std::ceil(v * (1.0 + r)));
    } else {
      // SGLang bench_serving: [max(int(v*r), 1), v], r in [0, 1].
      CAPPLAN_RETURN_IF_ERROR(spec.CheckRange("range_ratio", r, 0.0, 1.0));
      lo = static_cast<int64_t>(v * r);
      hi = value;
    }
    return std::unique_ptr<LengthDist>(new UniformDist(std::max<int64_t>(lo, 1), hi));
  }
  int64_t lo = 0, hi = 0;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("min", &lo, true));
  CAPPLAN_RETURN_IF_ERROR(spec.Get("max", &hi, true));
  CAPPLAN_RETURN_IF_ERROR(CheckPositiveInt(spec, "min", lo));
  CAPPLAN_RETURN_IF_ERROR(CheckPositiveInt(spec, "max", hi));
  if (hi < lo) {
    return spec.Error("max",
                      "must be >= min (" + std::to_string(lo) + "), got " + std::to_string(hi));
  }
  return std::unique_ptr<LengthDist>(new UniformDist(lo, hi));
}

Result<std::unique_ptr<LengthDist>> MakeNormal(JsonObject& spec, const std::string&) {
  double mean = 0, sd = 0;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("mean", &mean, true));
  CAPPLAN_RETURN_IF_ERROR(spec.Get("std", &sd, true));
  if (mean < 1) return spec.Error("mean", "must be >= 1 token, got " + Num(mean));
  if (sd < 0) return spec.Error("std", "must be >= 0, got " + Num(sd));
  return std::unique_ptr<LengthDist>(new NormalDist(mean, sd));
}

// ln(tokens) ~ N(mu, sigma^2), given as {"mu", "sigma"} or as the
// distribution's own {"median", "p90"} (mu = ln median, sigma = ln(p90 /
// median) / z0.9), which is how trace summaries usually report lengths.
Result<std::unique_ptr<LengthDist>> MakeLognormal(JsonObject& spec, const std::string&) {
  if (spec.Has("median") || spec.Has("p90")) {
    if (spec.Has("mu") || spec.Has("sigma")) {
      return spec.Error("median", "give either mu/sigma or median/p90, not both");
    }
    double median = 0, p90 = 0;
    CAPPLAN_RETURN_IF_ERROR(spec.Get("median", &median, true));
    CAPPLAN_RETURN_IF_ERROR(spec.Get("p90", &p90, true));
    if (median < 1) return spec.Error("median", "must be >= 1 token, got " + Num(median));
    if (p90 < median) {
      return spec.Error("p90", "must be >= median (" + Num(median) + "), got " + Num(p90));
    }
    return std::unique_ptr<LengthDist>(
        new LognormalDist(std::log(median), std::log(p90 / median) / kNormalZ90));
  }
  double mu = 0, sigma = 0;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("mu", &mu, true));
  CAPPLAN_RETURN_IF_ERROR(spec.Get("sigma", &sigma, true));
  // exp(43) ~ 5e18 tokens: anything beyond is surely a unit mistake.
  CAPPLAN_RETURN_IF_ERROR(spec.CheckRange("mu", mu, 0.0, 43.0));
  CAPPLAN_RETURN_IF_ERROR(spec.CheckRange("sigma", sigma, 0.0, 10.0));
  return std::unique_ptr<LengthDist>(new LognormalDist(mu, sigma));
}

Result<std::unique_ptr<LengthDist>> MakeEmpirical(JsonObject& spec, const std::string& dir) {
  std::vector<int64_t> values;
  std::vector<double> weights;
  if (spec.Has("path")) {
    if (spec.Has("values")) return spec.Error("values", "give either values or path, not both");
    std::string path;
    CAPPLAN_RETURN_IF_ERROR(spec.Get("path", &path, true));
    const std::string resolved = ResolvePath(path, dir);
    Status st = ReadLengthsFile(resolved, &values, &weights);
    if (!st.ok()) return st.WithPrefix(spec.origin() + ": " + spec.PathOf("path"));
  } else {
    std::vector<double> raw;
    CAPPLAN_RETURN_IF_ERROR(spec.Get("values", &raw, true));
    if (raw.empty()) return spec.Error("values", "must not be empty");
    for (double d : raw) {
      if (d < 1 || d != std::floor(d) || d > static_cast<double>(kMaxRequestTokens)) {
        return spec.Error("values", "must be integer token counts in [1, " +
                                        std::to_string(kMaxRequestTokens) + "], found " + Num(d));
      }
      values.push_back(static_cast<int64_t>(d));
    }
    weights.assign(values.size(), 1.0);
    if (spec.Has("weights")) {
      CAPPLAN_RETURN_IF_ERROR(spec.Get("weights", &weights, true));
      if (weights.size() != values.size()) {
        return spec.Error("weights", "needs one weight per value (" +
                                         std::to_string(values.size()) + "), got " +
                                         std::to_string(weights.size()));
      }
    }
  }
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w)) return spec.Error("weights", "must be finite and >= 0");
    total += w;
  }
  if (!(total > 0)) return spec.Error("weights", "must not all be zero");
  return std::unique_ptr<LengthDist>(new EmpiricalDist(std::move(values), std::move(weights)));
}

}  // namespace

Status ReadLengthsFile(const std::string& path, std::vector<int64_t>* values,
                       std::vector<double>* weights) {
  CAPPLAN_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const auto comma = line.find(',');
    const std::string len_text =
        line.substr(first, comma == std::string::npos ? std::string::npos : comma - first);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), v);
    if (ec != std::errc() || p != len_text.data() + len_text.size() || v < 1 ||
        v > kMaxRequestTokens) {
      return Status::Usage(where + ": expected a token count in [1, " +
                           std::to_string(kMaxRequestTokens) + "], got '" + EchoValue(line) + "'");
    }
    double w = 1.0;
    if (comma != std::string::npos) {
      const std::string wt = line.substr(comma + 1);
      char* end = nullptr;
      w = std::strtod(wt.c_str(), &end);
      if (end == wt.c_str() || *end != '\0' || !(w >= 0) || !std::isfinite(w)) {
        return Status::Usage(where + ": expected a weight >= 0 after the comma, got '" + EchoValue(wt) + "'");
      }
    }
    values->push_back(v);
    weights->push_back(w);
  }
  if (values->empty()) return Status::Usage(path + ": no lengths in file");
  return Status::Ok();
}


int64_t LengthDist::Sample(WorkloadRng& rng) const {
  const double d = Draw(rng);
  // Compare as double first: llround of a value past int64 is undefined.
  if (!(d < static_cast<double>(max_))) return max_;
  if (!(d >= 1.0)) return 1;
  return std::min<int64_t>(std::llround(d), max_);
}

std::string LengthDist::Describe() const {
  std::string s = DescribeParams();
  if (max_ != kMaxRequestTokens) s += "<=" + std::to_string(max_);
  return s;
}

std::string ResolvePath(const std::string& path, const std::string& scenario_dir) {
  if (path.empty() || path[0] == '/' || scenario_dir.empty()) return path;
  return scenario_dir + "/" + path;
}

const Registry<LengthDistFactory>& LengthDistRegistry() {
  static const Registry<LengthDistFactory>* registry = [] {
    auto* r = new Registry<LengthDistFactory>("length distribution");
    r->Add("fixed", MakeFixed, "every request the same: value");
    r->Add("uniform", MakeUniform, "min..max inclusive, or value/range_ratio/convention");
    r->Add("normal", MakeNormal, "mean, std; clamped to >= 1");
    r->Add("lognormal", MakeLognormal, "mu/sigma of ln(tokens), or median/p90");
    r->Add("empirical", MakeEmpirical, "values [+weights], or path to a lengths file");
    r->Add("quantiles", MakeQuantiles,
           "quantile points from preset, path or values, interpolated; optional mean");
    return r;
  }();
  return *registry;
}

Result<std::unique_ptr<LengthDist>> ParseLengthDist(JsonObject& spec,
                                                    const std::string& scenario_dir) {
  CAPPLAN_RETURN_IF_ERROR(spec.CheckObject());
  std::string name;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("dist", &name, true));
  auto factory = LengthDistRegistry().Find(name);
  if (!factory.ok()) return factory.status().WithPrefix(spec.origin() + ": " + spec.PathOf("dist"));
  std::optional<int64_t> max;
  CAPPLAN_RETURN_IF_ERROR(spec.Get("max", &max));
  if (max && (*max < 1 || *max > kMaxRequestTokens)) {
    return spec.Error("max", "must be a token count in [1, " + std::to_string(kMaxRequestTokens) +
                                 "], got " + std::to_string(*max));
  }
  CAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<LengthDist> dist, (*factory)(spec, scenario_dir));
  if (max) dist->set_max(*max);
  CAPPLAN_RETURN_IF_ERROR(spec.Finish());
  return dist;
}

}  // namespace capplan::sim
