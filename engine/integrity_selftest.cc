#include "engine/integrity_selftest.h"

#include <set>

#include "engine/backend_factory.h"
#include "engine/device_verifying_tracker.h"

namespace capplan::engine {
namespace {

struct RunOutcome {
  std::map<int64_t, RequestResult> results;
  std::vector<InjectedFault> faults;
};

// One run of the workload; with faults > 0, one fault is injected per step
// (kinds in rotation) into requests that will decode in that step.
Result<RunOutcome> RunOnce(const SelftestOptions& o, const std::vector<EngineRequest>& reqs,
                           const LoopOptions& lo, const std::string& tracker_name,
                           int faults_per_kind) {
  BackendOptions bo;
  bo.name = o.backend;
  bo.num_pages = lo.num_pages;
  bo.page_size = lo.page_size;
  bo.max_step_tokens = lo.chunked_prefill_tokens + lo.max_running;
  bo.batch_invariant = true;  // unaffected requests must match bit for bit
  CAPPLAN_ASSIGN_OR_RETURN(auto backend, MakeEngineBackend(o.slice, bo));
  std::unique_ptr<IntegrityTracker> tracker;
  if (tracker_name == "verify" && o.verify_impl == "kernel_reference") {
    tracker = MakeKernelReferenceTracker(lo.num_pages, lo.page_size);
  } else {
    CAPPLAN_ASSIGN_OR_RETURN(tracker, backend->MakeTracker(tracker_name, lo.num_pages));
  }
  BatchLoop loop(backend.get(), tracker.get(), lo);
  for (const EngineRequest& r : reqs) loop.Submit(r);
  RunOutcome out;
  std::vector<FaultKind> todo;
  for (int i = 0; i < faults_per_kind; ++i) {
    for (FaultKind k : AllFaultKinds()) todo.push_back(k);
  }
  std::set<int64_t> affected;
  uint64_t rng = o.seed * 7919 + 17;
  size_t next = 0;
  loop.set_step_hook([&](int64_t step, BatchLoop* l) -> Status {
    // Let a few decode steps pass first so victims hold several pages.
    if (next >= todo.size() || step < 4) return Status::Ok();
    auto f = InjectFault(todo[next], &l->kv(), l->DecodingRequests(), affected, &rng);
    if (!f.ok()) {
      if (f.status().code() == StatusCode::kNotFound) return Status::Ok();  // try next step
      return f.status();
    }
    for (int64_t id : f->affected) affected.insert(id);
    out.faults.push_back(*f);
    ++next;
    return Status::Ok();
  });
  CAPPLAN_RETURN_IF_ERROR(loop.Run());
  out.results = loop.results();
  return out;
}

}  // namespace

std::vector<EngineRequest> SyntheticRequests(int count, int min_prompt, int max_prompt,
                                             int output_len, int vocab, uint64_t seed) {
  std::vector<EngineRequest> reqs;
  uint64_t rng = seed;
  for (int i = 0; i < count; ++i) {
    EngineRequest r;
    r.id = i;
    const int span = std::max(1, max_prompt - min_prompt + 1);
    const int len = min_prompt + static_cast<int>(NextRandom(&rng) % span);
    for (int t = 0; t < len; ++t)
      r.prompt.push_back(static_cast<int32_t>(NextRandom(&rng) % vocab));
    r.output_len = output_len;
    reqs.push_back(std::move(r));
  }
  return reqs;
}

nlohmann::json SelftestReport::ToJson() const {
  nlohmann::json j;
  j["backend"] = backend;
  j["slice"] = slice;
  j["requests"] = requests;
  j["injected"] = injected;
  j["detected"] = detected;
  j["false_positives"] = false_positives;
  j["unaffected_ok"] = unaffected_ok;
  j["unaffected_total"] = unaffected_total;
  j["affected_total"] = affected_total;
  j["corrupted_without_verify"] = corrupted_without_verify;
  j["affected_without_verify"] = affected_without_verify;
  j["injected_by_kind"] = injected_by_kind;
  j["detected_by_kind"] = detected_by_kind;
  j["passed"] = Passed();
  return j;
}

Result<SelftestReport> RunIntegritySelftest(const SelftestOptions& o) {
  if (o.faults_per_kind < 1 || o.faults_per_kind > 64) {
    return Status::Usage("--faults: must be in [1, 64], got " + std::to_string(o.faults_per_kind));
  }
  // Enough requests that every fault finds fresh victims and plenty stay
  // untouched; concurrency high enough that they decode side by side.
  const int kinds = static_cast<int>(AllFaultKinds().size());
  const int count = 4 * kinds * o.faults_per_kind + 8;
  const std::vector<EngineRequest> reqs =
      SyntheticRequests(count, 6, 40, /*output_len=*/24, o.slice.vocab, o.seed);
  LoopOptions lo;
  lo.page_size = o.page_size;
  lo.max_running = count;
  lo.chunked_prefill_tokens = 64;
  lo.num_pages = 1 + count * ((40 + 24) / o.page_size + 2);

  SelftestReport rep;
  rep.backend = o.backend;
  rep.slice = o.slice.Describe();
  rep.requests = count;
  CAPPLAN_ASSIGN_OR_RETURN(RunOutcome ref, RunOnce(o, reqs, lo, "verify", 0));
  CAPPLAN_ASSIGN_OR_RETURN(RunOutcome bad, RunOnce(o, reqs, lo, "verify", o.faults_per_kind));
  CAPPLAN_ASSIGN_OR_RETURN(RunOutcome raw, RunOnce(o, reqs, lo, "none", o.faults_per_kind));

  std::set<int64_t> affected;
  for (const InjectedFault& f : bad.faults) {
    const std::string kind = FaultKindName(f.kind);
    ++rep.injected;
    ++rep.injected_by_kind[kind];
    bool all = true;
    for (int64_t id : f.affected) {
      affected.insert(id);
      const RequestResult& r = bad.results.at(id);
      all = all && r.failed && r.error.rfind("KV integrity", 0) == 0;
    }
    if (all) {
      ++rep.detected;
      ++rep.detected_by_kind[kind];
    }
  }
  for (const auto& [id, r] : ref.results) {
    if (r.failed) ++rep.false_positives;  // no fault was injected in this run
  }
  for (const auto& [id, r] : bad.results) {
    if (r.failed) rep.failures.push_back("request " + std::to_string(id) + ": " + r.error);
    if (affected.count(id)) continue;
    ++rep.unaffected_total;
    if (r.failed) {
      ++rep.false_positives;
    } else if (r.output == ref.results.at(id).output) {
      ++rep.unaffected_ok;
    }
  }
  rep.affected_total = static_cast<int>(affected.size());
  // The unguarded run places its own faults by the same rule and seed (its
  // first one is identical; later ones differ because nothing fails there);
  // count the affected requests whose tokens silently changed.
  for (const InjectedFault& f : raw.faults) {
    for (int64_t id : f.affected) {
      ++rep.affected_without_verify;
      if (raw.results.at(id).output != ref.results.at(id).output) ++rep.corrupted_without_verify;
    }
  }
  return rep;
}

}  // namespace capplan::engine
