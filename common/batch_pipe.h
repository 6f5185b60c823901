// Items handed, in batches, to a consumer on a thread of its own. The
// thread takes the batches in the order they came, so what it builds is
// what one thread consuming every item in order builds. Batches go through
// a short queue: few enough handovers that their locking costs nothing,
// and memory stays flat if the consumer ever falls behind. A pipe that
// never fills a batch starts no thread. Builds without threads
// (WebAssembly without pthreads) consume each batch where it is handed
// over, as does a pipe made with `threaded` false.
#ifndef CAPPLAN_COMMON_BATCH_PIPE_H_
#define CAPPLAN_COMMON_BATCH_PIPE_H_

#include <cstddef>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define CAPPLAN_BATCH_PIPE_THREAD 0
#else
#define CAPPLAN_BATCH_PIPE_THREAD 1
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#endif

namespace capplan::common {

inline constexpr bool kBatchPipeThreads = CAPPLAN_BATCH_PIPE_THREAD != 0;

template <typename T>
class BatchPipe {
 public:
  // Consumes one batch (it may reorder or empty the vector).
  using Consume = std::function<void(std::vector<T>&)>;

  BatchPipe(Consume consume, size_t batch_items, bool threaded)
      : consume_(std::move(consume)),
        batch_items_(batch_items == 0 ? 1 : batch_items),
        threaded_(threaded && kBatchPipeThreads) {
    batch_.reserve(batch_items_);
  }
  // Consumes what is left; an error of the consumer goes unreported here.
  ~BatchPipe() {
    try {
      Drain();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
    }
  }
  BatchPipe(const BatchPipe&) = delete;
  BatchPipe& operator=(const BatchPipe&) = delete;

  void Add(const T& item) {
    batch_.push_back(item);
    if (batch_.size() >= batch_items_) Hand();
  }
  // Every item added so far consumed, the thread joined (items may be
  // added after it); rethrows what the consumer threw on the thread. After
  // such an error the thread took the later batches without consuming
  // them, so that Add never waits on a consumer that stopped.
  void Drain() {
#if CAPPLAN_BATCH_PIPE_THREAD
    Stop();
#endif
    if (error_) {
      batch_.clear();
      std::rethrow_exception(std::exchange(error_, nullptr));
    }
    if (!batch_.empty()) consume_(batch_);
    batch_.clear();
  }

 private:
#if CAPPLAN_BATCH_PIPE_THREAD
  // Batches handed over and not yet taken.
  static constexpr size_t kMaxQueued = 4;

  void Hand() {
    if (!threaded_) {
      consume_(batch_);
      batch_.clear();
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!thread_.joinable()) {
      stop_ = false;
      thread_ = std::thread(&BatchPipe::Loop, this);
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
    batch_.reserve(batch_items_);
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [this] { return !queued_.empty() || stop_; });
      if (queued_.empty()) return;
      std::vector<T> items = std::move(queued_.front());
      queued_.pop_front();
      lock.unlock();
      space_.notify_one();
      if (!error_) {
        try {
          consume_(items);
        } catch (...) {
          error_ = std::current_exception();
        }
      }
      items.clear();
      lock.lock();
      spare_.push_back(std::move(items));
    }
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_one();
    thread_.join();
  }
#else
  void Hand() {
    consume_(batch_);
    batch_.clear();
  }
#endif

  Consume consume_;
  size_t batch_items_;
  bool threaded_;
  std::vector<T> batch_;      // added, not yet handed over
  std::exception_ptr error_;  // the consumer's on the thread, read once it is joined
#if CAPPLAN_BATCH_PIPE_THREAD
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable work_, space_;
  // Guarded by mu_: batches handed over and not yet taken, emptied ones
  // for reuse, and whether the thread should end once `queued_` is empty.
  std::deque<std::vector<T>> queued_;
  std::vector<std::vector<T>> spare_;
  bool stop_ = false;
#endif
};

}  // namespace capplan::common

#endif  // CAPPLAN_COMMON_BATCH_PIPE_H_
