// The verifying tracker of the CUDA backend: the verification batch is
// LaunchVerifyKvIntegrity, its own launch before the step's appends and
// reads (kernels.md 6.3), over the tags the append kernel stamped on the
// device. It checks every written page of every request in the step.
//
// Pages about to be written carry no tag of their new owner yet; the one
// fault they can show (a page handed out again without an epoch bump while
// its previous owner still maps it) is checked on the host against the
// mirror of the stamps that the backend keeps (CheckRequestPages with
// skip_written), exactly as the CPU tracker does.
#include <set>

#include "engine/cuda_backend.h"
#include "engine/integrity_tracker.h"

namespace capplan {
namespace {

class CudaVerifyingTracker final : public IntegrityTracker {
 public:
  CudaVerifyingTracker(CudaBackend* backend, int32_t num_pages)
      : backend_(backend), mirror_(num_pages) {}
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
    auto found = backend_->VerifyPages(pt);
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
  CudaBackend* backend_;
  PageTags mirror_;
};

}  // namespace

std::unique_ptr<IntegrityTracker> MakeCudaVerifyingTracker(CudaBackend* backend,
                                                           int32_t num_pages) {
  return std::make_unique<CudaVerifyingTracker>(backend, num_pages);
}

}  // namespace capplan
