#include "sim/request_log.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ostream>

namespace capplan::sim {

namespace {

// Per-field iostream formatting cost ~4 us a row; a day-long trace's file
// is written in a fraction of its simulation time this way.
constexpr size_t kCsvBlockBytes = size_t{64} << 10;
// Longer than any row: 6 integers of at most 20 characters, 6 times of at
// most 16 (%.9g), the separators and the status.
constexpr size_t kMaxRowBytes = 256;

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

char* PutInt(char* p, int64_t v) { return std::to_chars(p, p + 20, v).ptr; }
// std::to_chars in general format with a precision is specified as printf's
// %.9g, which is what an iostream with precision(9) writes. The WebAssembly
// build's libc++ has no floating-point to_chars; it takes printf itself.
char* PutMs(char* p, double ms) {
#if defined(__cpp_lib_to_chars)
  return std::to_chars(p, p + 24, ms, std::chars_format::general, 9).ptr;
#else
  return p + std::snprintf(p, 24, "%.9g", ms);
#endif
}
char* PutComma(char* p) {
  *p = ',';
  return p + 1;
}

}  // namespace

const char kRequestsCsvHeader[] =
    "id,replica,rank,arrival_ms,first_token_ms,finish_ms,input_tokens,output_tokens,"
    "ttft_ms,tpot_ms,e2el_ms,retractions,warmup,status\n";

void AppendRequestRow(std::string* out, const ReqState& r) {
  const bool ok = r.status == ReqStatus::kDone;
  const double ttft = ok ? Ms(r.first_token_ns - r.arrival_ns) : 0;
  const double e2el = ok ? Ms(r.finish_ns - r.arrival_ns) : 0;
  const double tpot = ok && r.generated > 1 ? (e2el - ttft) / (r.generated - 1) : 0;
  char row[kMaxRowBytes];
  char* p = PutComma(PutInt(row, r.id));
  p = PutComma(PutInt(p, r.instance));
  p = PutComma(PutInt(p, r.rank));
  p = PutComma(PutMs(p, Ms(r.arrival_ns)));
  p = PutComma(PutMs(p, r.first_token_ns >= 0 ? Ms(r.first_token_ns) : -1));
  p = PutComma(PutMs(p, Ms(r.finish_ns)));
  p = PutComma(PutInt(p, r.input));
  p = PutComma(PutInt(p, r.generated));
  p = PutComma(PutMs(p, ttft));
  p = PutComma(PutMs(p, tpot));
  p = PutComma(PutMs(p, e2el));
  p = PutComma(PutInt(p, r.retractions));
  p = PutComma(PutInt(p, r.warmup ? 1 : 0));
  out->append(row, p);
  out->append(ok ? "completed\n" : "failed\n");
}

void AppendCsvInt(std::string* out, int64_t v) {
  char buf[24];
  out->append(buf, PutInt(buf, v));
}

void AppendCsvMs(std::string* out, double ms) {
  char buf[32];
  out->append(buf, PutMs(buf, ms));
}

void WriteRequestRow(std::ostream& os, const ReqState& r) {
  std::string row;
  AppendRequestRow(&row, r);
  os << row;
}

RequestLog::RequestLog(const Options& options) : opt_(options), e2e_(options.slo) {
  e2e_.Reserve(opt_.expected);
  if (opt_.keep != nullptr) opt_.keep->reserve(static_cast<size_t>(opt_.expected));
  if (opt_.csv != nullptr) {
    csv_block_.reserve(kCsvBlockBytes + kMaxRowBytes);
    csv_block_ = opt_.csv_header != nullptr ? opt_.csv_header : kRequestsCsvHeader;
  }
}

void RequestLog::Flush() {
  if (opt_.csv == nullptr) return;
  WriteCsvBlock();
  opt_.csv->flush();
}

void RequestLog::WriteCsvBlock() {
  opt_.csv->write(csv_block_.data(), static_cast<std::streamsize>(csv_block_.size()));
  csv_block_.clear();
}

void RequestLog::OnRetired(const ReqState& r) {
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
            r.status == ReqStatus::kDone, r.warmup});
  if (opt_.csv != nullptr) {
    if (opt_.csv_row) {
      opt_.csv_row(&csv_block_, r);
    } else {
      AppendRequestRow(&csv_block_, r);
    }
    if (csv_block_.size() >= kCsvBlockBytes) WriteCsvBlock();
  }
  if (opt_.keep != nullptr) opt_.keep->push_back(r);
}

}  // namespace capplan::sim
