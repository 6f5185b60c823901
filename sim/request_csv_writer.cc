#include "sim/request_csv_writer.h"

#include <ostream>

namespace capplan::sim {

namespace {

// Text goes to the stream in blocks of this size: one write call each, a
// small fraction of the formatting's cost.
constexpr size_t kBlockBytes = size_t{64} << 10;
#if CAPPLAN_CSV_WRITER_THREAD
// Batches handed over and not yet taken: the writer keeps up with any
// simulation, so the bound only keeps memory flat if it ever did not.
constexpr size_t kMaxQueued = 4;
#endif

}  // namespace

RequestCsvWriter::RequestCsvWriter(std::ostream* os, std::string header, const Options& options)
    : os_(os), opt_(options), text_(std::move(header)) {
  if (opt_.batch_rows == 0) opt_.batch_rows = 1;
  batch_.reserve(opt_.batch_rows);
  text_.reserve(kBlockBytes + kMaxRequestRowBytes);
}

RequestCsvWriter::~RequestCsvWriter() {
  try {
    WriteRest();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
  }
}

void RequestCsvWriter::Flush() {
  WriteRest();
  os_->flush();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

// The batches already handed over come first: the writer is joined before
// the rest is formatted here.
void RequestCsvWriter::WriteRest() {
#if CAPPLAN_CSV_WRITER_THREAD
  Stop();
#endif
  if (!error_) {
    Format(batch_);
    WriteText();
  }
  batch_.clear();
}

void RequestCsvWriter::Format(const std::vector<RequestRow>& rows) {
  for (const RequestRow& r : rows) {
    AppendRequestRow(&text_, r);
    if (text_.size() >= kBlockBytes) WriteText();
  }
}

void RequestCsvWriter::WriteText() {
  os_->write(text_.data(), static_cast<std::streamsize>(text_.size()));
  text_.clear();
}

#if CAPPLAN_CSV_WRITER_THREAD

void RequestCsvWriter::Hand() {
  if (!opt_.threaded) {
    Format(batch_);
    batch_.clear();
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_.joinable()) {
    stop_ = false;
    thread_ = std::thread(&RequestCsvWriter::WriterLoop, this);
  }
  space_.wait(lock, [this] { return queued_.size() < kMaxQueued; });
  queued_.push_back(std::move(batch_));
  batch_.clear();  // a moved-from vector is valid but unspecified
  if (!spare_.empty()) {
    batch_ = std::move(spare_.back());
    spare_.pop_back();
  }
  lock.unlock();
  work_.notify_one();
  batch_.reserve(opt_.batch_rows);
}

void RequestCsvWriter::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return !queued_.empty() || stop_; });
    if (queued_.empty()) return;
    std::vector<RequestRow> rows = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    space_.notify_one();
    // After an error the rows are still taken, so that Hand never waits
    // on a writer that stopped; the error is reported once it is joined.
    if (!error_) {
      try {
        Format(rows);
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    rows.clear();
    lock.lock();
    spare_.push_back(std::move(rows));
  }
}

void RequestCsvWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

#else

void RequestCsvWriter::Hand() {
  Format(batch_);
  batch_.clear();
}

#endif

}  // namespace capplan::sim
