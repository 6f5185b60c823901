#include "engine/batch_loop.h"

#include <algorithm>

namespace capplan::engine {

BatchLoop::BatchLoop(EngineBackend* backend, IntegrityTracker* tracker, LoopOptions options)
    : backend_(backend),
      tracker_(tracker),
      opt_(options),
      kv_(options.num_pages, options.page_size, options.page_shuffle_seed) {}

std::vector<VerifyItem> BatchLoop::DecodingRequests() const {
  std::vector<VerifyItem> out;
  for (const Running& r : running_) {
    if (r.PrefillDone()) out.push_back({r.req.id, r.cached});
  }
  return out;
}

void BatchLoop::Fail(int64_t id, const std::string& error) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].req.id != id) continue;
    Running& r = running_[i];
    r.result.failed = true;
    r.result.error = error;
    r.result.finish_us = clock_us_;
    results_[id] = r.result;
    // Pages taken from it by a stale reuse stay allocated to their new owner,
    // so they stay counted against the pool.
    int32_t not_owned = 0;
    (void)kv_.Release(id, &not_owned);  // present: it is running
    committed_pages_ -= r.committed_pages - not_owned;
    running_.erase(running_.begin() + i);
    return;
  }
}

Status BatchLoop::Finish(int64_t id) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].req.id != id) continue;
    Running& r = running_[i];
    r.result.finish_us = clock_us_;
    results_[id] = r.result;
    committed_pages_ -= r.committed_pages;
    CAPPLAN_RETURN_IF_ERROR(kv_.Release(id));
    running_.erase(running_.begin() + i);
    return Status::Ok();
  }
  return Status::Internal("batch loop: finishing unknown request " + std::to_string(id));
}

Status BatchLoop::Admit() {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < opt_.max_running) {
    EngineRequest& w = waiting_.front();
    const int64_t tokens = static_cast<int64_t>(w.prompt.size()) + w.output_len;
    const int32_t pages = kv_.PagesFor(tokens);
    if (w.prompt.empty() || w.output_len < 1 || pages > kv_.usable_pages()) {
      RequestResult res;
      res.id = w.id;
      res.failed = true;
      res.prompt_len = static_cast<int64_t>(w.prompt.size());
      res.error = w.prompt.empty() || w.output_len < 1
                      ? "request needs a prompt and output_len >= 1"
                      : "request needs " + std::to_string(pages) + " KV pages but the pool has " +
                            std::to_string(kv_.usable_pages());
      results_[w.id] = res;
      waiting_.pop_front();
      continue;
    }
    if (committed_pages_ + pages > kv_.usable_pages()) break;  // FIFO: wait for room
    CAPPLAN_RETURN_IF_ERROR(kv_.AddRequest(w.id));
    Running r;
    r.req = std::move(w);
    r.committed_pages = pages;
    r.result.id = r.req.id;
    r.result.prompt_len = static_cast<int64_t>(r.req.prompt.size());
    committed_pages_ += pages;
    running_.push_back(std::move(r));
    waiting_.pop_front();
  }
  return Status::Ok();
}

// Decode first (one token each), then prefill chunks within the budget.
std::vector<BatchLoop::Planned> BatchLoop::PlanStep() const {
  std::vector<Planned> plan;
  for (const Running& r : running_) {
    if (r.PrefillDone()) plan.push_back({r.req.id, r.cached, 1, true});
  }
  int64_t budget = std::max<int64_t>(opt_.chunked_prefill_tokens, 1);
  for (const Running& r : running_) {
    if (r.PrefillDone() || budget <= 0) continue;
    const int64_t n = std::min<int64_t>(budget, r.req.prompt.size() - r.cached);
    plan.push_back({r.req.id, r.cached, n, false});
    budget -= n;
  }
  return plan;
}

BatchLoop::Running* BatchLoop::Find(int64_t id) {
  auto it = std::find_if(running_.begin(), running_.end(),
                         [&](const Running& r) { return r.req.id == id; });
  return it == running_.end() ? nullptr : &*it;
}

