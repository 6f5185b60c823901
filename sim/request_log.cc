#include "sim/request_log.h"

#include <algorithm>
#include <ostream>

namespace capplan::sim {

namespace {

// Per-field iostream formatting cost ~4 us a row; a day-long trace's file
// is written in a fraction of its simulation time this way.
constexpr size_t kCsvBlockBytes = size_t{64} << 10;
// Final states handed to the log's thread at once (about 200 bytes each).
constexpr size_t kPipeBatch = 1024;

}  // namespace

RequestLog::RequestLog(const Options& options)
    : opt_(options), e2e_(options.slo, options.ttft_split) {
  e2e_.Reserve(opt_.expected);
  if (opt_.keep != nullptr) opt_.keep->reserve(static_cast<size_t>(opt_.expected));
  if (!opt_.csv_row && opt_.expected >= opt_.thread_from) {
    pipe_ = std::make_unique<common::BatchPipe<ReqState>>(
        [this](std::vector<ReqState>& batch) {
          for (const ReqState& r : batch) Take(r);
        },
        kPipeBatch, common::kBatchPipeThreads);
  }
  if (opt_.csv == nullptr) return;
  const char* header = opt_.csv_header != nullptr ? opt_.csv_header : kRequestsCsvHeader;
  if (!opt_.csv_row) {
    rows_ = std::make_unique<RequestCsvWriter>(opt_.csv, header);
    return;
  }
  csv_block_.reserve(kCsvBlockBytes + kMaxRequestRowBytes);
  csv_block_ = header;
}

RequestLog::~RequestLog() {
  pipe_.reset();  // passes on what it holds, into rows_ or csv_block_
  if (opt_.csv != nullptr && !csv_block_.empty()) WriteCsvBlock();
}

void RequestLog::Flush() {
  if (pipe_ != nullptr) pipe_->Drain();
  if (rows_ != nullptr) {
    rows_->Flush();
    return;
  }
  if (opt_.csv == nullptr) return;
  WriteCsvBlock();
  opt_.csv->flush();
}

void RequestLog::WriteCsvBlock() {
  opt_.csv->write(csv_block_.data(), static_cast<std::streamsize>(csv_block_.size()));
  csv_block_.clear();
}

void RequestLog::OnRetired(const ReqState& r) {
  if (pipe_ != nullptr) {
    pipe_->Add(r);
    return;
  }
  Take(r);
}

void RequestLog::Take(const ReqState& r) {
  if (r.idx == next_) {
    Pass(r);
    ++next_;
    // Those held behind it follow.
    if (!held_.empty()) {
      held_.pop_front();
      have_.pop_front();
    }
    while (!have_.empty() && have_.front()) {
      Pass(held_.front());
      held_.pop_front();
      have_.pop_front();
      --held_count_;
      ++next_;
    }
    return;
  }
  const size_t at = static_cast<size_t>(r.idx - next_);
  if (held_.size() <= at) {
    held_.resize(at + 1);
    have_.resize(at + 1, false);
  }
  held_[at] = r;
  have_[at] = true;
  peak_held_ = std::max(peak_held_, ++held_count_);
}

void RequestLog::Pass(const ReqState& r) {
  e2e_.Add({r.arrival_ns, r.first_token_ns, r.finish_ns, r.input, r.generated,
            r.status == ReqStatus::kDone, r.warmup, r.admit_ns, r.kv_load_ns});
  if (rows_ != nullptr) {
    rows_->Add(r);
  } else if (opt_.csv != nullptr) {
    opt_.csv_row(&csv_block_, r);
    if (csv_block_.size() >= kCsvBlockBytes) WriteCsvBlock();
  }
  if (opt_.keep != nullptr) opt_.keep->push_back(r);
}

}  // namespace capplan::sim
