#include "load/load_generator.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace dlbench::load {
namespace {

constexpr int kSpinIterations = 2000;  // ~ a few microseconds of polling before blocking

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::uint64_t PackState(std::uint64_t id, std::uint32_t remaining) {
  return (id << 32) | remaining;  // the id's low 32 bits in the high half
}

bool ClosedLoop(const EffectiveLoadSettings& s) {
  return s.scenario == Scenario::kSingleStream || s.scenario == Scenario::kOffline ||
         (s.scenario == Scenario::kMultiStream && !s.query_interval_ns);
}

// Adds one part's decomposition into a query's record.
void Accumulate(record::QueryRecord& r, const QueryTiming& t) {
  r.host_pre_ns += t.host_pre_ns;
  r.h2d_ns += t.h2d_ns;
  r.compute_ns += t.compute_ns;
  r.d2h_ns += t.d2h_ns;
  r.host_post_ns += t.host_post_ns;
  r.present |= t.present & record::kQueryFieldMask;
  r.batch_samples = std::max(r.batch_samples, t.batch_samples);
}

}  // namespace

const char* RunEndName(RunEnd end) {
  switch (end) {
    case RunEnd::kStopped:
      return "stopped";
    case RunEnd::kMaxQueries:
      return "max_queries";
    case RunEnd::kMaxDuration:
      return "max_duration";
    case RunEnd::kTooManyOutstanding:
      return "too_many_outstanding";
    case RunEnd::kCompletionError:
      return "completion_error";
    case RunEnd::kDrainTimeout:
      return "drain_timeout";
    case RunEnd::kDroppedAfterStop:
      return "dropped_after_stop";
  }
  return "stopped";
}

LoadGenerator::LoadGenerator(const EffectiveLoadSettings& settings, LoadClock& clock)
    : settings_(settings), clock_(clock) {
  capacity_ = 1;
  while (capacity_ < std::max<std::uint32_t>(settings.max_outstanding, 2)) capacity_ <<= 1;
  mask_ = capacity_ - 1;
  slots_ = std::make_unique<Slot[]>(capacity_);
  flush_buffer_.resize(kFlushRecords);
}

LoadGenerator::~LoadGenerator() = default;

void LoadGenerator::SetTargetQps(double target_qps) {
  DLBENCH_CHECK(settings_.scenario == Scenario::kServer && target_qps > 0, "a server rate must be > 0");
  settings_.target_qps = target_qps;
  if (schedule_) schedule_->Restart(target_qps);
  if (pending_) pending_.reset();  // its offset belonged to the old rate
}

void LoadGenerator::RecordError(CompletionError error, std::uint64_t query_id) noexcept {
  int none = static_cast<int>(CompletionError::kNone);
  if (error_.compare_exchange_strong(none, static_cast<int>(error))) error_id_.store(query_id);
}

void LoadGenerator::Complete(std::uint64_t query_id, const QueryTiming& timing) noexcept {
  const std::int64_t now = clock_.NowNs();
  CompleteAt(query_id, 0, /*whole=*/true, timing, now);
}

void LoadGenerator::CompleteSamples(std::uint64_t query_id, std::uint32_t samples,
                                    const QueryTiming& timing) noexcept {
  const std::int64_t now = clock_.NowNs();
  CompleteAt(query_id, samples, /*whole=*/false, timing, now);
}

void LoadGenerator::CompleteBatch(const std::uint64_t* query_ids, std::size_t count,
                                  const QueryTiming& timing) noexcept {
  const std::int64_t now = clock_.NowNs();
  for (std::size_t i = 0; i < count; ++i) CompleteAt(query_ids[i], 0, /*whole=*/true, timing, now);
}

void LoadGenerator::CompleteAt(std::uint64_t query_id, std::uint32_t samples, bool whole,
                               const QueryTiming& timing, std::int64_t now_ns) noexcept {
  if (query_id >= issued_.load(std::memory_order_acquire)) {
    RecordError(CompletionError::kUnknown, query_id);
    return;
  }
  Slot& slot = slots_[query_id & mask_];
  std::uint64_t state = slot.state.load(std::memory_order_acquire);
  std::uint32_t take = 0;
  for (;;) {
    const auto remaining = static_cast<std::uint32_t>(state);
    take = whole ? remaining : samples;
    // Another query's slot now (this one completed and was delivered), nothing left, or more
    // samples than are left: a completion the query cannot have.
    if ((state >> 32) != (query_id & 0xffffffffu) || remaining == 0 || take == 0 || take > remaining) {
      RecordError(CompletionError::kDuplicate, query_id);
      return;
    }
    if (slot.state.compare_exchange_weak(state, state - take, std::memory_order_acq_rel)) break;
  }
  Accumulate(slot.record, timing);
  if (static_cast<std::uint32_t>(state) != take) return;  // parts still outstanding
  slot.record.completed_ns = now_ns;
  slot.done.store(true, std::memory_order_release);
  completed_.fetch_add(1, std::memory_order_seq_cst);
  if (waiting_.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(wait_mutex_);
    wait_cv_.notify_all();
  }
}

