#include "load/batcher.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace dlbench::load {

BatchDecision DecideBatch(std::size_t queued, std::size_t fit_queries, std::uint32_t fit_samples,
                          std::int64_t oldest_ns, std::int64_t now_ns, const BatcherSettings& settings,
                          bool flushing) {
  BatchDecision d;
  if (queued == 0) return d;
  const bool full = fit_queries < queued || fit_samples >= settings.max_batch;
  const std::int64_t due_ns = oldest_ns + settings.batch_timeout_ns;
  if (full || flushing || settings.batch_timeout_ns == 0 || now_ns >= due_ns) {
    d.dispatch = true;
    d.queries = fit_queries;
    d.samples = fit_samples;
    return d;
  }
  d.wake_at_ns = due_ns;
  return d;
}

DynamicBatcher::DynamicBatcher(const BatcherSettings& settings, BatchExecutor& executor, LoadClock& clock)
    : settings_(settings), executor_(executor), clock_(clock) {
  DLBENCH_CHECK(settings_.max_batch >= 1 && settings_.streams >= 1 && settings_.capacity >= 1 &&
                    settings_.batch_timeout_ns >= 0,
                "batcher settings out of range");
  ring_.resize(settings_.capacity);
  for (std::uint32_t s = 0; s < settings_.streams; ++s) workers_.emplace_back([this, s] { Worker(s); });
}

DynamicBatcher::~DynamicBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool DynamicBatcher::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

void DynamicBatcher::IssueQuery(const Query& query, QueryCompleter& completer) {
  const std::int64_t now = clock_.NowNs();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The generator never has more than max_outstanding queries in flight; a larger queue is a
    // configuration bug, not a load condition.
    DLBENCH_CHECK(size_ < ring_.size(), "dynamic batcher queue overflow (capacity below max_outstanding)");
    completer_ = &completer;
    flushing_ = false;
    ring_[(head_ + size_) % ring_.size()] = Entry{query, now};
    ++size_;
  }
  cv_.notify_one();
}

std::uint64_t DynamicBatcher::DropQueued() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t dropped = size_;
  head_ = (head_ + size_) % ring_.size();
  size_ = 0;
  return dropped;
}

void DynamicBatcher::FlushQueries() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;
  }
  cv_.notify_all();
}

void DynamicBatcher::Worker(std::uint32_t stream) {
  // Pre-sized: a batch holds at most max_batch queries (each has at least one sample).
  std::vector<Query> batch(settings_.max_batch);
  std::vector<std::uint64_t> ids(settings_.max_batch);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (size_ == 0) {
      if (quit_) return;
      cv_.wait(lock);
      continue;
    }
    std::size_t fit_queries = 0;
    std::uint32_t fit_samples = 0;
    while (fit_queries < size_) {
      const std::uint32_t next = ring_[(head_ + fit_queries) % ring_.size()].query.samples;
      if (fit_queries > 0 && fit_samples + next > settings_.max_batch) break;
      fit_samples += next;
      ++fit_queries;
      if (fit_samples >= settings_.max_batch) break;
    }
    const BatchDecision d = DecideBatch(size_, fit_queries, fit_samples, ring_[head_].queued_ns,
                                        clock_.NowNs(), settings_, flushing_ || quit_ || failed_);
    if (!d.dispatch) {
      cv_.wait_for(lock,
                   std::chrono::nanoseconds(std::max<std::int64_t>(d.wake_at_ns - clock_.NowNs(), 1000)));
      continue;
    }
    for (std::size_t i = 0; i < d.queries; ++i) {
      batch[i] = ring_[(head_ + i) % ring_.size()].query;
      ids[i] = batch[i].id;
    }
    head_ = (head_ + d.queries) % ring_.size();
    size_ -= d.queries;
    const bool skip = failed_;
    QueryCompleter* completer = completer_;
    lock.unlock();
    std::optional<QueryTiming> timing;
    if (!skip) timing = executor_.RunBatch(stream, Batch{batch.data(), d.queries, d.samples});
    QueryTiming t = timing.value_or(QueryTiming{});
    t.batch_samples = d.samples;
    completer->CompleteBatch(ids.data(), d.queries, t);
    lock.lock();
    if (!skip && !timing) failed_ = true;
  }
}

}  // namespace dlbench::load
