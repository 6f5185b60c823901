// Token-length distributions for generated workloads, registered by name
// ("fixed", "uniform", "normal", "lognormal", "empirical", "quantiles"). The JSON object
// {"dist": NAME, ...parameters..., "max": M} is documented field by field in
// sim/workload/README.md.
#ifndef CAPPLAN_SIM_WORKLOAD_LENGTH_DIST_H_
#define CAPPLAN_SIM_WORKLOAD_LENGTH_DIST_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "common/json_util.h"
#include "common/registry.h"
#include "common/status.h"
#include "sim/workload/random.h"
#include "sim/workload/workload.h"

namespace capplan::sim {

class LengthDist {
 public:
  virtual ~LengthDist() = default;
  // A token count in [1, max] (max <= kMaxRequestTokens). Continuous
  // distributions round to nearest.
  int64_t Sample(WorkloadRng& rng) const;
  // Short human description, e.g. "lognormal(mu=7.6,sigma=0.8)".
  std::string Describe() const;
  void set_max(int64_t max) { max_ = max; }
  int64_t max() const { return max_; }

 protected:
  // Raw draw before rounding and clamping.
  virtual double Draw(WorkloadRng& rng) const = 0;
  virtual std::string DescribeParams() const = 0;

 private:
  int64_t max_ = kMaxRequestTokens;
};

// Reads the distribution's own parameters from `spec` (which holds "dist"
// and "max" too; those are read by ParseLengthDist). Relative file paths
// resolve against `scenario_dir`.
using LengthDistFactory =
    std::function<Result<std::unique_ptr<LengthDist>>(JsonObject& spec, const std::string& dir)>;

const Registry<LengthDistFactory>& LengthDistRegistry();

// Parses one length object strictly (unknown keys are errors). Errors name
// the origin file and the object's JSON path.
Result<std::unique_ptr<LengthDist>> ParseLengthDist(JsonObject& spec,
                                                    const std::string& scenario_dir);

// A file of "LENGTH" or "LENGTH,WEIGHT" lines (the empirical distribution's
// `path`); blank lines and '#' comments are skipped. Errors name file:line.
Status ReadLengthsFile(const std::string& path, std::vector<int64_t>* values,
                       std::vector<double>* weights);

// "dir/rel" unless `path` is absolute or dir is empty.
std::string ResolvePath(const std::string& path, const std::string& scenario_dir);

}  // namespace capplan::sim

#endif  // CAPPLAN_SIM_WORKLOAD_LENGTH_DIST_H_
