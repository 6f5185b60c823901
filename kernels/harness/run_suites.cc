#include "kernels/harness/run_suites.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>

#include "kernels/harness/all_suites.h"
#ifdef CAPPLAN_HAVE_CUDA
#include "kernels/harness/cuda_timer.h"
#endif

namespace capplan::kernels {

std::vector<std::pair<size_t, size_t>> OrderCases(
    const std::vector<std::vector<SuiteCase>>& lists) {
  std::vector<int> prios;
  for (const auto& l : lists) {
    for (const auto& c : l) prios.push_back(c.priority);
  }
  std::sort(prios.begin(), prios.end());
  prios.erase(std::unique(prios.begin(), prios.end()), prios.end());
  std::vector<std::pair<size_t, size_t>> order;
  for (int p : prios) {
    // One queue per suite of its cases at this priority, then round-robin.
    std::vector<std::vector<size_t>> q(lists.size());
    size_t longest = 0;
    for (size_t s = 0; s < lists.size(); ++s) {
      for (size_t i = 0; i < lists[s].size(); ++i) {
        if (lists[s][i].priority == p) q[s].push_back(i);
      }
      longest = std::max(longest, q[s].size());
    }
    for (size_t round = 0; round < longest; ++round) {
      for (size_t s = 0; s < q.size(); ++s) {
        if (round < q[s].size()) order.emplace_back(s, q[s][round]);
      }
    }
  }
  return order;
}

MeasurementRecord ErrorRecord(const SuiteCase& c, const std::string& message) {
  MeasurementRecord r;
  r.kernel = c.kernel;
  r.op_class = c.op_class;
  r.variant = c.label;
  r.dtype = "none";  // nothing was measured
  r.check = "error";
  r.error = message.empty() ? "unknown error" : message;
  return r;
}

namespace {

// Runs one case; a returned error or an exception (a failed host allocation,
// say) becomes the case's error message.
std::string RunOneCase(const SuiteCase& c, const SuiteOptions& opt, MeasurementSink* sink) {
  try {
    const Status st = c.run(opt, sink);
    return st.ok() ? "" : st.message();
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

bool Failed(const MeasurementRecord& r) { return r.check == "fail" || r.check == "error"; }

void NoteFailedSuite(const std::string& name, SuiteRun* run) {
  auto& f = run->suites_failed;
  if (std::find(f.begin(), f.end(), name) == f.end()) f.push_back(name);
}

}  // namespace

void RunCaseLists(const std::vector<std::string>& names,
                  const std::vector<std::vector<SuiteCase>>& lists, const SuiteOptions& opt,
                  const RunHooks& hooks, SuiteRun* run) {
  const auto order = OrderCases(lists);
  std::vector<int> started(lists.size(), 0);
  MeasurementSink sink;
  for (const auto& r : run->records) sink.Add(r);
  for (size_t n = 0; n < order.size(); ++n) {
    const auto [s, i] = order[n];
    if (opt.OutOfTime() || !run->stopped.empty()) {
      run->cases_cut += static_cast<int>(order.size() - n);
      break;
    }
    const SuiteCase& c = lists[s][i];
    SuiteOptions mine = opt;
    const auto now = std::chrono::steady_clock::now();
    const auto budget = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(opt.case_budget_s));
    if (opt.deadline - now > budget) mine.deadline = now + budget;
    const size_t before = sink.records().size();
    const std::string err = RunOneCase(c, mine, &sink);
    if (!err.empty()) sink.Add(ErrorRecord(c, err));
    ++started[s];
    ++run->cases_run;
    bool failed = false;
    for (size_t k = before; k < sink.records().size(); ++k) failed |= Failed(sink.records()[k]);
    if (failed) {
      ++run->cases_failed;
      NoteFailedSuite(names[s], run);
      if (hooks.device_health) {
        if (Status h = hooks.device_health(); !h.ok()) {
          run->stopped = "after " + names[s] + "/" + c.label + ": " + h.message();
        }
      }
    }
    run->records = sink.records();
    if (hooks.checkpoint) {
      if (Status w = hooks.checkpoint(*run); !w.ok() && run->stopped.empty()) {
        run->stopped = "checkpoint: " + w.message();
      }
    }
  }
  run->records = sink.records();
  for (size_t s = 0; s < lists.size(); ++s) {
    (started[s] > 0 || lists[s].empty() ? run->suites_run : run->suites_cut).push_back(names[s]);
  }
}

Result<SuiteRun> RunSuites(const std::vector<std::string>& names, const SuiteOptions& opt,
                           const std::string& commit, const std::string& driver,
                           const RunHooks& hooks) {
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
  RunHooks h = hooks;
  if (!opt.dry_run) {
#ifdef CAPPLAN_HAVE_CUDA
    CAPPLAN_ASSIGN_OR_RETURN(CudaDeviceInfo dev, GetCudaDeviceInfo());
    run.info.gpu = dev.name;
    run.info.cuda = dev.runtime;
    run.info.driver = driver.empty() ? dev.driver : driver;
    if (dev.sm_clock_mhz > 0) run.info.sm_clock_mhz = dev.sm_clock_mhz;
    if (!h.device_health) h.device_health = CudaDeviceHealthy;
#else
    (void)driver;  // only a CUDA build asks the device for its driver
    return Status::Unavailable(
        "this build has no CUDA kernels (nvcc was not found at configure time); use --dry-run");
#endif
  } else {
    run.info.gpu = "cpu";
  }
  std::vector<std::vector<SuiteCase>> lists(fns.size());
  for (size_t i = 0; i < fns.size(); ++i) {
    Result<std::vector<SuiteCase>> l = fns[i](opt);
    if (l.ok()) {
      lists[i] = std::move(*l);
    } else {
      // A suite that cannot list its cases (a model card it cannot read) is
      // one error record; the other suites still run.
      const SuiteCase c{"list_cases", todo[i], "overhead", kSweepPriority, nullptr};
      run.records.push_back(ErrorRecord(c, l.status().message()));
      ++run.cases_failed;
      NoteFailedSuite(todo[i], &run);
    }
  }
  RunCaseLists(todo, lists, opt, h, &run);
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
    if (r.check == "error") os << "    " << r.variant << ": " << r.error.substr(0, 160) << "\n";
  }
  if (dry_run) {
    os << "DRY RUN: times are CPU reference wall-clock times on small shapes, NOT GPU times; "
          "the roofline column is meaningless here.\n";
  }
  return os.str();
}

}  // namespace capplan::kernels
