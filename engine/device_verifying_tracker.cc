// The verifying tracker of the CUDA backend (device_verifying_tracker.h):
// the verification batch is a kernel (LaunchVerifyKvIntegrity on the GPU,
// its own launch before the step's appends and reads, like the verify kernel
// of SGLang's KV canary, https://github.com/sgl-project/sglang/pull/26805) over
// the tags the append path stamped. It checks every written page of every
// request in the step.
//
// Pages about to be written carry no tag of their new owner yet; the one
// fault they can show (a page handed out again without an epoch bump while
// its previous owner still maps it) is checked on the host against the
// mirror of the stamps that the backend keeps (CheckRequestPages with
// skip_written), exactly as the CPU tracker does.
#include "engine/device_verifying_tracker.h"

#include <set>

namespace capplan::engine {
namespace {

class DeviceVerifyingTracker final : public IntegrityTracker {
 public:
  DeviceVerifyingTracker(PageVerifier verify, int32_t num_pages)
      : verify_(std::move(verify)), mirror_(num_pages) {}
  void set_verifier(PageVerifier verify) { verify_ = std::move(verify); }
  std::string name() const override { return "verify"; }
  PageTags* tags() override { return &mirror_; }
  std::vector<IntegrityViolation> Verify(const std::vector<VerifyItem>& batch,
                                         const KvPageManager& kv) override {
    std::vector<IntegrityViolation> out;
    if (batch.empty()) return out;
    kernels::PageTable pt;
    pt.batch = static_cast<int>(batch.size());
    pt.max_pages = 1;
    for (const VerifyItem& item : batch) {
      pt.max_pages = std::max(pt.max_pages, static_cast<int>(kv.PageTable(item.request).size()));
    }
    pt.pages.assign(static_cast<size_t>(pt.batch) * pt.max_pages, kernels::kKvPoisonPage);
    pt.epochs.assign(pt.pages.size(), 0);
    for (int b = 0; b < pt.batch; ++b) {
      const std::vector<PageRef>& table = kv.PageTable(batch[b].request);
      for (size_t j = 0; j < table.size(); ++j) {
        pt.pages[static_cast<size_t>(b) * pt.max_pages + j] = table[j].physical;
        pt.epochs[static_cast<size_t>(b) * pt.max_pages + j] = table[j].epoch;
      }
      pt.request_ids.push_back(batch[b].request);
      pt.seq_lens.push_back(static_cast<int32_t>(batch[b].cached_tokens));
    }
    auto found = verify_(pt);
    std::set<int> flagged;
    if (!found.ok()) {
      // A failed verification launch proves nothing about any page: every
      // request of the step is failed rather than served unchecked.
      for (const VerifyItem& item : batch) {
        out.push_back(
            {item.request, "KV integrity: verification batch failed: " + found.status().message()});
      }
      return out;
    }
    for (const kernels::IntegrityMismatch& mm : *found) {
      if (!flagged.insert(mm.row).second) continue;  // one message per request
      const VerifyItem& item = batch[mm.row];
      const PageRef ref = kv.PageTable(item.request)[mm.logical_page];
      out.push_back({item.request, "KV integrity: " + PageName(item.request, mm.logical_page, ref) +
                                       " holds " + kernels::TagString(mm.found) +
                                       ", not this request's data"});
    }
    for (int b = 0; b < pt.batch; ++b) {
      if (!flagged.count(b)) CheckRequestPages(batch[b], kv, mirror_, true, &out);
    }
    return out;
  }

 private:
  PageVerifier verify_;
  PageTags mirror_;
};

}  // namespace

std::unique_ptr<IntegrityTracker> MakeDeviceVerifyingTracker(PageVerifier verify,
                                                             int32_t num_pages) {
  return std::make_unique<DeviceVerifyingTracker>(std::move(verify), num_pages);
}

std::unique_ptr<IntegrityTracker> MakeKernelReferenceTracker(int32_t num_pages, int32_t page_size) {
  auto t = std::make_unique<DeviceVerifyingTracker>(nullptr, num_pages);
  const PageTags* stamped = t->tags();
  t->set_verifier(
      [stamped,
       page_size](const kernels::PageTable& pt) -> Result<std::vector<kernels::IntegrityMismatch>> {
        std::vector<kernels::KvPageTag> tags;
        tags.reserve(stamped->size());
        for (const PageTag& g : *stamped) tags.push_back({g.request, g.logical_page, g.epoch});
        kernels::IntegrityReport rep =
            kernels::VerifyKvIntegrityCpu(pt, tags, page_size, pt.batch * pt.max_pages);
        return std::move(rep.first);
      });
  return t;
}

}  // namespace capplan::engine
