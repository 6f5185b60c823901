#include "engine/integrity_tracker.h"

#include "common/did_you_mean.h"

namespace capplan::engine {

std::string PageName(int64_t request, size_t logical, const PageRef& ref) {
  return "request " + std::to_string(request) + " logical page " + std::to_string(logical) +
         " -> physical page " + std::to_string(ref.physical) + " (epoch " +
         std::to_string(ref.epoch) + ")";
}

void CheckRequestPages(const VerifyItem& item, const KvPageManager& kv, const PageTags& tags,
                       bool skip_written, std::vector<IntegrityViolation>* out) {
  const std::vector<PageRef>& table = kv.PageTable(item.request);
  const int64_t written = kv.PagesFor(item.cached_tokens);
  for (size_t j = 0; j < table.size(); ++j) {
    const PageRef& ref = table[j];
    const bool is_written = static_cast<int64_t>(j) < written;
    if (skip_written && is_written) continue;
    if (ref.physical == kPoisonPage) {
      out->push_back({item.request,
                      "KV integrity: " + PageName(item.request, j, ref) + " is the poison page"});
      break;
    }
    const PageTag& tag = tags[ref.physical];
    if (is_written) {
      const PageTag expected{item.request, static_cast<int32_t>(j), ref.epoch};
      if (tag != expected) {
        out->push_back({item.request, "KV integrity: " + PageName(item.request, j, ref) +
                                          " holds " + TagToString(tag) +
                                          ", not this request's data"});
        break;  // one message per request is enough
      }
    } else if (tag.request != kNoRequest && tag.epoch >= ref.epoch) {
      // A page about to be written must be a newer incarnation than the
      // data on it; the same epoch means it was handed out again without a
      // bump while its previous owner may still map it. The previous owner
      // is the victim: its data is what this request will overwrite.
      out->push_back({tag.request, "KV integrity: physical page " + std::to_string(ref.physical) +
                                       " was reused by request " + std::to_string(item.request) +
                                       " without bumping its epoch (" + std::to_string(ref.epoch) +
                                       ") while it still held " + TagToString(tag)});
    }
  }
}

std::vector<IntegrityViolation> VerifyingTracker::Verify(const std::vector<VerifyItem>& batch,
                                                         const KvPageManager& kv) {
  std::vector<IntegrityViolation> out;
  for (const VerifyItem& item : batch) CheckRequestPages(item, kv, tags_, false, &out);
  return out;
}

const std::vector<std::string>& IntegrityTrackerNames() {
  static const std::vector<std::string> kNames = {"none", "verify"};
  return kNames;
}

Result<std::unique_ptr<IntegrityTracker>> MakeIntegrityTracker(const std::string& name,
                                                               int32_t num_pages) {
  if (name == "none") return std::unique_ptr<IntegrityTracker>(new NoopTracker());
  if (name == "verify") {
    return std::unique_ptr<IntegrityTracker>(new VerifyingTracker(num_pages));
  }
  return Status::Usage("unknown kv_integrity '" + name + "'" +
                       DidYouMean(name, IntegrityTrackerNames()) + " (use none or verify)");
}

}  // namespace capplan::engine
