#include "engine/fault_injector.h"

namespace capplan::engine {

const char* FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kMisMap: return "mis_map";
    case FaultKind::kSwap: return "swap";
    case FaultKind::kStaleReuse: return "stale_reuse";
  }
  return "?";
}

const std::vector<FaultKind>& AllFaultKinds() {
  static const std::vector<FaultKind> kAll = {FaultKind::kMisMap, FaultKind::kSwap,
                                              FaultKind::kStaleReuse};
  return kAll;
}

namespace {

struct Victim {
  int64_t request;
  int32_t logical_page;
  PageRef ref;
};

// Picks an eligible request (not excluded, not `other`) and one of its
// written pages.
Result<Victim> PickVictim(const KvPageManager& kv, const std::vector<VerifyItem>& candidates,
                          const std::set<int64_t>& exclude, int64_t other, uint64_t* rng) {
  std::vector<const VerifyItem*> ok;
  for (const VerifyItem& c : candidates) {
    if (exclude.count(c.request) || c.request == other || c.cached_tokens <= 0) continue;
    if (kv.PageTable(c.request).empty()) continue;
    ok.push_back(&c);
  }
  if (ok.empty()) return Status::NotFound("no eligible request for fault injection");
  const VerifyItem& v = *ok[NextRandom(rng) % ok.size()];
  const int64_t written = std::min<int64_t>(kv.PagesFor(v.cached_tokens),
                                            kv.PageTable(v.request).size());
  const int32_t page = static_cast<int32_t>(NextRandom(rng) % written);
  return Victim{v.request, page, kv.PageTable(v.request)[page]};
}

}  // namespace

Result<InjectedFault> InjectFault(FaultKind kind, KvPageManager* kv,
                                  const std::vector<VerifyItem>& candidates,
                                  const std::set<int64_t>& exclude, uint64_t* rng) {
  InjectedFault f;
  f.kind = kind;
  CAPPLAN_ASSIGN_OR_RETURN(const Victim a, PickVictim(*kv, candidates, exclude, -1, rng));
  switch (kind) {
    case FaultKind::kMisMap: {
      // Any other physical page: a neighbour's, a free one, or the poison page.
      int32_t q = static_cast<int32_t>(NextRandom(rng) % (kv->num_pages() - 1));
      if (q >= a.ref.physical) ++q;
      CAPPLAN_RETURN_IF_ERROR(
          kv->InjectRemap(a.request, a.logical_page, PageRef{q, kv->CurrentEpoch(q)}));
      f.affected = {a.request};
      f.description = "request " + std::to_string(a.request) + " logical page " +
                      std::to_string(a.logical_page) + " remapped from physical " +
                      std::to_string(a.ref.physical) + " to " + std::to_string(q);
      return f;
    }
    case FaultKind::kSwap: {
      CAPPLAN_ASSIGN_OR_RETURN(const Victim b,
                               PickVictim(*kv, candidates, exclude, a.request, rng));
      CAPPLAN_RETURN_IF_ERROR(kv->InjectRemap(a.request, a.logical_page, b.ref));
      CAPPLAN_RETURN_IF_ERROR(kv->InjectRemap(b.request, b.logical_page, a.ref));
      f.affected = {a.request, b.request};
      f.description = "requests " + std::to_string(a.request) + " and " +
                      std::to_string(b.request) + " swapped physical pages " +
                      std::to_string(a.ref.physical) + " and " + std::to_string(b.ref.physical);
      return f;
    }
    case FaultKind::kStaleReuse: {
      // The thief is any other running request (it need not have written yet);
      // it is the legitimate new owner, so only the victim is affected.
      std::vector<int64_t> thieves;
      for (const VerifyItem& c : candidates) {
        if (c.request != a.request && !exclude.count(c.request)) thieves.push_back(c.request);
      }
      if (thieves.empty()) return Status::NotFound("no second request for stale_reuse");
      const int64_t thief = thieves[NextRandom(rng) % thieves.size()];
      CAPPLAN_RETURN_IF_ERROR(kv->InjectStaleReuse(a.request, a.logical_page, thief));
      f.affected = {a.request};
      f.description = "physical page " + std::to_string(a.ref.physical) + " of request " +
                      std::to_string(a.request) + " reused by request " +
                      std::to_string(thief) + " without an epoch bump";
      return f;
    }
  }
  return Status::Internal("unknown fault kind");
}

}  // namespace capplan::engine
