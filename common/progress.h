// A one-line progress bar with rate and ETA, redrawn in place with '\r'.
// Callers pass a null stream when stderr is not a terminal (logs and CI
// output stay clean). Safe to tick from several threads.
#ifndef CAPPLAN_COMMON_PROGRESS_H_
#define CAPPLAN_COMMON_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>

namespace capplan {

class ProgressBar {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // out == nullptr: every call is a no-op.
  ProgressBar(std::ostream* out, int64_t total, std::string label, Clock clock = {});
  ~ProgressBar();
  void Tick(int64_t n = 1);
  // Sets the count done so far (a caller that counts on its own).
  void Update(int64_t done);
  // Draws the final state and ends the line, when anything was drawn.
  void Finish();

  // The line drawn for `done` of `total` after `elapsed_s` (for tests).
  static std::string Render(const std::string& label, int64_t done, int64_t total,
                            double elapsed_s, int width = 30);

 private:
  void Draw();  // under mu_, at most 10 times a second

  std::ostream* out_;
  int64_t total_;
  std::string label_;
  Clock clock_;
  std::mutex mu_;
  int64_t done_ = 0;
  double start_s_ = 0;
  double last_draw_s_ = -1;
  bool finished_ = false;
};

// "1:02:03" or "2:03".
std::string FormatDuration(double seconds);

}  // namespace capplan

#endif  // CAPPLAN_COMMON_PROGRESS_H_
