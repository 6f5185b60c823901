// KV page integrity behind one interface: page tags stamped on append and
// checked before a step reads them (the idea of SGLang's KV canary,
// https://github.com/sgl-project/sglang/pull/26805).
//
//   none    the default: no tags are stamped and nothing is verified, so it
//           costs nothing on the hot path.
//   verify  the append path stamps each page's tag; before every step reads
//           the cache, a verification batch (its own launch on the GPU)
//           checks every page-table entry of every request in the step.
//
// A violation names the request whose data can no longer be trusted; the
// batching loop fails that request alone and keeps serving the others.
#ifndef CAPPLAN_ENGINE_INTEGRITY_TRACKER_H_
#define CAPPLAN_ENGINE_INTEGRITY_TRACKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/kv_page_manager.h"
#include "engine/page_tag.h"

namespace capplan::engine {

// The tag side array, one tag per physical page.
using PageTags = std::vector<PageTag>;

struct VerifyItem {
  int64_t request = 0;
  int64_t cached_tokens = 0;  // tokens written before this step's append
};

struct IntegrityViolation {
  int64_t request = 0;  // the request whose KV is compromised
  std::string message;
};

class IntegrityTracker {
 public:
  virtual ~IntegrityTracker() = default;
  virtual std::string name() const = 0;
  // The tag array the append path stamps, or nullptr for "do not stamp".
  virtual PageTags* tags() = 0;
  // The verification batch. Runs before the step's appends and reads.
  virtual std::vector<IntegrityViolation> Verify(const std::vector<VerifyItem>& batch,
                                                 const KvPageManager& kv) = 0;
};

class NoopTracker final : public IntegrityTracker {
 public:
  std::string name() const override { return "none"; }
  PageTags* tags() override { return nullptr; }
  std::vector<IntegrityViolation> Verify(const std::vector<VerifyItem>&,
                                         const KvPageManager&) override {
    return {};
  }
};

class VerifyingTracker final : public IntegrityTracker {
 public:
  explicit VerifyingTracker(int32_t num_pages) : tags_(num_pages) {}
  std::string name() const override { return "verify"; }
  PageTags* tags() override { return &tags_; }
  std::vector<IntegrityViolation> Verify(const std::vector<VerifyItem>& batch,
                                         const KvPageManager& kv) override;

 private:
  PageTags tags_;
};

// The append path's stamp: what the KV-append kernel writes beside the data.
inline void StampPage(PageTags* tags, int64_t request, int32_t logical_page, const PageRef& ref) {
  if (tags != nullptr) (*tags)[ref.physical] = PageTag{request, logical_page, ref.epoch};
}

// The host check of one request's page table against `tags`: written pages
// must carry (request, logical page, epoch); a page about to be written must
// not still hold same-or-newer-epoch data of another owner (stale reuse).
// skip_written: the written pages were checked elsewhere (the CUDA tracker's
// verification kernel), only the about-to-be-written ones are checked here.
void CheckRequestPages(const VerifyItem& item, const KvPageManager& kv, const PageTags& tags,
                       bool skip_written, std::vector<IntegrityViolation>* out);
// "request 3 logical page 2 -> physical page 17 (epoch 4)"
std::string PageName(int64_t request, size_t logical, const PageRef& ref);

// "none" | "verify"; unknown names are Usage errors with "did you mean".
Result<std::unique_ptr<IntegrityTracker>> MakeIntegrityTracker(const std::string& name,
                                                               int32_t num_pages);
const std::vector<std::string>& IntegrityTrackerNames();

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_INTEGRITY_TRACKER_H_