bool LoadGenerator::WaitForCompletions(std::uint64_t count, std::int64_t deadline_ns) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (completed_.load(std::memory_order_acquire) >= count) return true;
    CpuRelax();
  }
  std::unique_lock<std::mutex> lock(wait_mutex_);
  waiting_.store(true, std::memory_order_seq_cst);
  bool ok = true;
  while (completed_.load(std::memory_order_seq_cst) < count) {
    if (stop_.load() || error_.load() != 0 || clock_.NowNs() >= deadline_ns) {
      ok = false;
      break;
    }
    // A bounded wait, so STOP, an error or the deadline are seen even if no completion comes.
    wait_cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
  waiting_.store(false, std::memory_order_seq_cst);
  return ok;
}

std::size_t LoadGenerator::FlushReady(QueryRecordSink& sink) {
  std::size_t total = 0;
  for (;;) {
    const std::uint64_t first = flushed_.load(std::memory_order_acquire);
    const std::uint64_t issued = issued_.load(std::memory_order_acquire);
    std::size_t n = 0;
    while (n < kFlushRecords && first + n < issued) {
      Slot& slot = slots_[(first + n) & mask_];
      if (!slot.done.load(std::memory_order_acquire)) break;
      flush_buffer_[n] = slot.record;
      ++n;
    }
    if (n == 0) return total;
    // The slots are free only once their records are copied out.
    flushed_.store(first + n, std::memory_order_release);
    sink.Write(flush_buffer_.data(), n);
    total += n;
  }
}

void LoadGenerator::FlushLoop(QueryRecordSink& sink) {
  std::unique_lock<std::mutex> lock(flush_mutex_);
  while (!flush_quit_) {
    flush_cv_.wait_for(lock, std::chrono::nanoseconds(kFlushIntervalNs));
    if (flush_quit_) break;
    lock.unlock();
    FlushReady(sink);
    if (sink.StopRequested()) stop_.store(true);
    lock.lock();
  }
}

