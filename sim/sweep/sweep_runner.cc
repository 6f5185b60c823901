#include "sim/sweep/sweep_runner.h"

#include <atomic>
#include <vector>

#include "common/atomic_file.h"
#include "common/json_util.h"
#include "sim/sweep/parallel_for.h"
#include "common/progress.h"
#include "sim/sweep/sweep_files.h"

namespace capplan::sim::sweep {

Status WriteSweepManifest(const SweepPlan& plan, const std::string& out_dir) {
  CAPPLAN_RETURN_IF_ERROR(MakeDirs(out_dir));
  // Shards write identical bytes, each with an atomic rename, so concurrent
  // shards starting together cannot leave a torn manifest.
  return WriteFileAtomic(ManifestPath(out_dir), ManifestText(plan));
}

Result<SweepStats> RunSweep(const SweepPlan& plan, const SimHooks& hooks,
                            const SweepOptions& options) {
  if (options.out_dir.empty()) return Status::Usage("sweep: --out DIR is required");
  CAPPLAN_RETURN_IF_ERROR(WriteSweepManifest(plan, options.out_dir));
  SweepStats stats;
  stats.points = static_cast<int64_t>(plan.points.size());
  std::vector<const SweepPoint*> todo;
  for (const SweepPoint& p : plan.points) {
    if (!options.shard.Owns(p.index)) continue;
    ++stats.in_shard;
    CAPPLAN_ASSIGN_OR_RETURN(auto done, ReadPointRecord(options.out_dir, p.id, plan.base_id));
    if (done.has_value()) {
      ++stats.skipped;
    } else {
      todo.push_back(&p);
    }
  }
  std::atomic<int64_t> invalid{0};
  ProgressBar bar(options.progress, static_cast<int64_t>(todo.size()), "sweep");
  const Status st = ParallelFor(static_cast<int64_t>(todo.size()), options.jobs, [&](int64_t i) {
    const SweepPoint& p = *todo[static_cast<size_t>(i)];
    nlohmann::json record;
    if (!p.invalid.empty()) {
      record = PointRecord(plan, p, nullptr, p.invalid);
      ++invalid;
    } else {
      auto summary = hooks.run(p.doc);
      if (summary.ok()) {
        const nlohmann::json doc = schema::ToJson(*summary);
        record = PointRecord(plan, p, &doc, "");
      } else if (summary.status().code() == StatusCode::kInvalidConfig) {
        record = PointRecord(plan, p, nullptr, summary.status().message());
        ++invalid;
      } else {
        return summary.status().WithPrefix("point " + p.id + " (" +
                                           CanonicalPointJson(p.grid) + ")");
      }
    }
    CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(PointPath(options.out_dir, p.id), DumpJson(record)));
    bar.Tick();
    return Status::Ok();
  });
  bar.Finish();
  CAPPLAN_RETURN_IF_ERROR(st);
  stats.ran = static_cast<int64_t>(todo.size());
  stats.invalid = invalid.load();
  if (options.shard.count == 1) {
    CAPPLAN_ASSIGN_OR_RETURN(MergeStats m, MergeSweep(options.out_dir));
    stats.invalid = m.invalid;
    stats.merged = true;
  }
  return stats;
}

Result<MergeStats> MergeSweep(const std::string& dir) {
  CAPPLAN_ASSIGN_OR_RETURN(std::vector<ManifestEntry> entries, ReadManifest(ManifestPath(dir)));
  if (entries.empty()) return Status::Usage(ManifestPath(dir) + ": no points");
  MergeStats stats;
  std::vector<nlohmann::json> records;
  std::vector<std::string> missing;
  for (const ManifestEntry& e : entries) {
    CAPPLAN_ASSIGN_OR_RETURN(auto rec, ReadPointRecord(dir, e.point_id, e.base_scenario_id));
    if (!rec.has_value()) {
      missing.push_back(e.point_id);
      continue;
    }
    ++stats.points;
    if (rec->value("status", "") == "ok") {
      ++stats.ok;
    } else {
      ++stats.invalid;
    }
    records.push_back(std::move(*rec));
  }
  if (!missing.empty()) {
    std::string ids;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) ids += (i ? ", " : "") + missing[i];
    return Status::Invalid(dir + ": " + std::to_string(missing.size()) + " of " +
                           std::to_string(entries.size()) + " points have no result yet (" +
                           ids + (missing.size() > 5 ? ", ..." : "") +
                           "); run the missing shards (finished points are skipped), then "
                           "merge again");
  }
  std::vector<std::string> paths;
  for (const auto& [path, value] : entries.front().grid) paths.push_back(path);
  CAPPLAN_RETURN_IF_ERROR(WriteFileAtomic(SweepCsvPath(dir), SweepCsv(paths, records)));
  return stats;
}

}  // namespace capplan::sim::sweep
