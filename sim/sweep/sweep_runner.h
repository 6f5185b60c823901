// Runs the points of a sweep plan on a thread pool, resuming from the
// per-point files already in the output directory, and merges per-point
// files into sweep.csv.
#ifndef CAPPLAN_SIM_SWEEP_SWEEP_RUNNER_H_
#define CAPPLAN_SIM_SWEEP_SWEEP_RUNNER_H_

#include <cstdint>
#include <iosfwd>
#include <string>

#include "common/status.h"
#include "sim/sweep/grid.h"
#include "sim/sweep/hooks.h"
#include "sim/sweep/shard.h"

namespace capplan::sim::sweep {

struct SweepOptions {
  std::string out_dir;
  int jobs = 0;  // <= 0: hardware concurrency
  ShardSpec shard;
  std::ostream* progress = nullptr;  // a terminal, or null
};

struct SweepStats {
  int64_t points = 0;    // whole plan
  int64_t in_shard = 0;  // this process's share
  int64_t skipped = 0;   // already done (resume)
  int64_t ran = 0;       // simulated now
  int64_t invalid = 0;   // impossible configurations recorded, not simulated
  bool merged = false;   // sweep.csv written (single-shard runs)
};

// Writes DIR/manifest.jsonl only (`--plan`).
Status WriteSweepManifest(const SweepPlan& plan, const std::string& out_dir);

// Writes the manifest, runs this shard's points that have no result yet and
// writes each DIR/<id>.json atomically as it finishes, so a killed sweep
// resumes where it stopped. A point whose simulation reports an impossible
// configuration (Invalid) is recorded with its error; any other simulation
// error stops the sweep. With one shard, finishes by merging into sweep.csv.
Result<SweepStats> RunSweep(const SweepPlan& plan, const SimHooks& hooks,
                            const SweepOptions& options);

struct MergeStats {
  int64_t points = 0;
  int64_t ok = 0;
  int64_t invalid = 0;
};
// Reads DIR/manifest.jsonl and every point file, writes DIR/sweep.csv. An
// Invalid error lists missing points when some shard has not finished.
Result<MergeStats> MergeSweep(const std::string& dir);

}  // namespace capplan::sim::sweep

#endif  // CAPPLAN_SIM_SWEEP_SWEEP_RUNNER_H_
