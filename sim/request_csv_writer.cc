#include "sim/request_csv_writer.h"

#include <ostream>

namespace capplan::sim {

namespace {

// Text goes to the stream in blocks of this size: one write call each, a
// small fraction of the formatting's cost.
constexpr size_t kBlockBytes = size_t{64} << 10;

}  // namespace

RequestCsvWriter::RequestCsvWriter(std::ostream* os, std::string header, const Options& options)
    : os_(os),
      text_(std::move(header)),
      pipe_([this](std::vector<RequestRow>& rows) { Format(rows); }, options.batch_rows,
            options.threaded) {
  text_.reserve(kBlockBytes + kMaxRequestRowBytes);
}

RequestCsvWriter::~RequestCsvWriter() {
  try {
    pipe_.Drain();
    WriteText();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
  }
}

void RequestCsvWriter::Flush() {
  try {
    pipe_.Drain();
  } catch (...) {
    os_->flush();
    throw;
  }
  WriteText();
  os_->flush();
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

}  // namespace capplan::sim
