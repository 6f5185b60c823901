#include "engine/kv_page_manager.h"

#include <algorithm>
#include <string>

#include "engine/splitmix.h"

namespace capplan::engine {

std::string TagToString(const PageTag& t) {
  if (t.request == kNoRequest) return "{unstamped}";
  return "{request " + std::to_string(t.request) + ", logical page " +
         std::to_string(t.logical_page) + ", epoch " + std::to_string(t.epoch) + "}";
}

KvPageManager::KvPageManager(int32_t num_pages, int32_t page_size, uint64_t shuffle_seed)
    : num_pages_(std::max<int32_t>(num_pages, 1)),
      page_size_(std::max<int32_t>(page_size, 1)),
      epochs_(num_pages_, 0),
      owner_(num_pages_, kNoRequest) {
  // Ascending order makes allocation deterministic for a given schedule.
  for (int32_t p = 1; p < num_pages_; ++p) free_.push_back(p);
  if (shuffle_seed != 0) {
    uint64_t state = shuffle_seed;
    for (size_t i = free_.size(); i > 1; --i) {
      std::swap(free_[i - 1], free_[NextRandom(&state) % i]);
    }
  }
}

int32_t KvPageManager::PagesFor(int64_t tokens) const {
  return static_cast<int32_t>((tokens + page_size_ - 1) / page_size_);
}

Status KvPageManager::AddRequest(int64_t id) {
  if (id < 0) return Status::Internal("KV manager: request ids must be >= 0");
  if (!requests_.emplace(id, RequestPages{}).second) {
    return Status::Internal("KV manager: request " + std::to_string(id) + " added twice");
  }
  return Status::Ok();
}

Result<int32_t> KvPageManager::Allocate(int64_t owner) {
  if (free_.empty()) return Status::Invalid("KV manager: out of pages");
  const int32_t p = free_.front();
  free_.pop_front();
  ++epochs_[p];  // every reuse is a new incarnation
  owner_[p] = owner;
  return p;
}

Status KvPageManager::Reserve(int64_t id, int64_t tokens) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return Status::Internal("KV manager: unknown request " + std::to_string(id));
  }
  RequestPages& r = it->second;
  const int32_t need = PagesFor(tokens) - static_cast<int32_t>(r.table.size());
  if (need <= 0) return Status::Ok();
  if (need > free_pages()) {
    return Status::Invalid("KV manager: request " + std::to_string(id) + " needs " +
                           std::to_string(need) + " more pages but " +
                           std::to_string(free_pages()) + " are free");
  }
  for (int32_t i = 0; i < need; ++i) {
    CAPPLAN_ASSIGN_OR_RETURN(const int32_t p, Allocate(id));
    r.table.push_back(PageRef{p, epochs_[p]});
    r.owned.push_back(p);
  }
  return Status::Ok();
}

Status KvPageManager::Release(int64_t id, int32_t* not_owned) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return Status::Internal("KV manager: release of unknown request " + std::to_string(id));
  }
  if (not_owned != nullptr) *not_owned = 0;
  for (int32_t p : it->second.owned) {
    // Ownership may have been taken away by a (injected) stale reuse; only
    // the allocator's current owner may free a page.
    if (owner_[p] != id) {
      if (not_owned != nullptr) ++*not_owned;
      continue;
    }
    owner_[p] = kNoRequest;
    deferred_.push_back(p);
  }
  requests_.erase(it);
  return Status::Ok();
}

void KvPageManager::EndStep() {
  // Sorted so the free list order depends only on which pages were freed.
  std::sort(deferred_.begin(), deferred_.end());
  for (int32_t p : deferred_) free_.push_back(p);
  deferred_.clear();
}

const std::vector<PageRef>& KvPageManager::PageTable(int64_t id) const {
  static const std::vector<PageRef> kEmpty;
  auto it = requests_.find(id);
  return it == requests_.end() ? kEmpty : it->second.table;
}

std::vector<int64_t> KvPageManager::Requests() const {
  std::vector<int64_t> ids;
  for (const auto& [id, r] : requests_) ids.push_back(id);
  return ids;
}

Status KvPageManager::InjectRemap(int64_t id, int32_t logical_page, const PageRef& ref) {
  auto it = requests_.find(id);
  if (it == requests_.end() || logical_page < 0 ||
      logical_page >= static_cast<int32_t>(it->second.table.size()) || ref.physical < 0 ||
      ref.physical >= num_pages_) {
    return Status::Internal("fault injection: bad remap target");
  }
  it->second.table[logical_page] = ref;
  return Status::Ok();
}

Status KvPageManager::InjectStaleReuse(int64_t victim, int32_t logical_page, int64_t thief) {
  auto v = requests_.find(victim);
  auto t = requests_.find(thief);
  if (v == requests_.end() || t == requests_.end() || victim == thief || logical_page < 0 ||
      logical_page >= static_cast<int32_t>(v->second.table.size())) {
    return Status::Internal("fault injection: bad stale-reuse target");
  }
  const int32_t p = v->second.table[logical_page].physical;
  // The bug: the page is handed out again with its old epoch.
  owner_[p] = thief;
  t->second.table.push_back(PageRef{p, epochs_[p]});
  t->second.owned.push_back(p);
  return Status::Ok();
}

}  // namespace capplan::engine
