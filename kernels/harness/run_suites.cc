#include "kernels/harness/run_suites.h"

#include <cstdio>
#include <sstream>

#include "kernels/harness/all_suites.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/harness/cuda_timer.h"
#endif

namespace capplan::kernels {

Result<SuiteRun> RunSuites(const std::vector<std::string>& names, const SuiteOptions& opt,
                           const std::string& commit, const std::string& driver) {
  RegisterAllSuites();
  std::vector<std::string> todo = names.empty() ? SuiteRegistry().Names() : names;
  std::vector<SuiteFn> fns;
  for (const auto& n : todo) {
    CAPPLAN_ASSIGN_OR_RETURN(SuiteFn fn, SuiteRegistry().Find(n));
    fns.push_back(std::move(fn));
  }
  SuiteRun run;
  run.info.dry_run = opt.dry_run;
  run.info.commit = commit;
  run.info.date = UtcNowIso8601();
  if (!opt.dry_run) {
#ifdef CAPPLAN_HAVE_CUDA
    CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo dev, GetCudaDeviceInfo());
    run.info.gpu = dev.name;
    run.info.cuda = dev.runtime;
    run.info.driver = driver.empty() ? dev.driver : driver;
    if (dev.sm_clock_mhz > 0) run.info.sm_clock_mhz = dev.sm_clock_mhz;
#else
    (void)driver;  // only a CUDA build asks the device for its driver
    return Status::Unavailable(
        "this build has no CUDA kernels (nvcc was not found at configure time); use --dry-run");
#endif
  } else {
    run.info.gpu = "cpu";
  }
  MeasurementSink sink;
  for (size_t i = 0; i < fns.size(); ++i) {
    if (opt.OutOfTime()) {
      run.suites_cut.push_back(todo[i]);
      continue;
    }
    // Share what is left of the budget evenly among the suites still to run,
    // so one long sweep cannot starve the others.
    SuiteOptions mine = opt;
    if (opt.deadline != std::chrono::steady_clock::time_point::max()) {
      const auto now = std::chrono::steady_clock::now();
      mine.deadline = now + (opt.deadline - now) / static_cast<int>(fns.size() - i);
    }
    CAPPLAN_RETURN_IF_ERROR(fns[i](mine, &sink).WithPrefix("suite " + todo[i]));
    run.suites_run.push_back(todo[i]);
  }
  run.records = sink.records();
  return run;
}

std::string RooflineDtype(const MeasurementRecord& r) {
  if (r.dtype == "fp8" || r.dtype == "fp32") return r.dtype;
  return "bf16";
}

std::string FormatSuiteTable(const std::vector<MeasurementRecord>& recs, const Ceilings& c,
                             bool dry_run) {
  std::ostringstream os;
  char line[400];
  std::snprintf(line, sizeof(line), "%-26s %-10s %-44s %11s %9s %9s %7s %s\n", "kernel", "kv/w",
                "shape", "median_us", "GB/s", "TFLOP/s", "%roof", "check");
  os << line;
  for (const auto& r : recs) {
    std::string shape;
    for (const auto& [k, v] : r.shape) {
      if (!shape.empty()) shape += ",";
      shape += k + "=" + std::to_string(v);
    }
    const Roofline rf = ComputeRoofline(r.bytes, r.flops, r.timing.median_us, c, RooflineDtype(r));
    const std::string kvw = !r.kv_dtype.empty() ? r.kv_dtype : r.weight_dtype;
    std::snprintf(line, sizeof(line), "%-26s %-10s %-44s %11.2f %9.1f %9.3f %6.1f%% %s\n",
                  r.kernel.c_str(), kvw.c_str(), shape.c_str(), r.timing.median_us, rf.gb_per_s,
                  rf.tflop_per_s, 100.0 * rf.fraction, r.check.c_str());
    os << line;
  }
  if (dry_run) {
    os << "DRY RUN: times are CPU reference wall-clock times on small shapes, NOT GPU times; "
          "the roofline column is meaningless here.\n";
  }
  return os.str();
}

}  // namespace capplan::kernels
