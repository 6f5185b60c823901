#include "sim/request_log.h"

#include <algorithm>
#include <ostream>

namespace capplan::sim {

namespace {
double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
}  // namespace

const char kRequestsCsvHeader[] =
    "id,replica,rank,arrival_ms,first_token_ms,finish_ms,input_tokens,output_tokens,"
    "ttft_ms,tpot_ms,e2el_ms,retractions,warmup,status\n";

void WriteRequestRow(std::ostream& os, const ReqState& r) {
  const bool ok = r.status == ReqStatus::kDone;
  const double ttft = ok ? Ms(r.first_token_ns - r.arrival_ns) : 0;
  const double e2el = ok ? Ms(r.finish_ns - r.arrival_ns) : 0;
  const double tpot = ok && r.generated > 1 ? (e2el - ttft) / (r.generated - 1) : 0;
  os << r.id << ',' << r.instance << ',' << r.rank << ',' << Ms(r.arrival_ns) << ','
     << (r.first_token_ns >= 0 ? Ms(r.first_token_ns) : -1) << ',' << Ms(r.finish_ns) << ','
     << r.input << ',' << r.generated << ',' << ttft << ',' << tpot << ',' << e2el << ','
     << r.retractions << ',' << (r.warmup ? 1 : 0) << ',' << (ok ? "completed" : "failed") << '\n';
}

RequestLog::RequestLog(const Options& options) : opt_(options), e2e_(options.slo) {
  e2e_.Reserve(opt_.expected);
  if (opt_.keep != nullptr) opt_.keep->reserve(static_cast<size_t>(opt_.expected));
  if (opt_.csv != nullptr) {
    opt_.csv->precision(9);
    *opt_.csv << kRequestsCsvHeader;
  }
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
  if (opt_.csv != nullptr) WriteRequestRow(*opt_.csv, r);
  if (opt_.keep != nullptr) opt_.keep->push_back(r);
}

}  // namespace capplan::sim
