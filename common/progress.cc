#include "common/progress.h"

#include <cmath>
#include <cstdio>
#include <ostream>

namespace capplan {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

std::string ProgressBar::Render(const std::string& label, int64_t done, int64_t total,
                                double elapsed_s, int width) {
  const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(width - filled), '.');
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  const std::string eta = rate > 0 ? FormatDuration((total - done) / rate) : "?";
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s [%s] %lld/%lld %3d%% %.1f/s ETA %s", label.c_str(),
                bar.c_str(), static_cast<long long>(done), static_cast<long long>(total),
                static_cast<int>(frac * 100), rate, eta.c_str());
  return buf;
}

ProgressBar::ProgressBar(std::ostream* out, int64_t total, std::string label, Clock clock)
    : out_(out), total_(total), label_(std::move(label)), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  start_s_ = clock_();
}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Tick(int64_t n) {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  Draw();
}

void ProgressBar::Update(int64_t done) {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  Draw();
}

void ProgressBar::Draw() {
  const double now = clock_();
  // Redraw at most 10 times a second: a fast sweep must not be slowed by
  // terminal writes.
  if (last_draw_s_ >= 0 && now - last_draw_s_ < 0.1 && done_ < total_) return;
  last_draw_s_ = now;
  *out_ << "\r" << Render(label_, done_, total_, now - start_s_) << std::flush;
}

void ProgressBar::Finish() {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || last_draw_s_ < 0) return;
  finished_ = true;
  *out_ << "\r" << Render(label_, done_, total_, clock_() - start_s_) << "\n" << std::flush;
}

}  // namespace capplan