// The integrity check of the pages this step reads; a request whose pages
// fail it fails.
void BatchLoop::VerifyIntegrity(const std::vector<Planned>& plan, IterationRecord* rec) {
  if (tracker_->tags() == nullptr) return;  // the no-op tracker launches nothing
  std::vector<VerifyItem> items;
  for (const Planned& p : plan) {
    if (Find(p.id) != nullptr) items.push_back({p.id, p.start});
  }
  // The backend's own timer: CUDA events on the GPU, the host clock on CPU.
  backend_->StartTimer();
  for (const IntegrityViolation& v : tracker_->Verify(items, kv_)) {
    if (Find(v.request) != nullptr) Fail(v.request, v.message);
  }
  rec->verify_us = backend_->StopTimerUs();
}

// The forward pass's requests: the planned ones still running.
std::vector<StepRequest> BatchLoop::BuildBatch(const std::vector<Planned>& plan,
                                               IterationRecord* rec) {
  std::vector<StepRequest> batch;
  for (const Planned& p : plan) {
    const Running* r = Find(p.id);
    if (r == nullptr) continue;  // failed above
    StepRequest s;
    s.request = p.id;
    s.start_position = p.start;
    s.pages = &kv_.PageTable(p.id);
    if (p.decode) {
      s.tokens = {r->result.output.back()};
      s.want_token = true;
      rec->batch.decode_context.push_back(p.start + 1);
    } else {
      s.tokens.assign(r->req.prompt.begin() + p.start, r->req.prompt.begin() + p.start + p.count);
      s.want_token = p.start + p.count == static_cast<int64_t>(r->req.prompt.size());
      rec->batch.prefill.push_back({p.count, p.start});
    }
    batch.push_back(std::move(s));
  }
  return batch;
}

// The step's tokens into the cache and each request's output; requests with
// all their output finish.
Status BatchLoop::TakeTokens(const std::vector<StepRequest>& batch,
                             const std::vector<int32_t>& next) {
  std::vector<int64_t> done;
  for (size_t i = 0; i < batch.size(); ++i) {
    Running* r = Find(batch[i].request);
    r->cached += static_cast<int64_t>(batch[i].tokens.size());
    if (!batch[i].want_token) continue;
    if (r->result.output.empty()) r->result.first_token_us = clock_us_;
    r->result.output.push_back(next[i]);
    if (static_cast<int64_t>(r->result.output.size()) >= r->req.output_len) {
      done.push_back(r->req.id);
    }
  }
  for (int64_t id : done) CAPPLAN_RETURN_IF_ERROR(Finish(id));
  return Status::Ok();
}

Status BatchLoop::Step() {
  CAPPLAN_RETURN_IF_ERROR(Admit());
  if (running_.empty()) {
    return waiting_.empty() ? Status::Ok()
                            : Status::Internal("batch loop: nothing runnable but requests wait");
  }
  const std::vector<Planned> plan = PlanStep();
  // Pages for this step's tokens, before the verification batch sees them.
  for (const Planned& p : plan) {
    const Status st = kv_.Reserve(p.id, p.start + p.count);
    if (!st.ok()) Fail(p.id, st.message());
  }
  IterationRecord rec;
  rec.step = step_;
  VerifyIntegrity(plan, &rec);
  const std::vector<StepRequest> batch = BuildBatch(plan, &rec);
  std::vector<int32_t> next;
  backend_->StartTimer();
  CAPPLAN_RETURN_IF_ERROR(backend_->Forward(batch, tracker_->tags(), &next));
  rec.forward_us = backend_->StopTimerUs();
  rec.op = backend_->last_op_times();
  rec.measured_us = rec.verify_us + rec.forward_us;
  clock_us_ += rec.measured_us;
  CAPPLAN_RETURN_IF_ERROR(TakeTokens(batch, next));
  if (!batch.empty()) iterations_.push_back(std::move(rec));
  kv_.EndStep();  // the step fence: nothing of this step reads its freed pages now
  ++step_;
  return Status::Ok();
}

Status BatchLoop::Run() {
  while (!waiting_.empty() || !running_.empty()) {
    if (hook_) CAPPLAN_RETURN_IF_ERROR(hook_(step_, this));
    CAPPLAN_RETURN_IF_ERROR(Step());
  }
  return Status::Ok();
}

}  // namespace capplan::engine
