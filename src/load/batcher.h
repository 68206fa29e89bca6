// The server scenario's dynamic batcher (docs/load.md "Dynamic batching"): the system under test
// side of a serving stack. Queries queue as they arrive; each of `streams` worker threads takes
// the oldest queued queries as one batch of at most max_batch samples, when the batch is full or
// its oldest query has waited batch_timeout_ns since it was queued (Triton's max_batch_size and
// max_queue_delay_microseconds), runs it through the BatchExecutor and completes its queries at
// one instant. One batch is in flight per stream; on the GPU each stream is a CUDA stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "load/load_clock.h"
#include "load/system_under_test.h"

namespace dlbench::load {

struct BatcherSettings {
  std::uint32_t max_batch = 1;        // samples per batch, >= 1
  std::int64_t batch_timeout_ns = 0;  // >= 0; 0 runs whatever is queued when a stream is free
  std::uint32_t streams = 1;          // >= 1
  std::uint32_t capacity = 1u << 16;  // queued queries at most (the generator's max_outstanding)
};

// Whether a free stream should run a batch now, and which one (pure; the batcher's rule).
//   queued:     queries waiting, oldest first
//   fit_queries, fit_samples: the longest oldest-first prefix with at most max_batch samples, but
//               at least one query (a query larger than max_batch runs alone)
//   oldest_ns:  when the oldest waiting query was queued
// Dispatch when the prefix is full (it has max_batch samples, or the next query would not fit),
// when flushing, when the timeout is 0, or when the oldest has waited the timeout; otherwise wait
// until oldest_ns + timeout (or an arrival).
struct BatchDecision {
  bool dispatch = false;
  std::size_t queries = 0;
  std::uint32_t samples = 0;
  std::int64_t wake_at_ns = std::numeric_limits<std::int64_t>::max();
};
BatchDecision DecideBatch(std::size_t queued, std::size_t fit_queries, std::uint32_t fit_samples,
                          std::int64_t oldest_ns, std::int64_t now_ns, const BatcherSettings& settings,
                          bool flushing);

// One batch handed to the executor: `count` queries, `samples` samples in all.
struct Batch {
  const Query* queries = nullptr;
  std::size_t count = 0;
  std::uint32_t samples = 0;
};

// Runs batches: the model side of the server scenario.
class BatchExecutor {
 public:
  virtual ~BatchExecutor() = default;
  // Called on stream `stream`'s worker thread (0 <= stream < streams), one batch at a time per
  // stream, concurrently across streams. Returns the batch's decomposition (its batch_samples is
  // set by the batcher), or nullopt when it failed: the executor keeps the reason for its owner,
  // and the batcher then completes this and every later batch without running them, so the run
  // drains at once and the owner reports the failure.
  virtual std::optional<QueryTiming> RunBatch(std::uint32_t stream, const Batch& batch) noexcept = 0;
};

class DynamicBatcher final : public SystemUnderTest {
 public:
  // Starts the stream threads. `executor` and `clock` outlive the batcher.
  DynamicBatcher(const BatcherSettings& settings, BatchExecutor& executor, LoadClock& clock);
  ~DynamicBatcher() override;  // runs what is queued, then joins the stream threads
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues the query (a copy into a pre-sized ring, under the queue lock) and wakes a stream.
  void IssueQuery(const Query& query, QueryCompleter& completer) override;
  // Lets the streams run what is queued without waiting for the timeout, until the next IssueQuery.
  void FlushQueries() override;
  // Drops the queries no stream has taken (they never complete); batches in flight finish.
  std::uint64_t DropQueued() override;

  bool failed() const;

 private:
  struct Entry {
    Query query;
    std::int64_t queued_ns = 0;
  };
  void Worker(std::uint32_t stream);

  BatcherSettings settings_;
  BatchExecutor& executor_;
  LoadClock& clock_;
  QueryCompleter* completer_ = nullptr;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> ring_;
  std::size_t head_ = 0;  // oldest queued
  std::size_t size_ = 0;
  bool flushing_ = false;
  bool quit_ = false;
  bool failed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dlbench::load