RunResult LoadGenerator::Run(SystemUnderTest& sut, const QuerySampleLibrary& library, QueryRecordSink& sink,
                             const RunLimits& limits) {
  const std::uint32_t library_size = library.SampleCount();
  DLBENCH_CHECK(library_size >= 1, "the sample library is empty");
  if (!schedule_ || library_size != library_size_) {
    schedule_.emplace(settings_, library_size);
    library_size_ = library_size;
    pending_.reset();
  }
  stop_.store(false);
  error_.store(0);
  {
    std::lock_guard<std::mutex> lock(flush_mutex_);
    flush_quit_ = false;
  }

  RunResult result;
  result.first_id = issued_.load();
  const std::uint64_t completed_before = completed_.load();
  result.start_ns = clock_.NowNs();
  const bool closed_loop = ClosedLoop(settings_);
  const bool offsets = !closed_loop;  // server, or multi_stream at a fixed interval
  std::thread flusher([this, &sink] { FlushLoop(sink); });

  const auto too_long = [&](std::int64_t t_ns) { return t_ns - result.start_ns >= limits.max_duration_ns; };
  std::int64_t deadline_ns = limits.max_duration_ns == std::numeric_limits<std::int64_t>::max()
                                 ? std::numeric_limits<std::int64_t>::max()
                                 : result.start_ns + limits.max_duration_ns;
  bool ended = false;
  while (!ended) {
    if (stop_.load(std::memory_order_relaxed)) {
      result.end = RunEnd::kStopped;
      break;
    }
    if (error_.load(std::memory_order_relaxed) != 0) {
      result.end = RunEnd::kCompletionError;
      break;
    }
    if (result.issued >= limits.max_queries) {
      result.end = RunEnd::kMaxQueries;
      break;
    }
    const std::uint64_t id = issued_.load(std::memory_order_relaxed);
    if (closed_loop || (settings_.scenario == Scenario::kMultiStream)) {
      // The previous query must be complete before the next is issued.
      if (!WaitForCompletions(id, deadline_ns)) {
        result.end = stop_.load()         ? RunEnd::kStopped
                     : error_.load() != 0 ? RunEnd::kCompletionError
                                          : RunEnd::kMaxDuration;
        break;
      }
    }
    if (!pending_) {
      pending_ = schedule_->Next();
      pending_->id = id;  // ids are the generator's: they continue across runs and restarts
    }
    const std::int64_t due_ns = offsets ? result.start_ns + pending_->offset_ns : clock_.NowNs();
    if (too_long(due_ns)) {
      result.end = RunEnd::kMaxDuration;
      break;
    }
    // A free slot: the one `capacity_` queries back must have been delivered.
    while (id - flushed_.load(std::memory_order_acquire) >= capacity_) {
      if (id - completed_.load(std::memory_order_acquire) >= capacity_) {
        result.end = RunEnd::kTooManyOutstanding;
        result.error = "too many outstanding queries: " + std::to_string(capacity_) +
                       " issued and not completed at query " + std::to_string(id) +
                       " (the system under test fell behind the schedule)";
        ended = true;
        break;
      }
      flush_cv_.notify_one();
      std::this_thread::yield();
    }
    if (ended) break;
    // Everything but the timestamps is written before the wait, so that nothing but the issued
    // timestamp stands between the wait's end and IssueQuery.
    Slot& slot = slots_[id & mask_];
    record::QueryRecord& r = slot.record;
    r = record::QueryRecord{};
    r.query_id = id;
    r.samples = pending_->samples;
    slot.done.store(false, std::memory_order_relaxed);
    slot.state.store(PackState(id, pending_->samples), std::memory_order_relaxed);
    Query query;
    query.id = id;
    query.first_sample = pending_->first_sample;
    query.samples = pending_->samples;
    query.library_size = library_size_;
    // Sleeps in slices, so STOP is seen within one slice even at a low rate.
    while (offsets) {
      const std::int64_t now = clock_.NowNs();
      if (now >= due_ns) break;
      if (stop_.load(std::memory_order_relaxed)) {
        result.end = RunEnd::kStopped;
        ended = true;
        break;
      }
      clock_.SleepUntilNs(std::min(due_ns, now + kFlushIntervalNs));
    }
    if (ended) break;

    const std::int64_t issued_ns = clock_.NowNs();
    r.scheduled_ns = offsets ? due_ns : issued_ns;
    r.issued_ns = issued_ns;
    query.scheduled_ns = r.scheduled_ns;
    issued_.store(id + 1, std::memory_order_release);
    sut.IssueQuery(query, *this);
    pending_.reset();
    ++result.issued;
    if ((id + 1) % kFlushRecords == 0) flush_cv_.notify_one();
  }

  sut.FlushQueries();
  const std::uint64_t issued_total = issued_.load();
  const std::int64_t drain_deadline = MonotonicNowNs() + limits.drain_timeout_ns;
  // After STOP the drain lasts stop_drain_timeout_ns; then the system under test drops what it has
  // not started, and the drain waits only for what is running.
  std::int64_t stop_seen_ns = -1;
  bool dropped = false;
  std::uint64_t abandoned = 0;
  std::unique_lock<std::mutex> lock(wait_mutex_);
  waiting_.store(true, std::memory_order_seq_cst);
  while (completed_.load(std::memory_order_seq_cst) + abandoned < issued_total &&
         MonotonicNowNs() < drain_deadline && error_.load() == 0) {
    if (!dropped && stop_.load()) {
      const std::int64_t now = MonotonicNowNs();
      if (stop_seen_ns < 0) stop_seen_ns = now;
      if (now - stop_seen_ns >= limits.stop_drain_timeout_ns) {
        dropped = true;
        lock.unlock();  // the system's completions take this lock to wake the drain
        abandoned = sut.DropQueued();
        lock.lock();
        continue;
      }
    }
    wait_cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
  waiting_.store(false, std::memory_order_seq_cst);
  lock.unlock();

  {
    std::lock_guard<std::mutex> flush_lock(flush_mutex_);
    flush_quit_ = true;
  }
  flush_cv_.notify_one();
  flusher.join();
  FlushReady(sink);

  result.end_ns = clock_.NowNs();
  result.completed = completed_.load() - completed_before;
  if (error_.load() != 0) {
    const auto kind = static_cast<CompletionError>(error_.load());
    result.end = RunEnd::kCompletionError;
    result.error = "the system under test completed query " + std::to_string(error_id_.load()) +
                   (kind == CompletionError::kUnknown ? ", which was never issued"
                                                      : " twice (or more samples than it has)");
  } else if (completed_.load() < issued_total) {
    // The first cause stays the run's end (too many outstanding queries leaves some outstanding).
    if (result.end != RunEnd::kTooManyOutstanding) {
      result.end = dropped && completed_.load() + abandoned >= issued_total ? RunEnd::kDroppedAfterStop
                                                                            : RunEnd::kDrainTimeout;
    }
    result.error += std::string(result.error.empty() ? "" : "; ") + "query " +
                    std::to_string(flushed_.load()) + " was issued and never completed (" +
                    std::to_string(issued_total - completed_.load()) + " outstanding after a drain of " +
                    (dropped ? std::to_string(limits.stop_drain_timeout_ns / 1'000'000) + " ms after STOP, " +
                                   std::to_string(abandoned) +
                                   " of them dropped by the system under test before they ran)"
                             : std::to_string(limits.drain_timeout_ns / 1'000'000) + " ms)");
  }
  return result;
}

}  // namespace dlbench::load
