#include "sim/sweep/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace capplan::sim::sweep {

int DefaultJobs() { return std::max(1u, std::thread::hardware_concurrency()); }

Status ParallelFor(int64_t n, int jobs, const std::function<Status(int64_t)>& fn) {
  if (n <= 0) return Status::Ok();
  if (jobs <= 0) jobs = DefaultJobs();
  const int threads = static_cast<int>(std::min<int64_t>(jobs, n));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  int64_t first_bad = n;
  Status first_status;
  auto work = [&] {
    while (!failed.load()) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      Status st;
      try {
        st = fn(i);
      } catch (const std::exception& e) {
        st = Status::Internal(std::string("unexpected exception: ") + e.what());
      }
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < first_bad) {
          first_bad = i;
          first_status = st;
        }
        failed = true;
      }
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  return first_status;
}

}  // namespace capplan::sim::sweep
