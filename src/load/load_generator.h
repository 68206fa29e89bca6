// The load generator: issues a scenario's queries to a system under test, timestamps them and
// streams their records (docs/load.md). It runs inside the runner process, because a pipe in the
// timed path would measure the pipe.
//
// Threads. Run() is the issue thread: it waits for the schedule (a Poisson arrival, a fixed
// interval, or the previous query's completion), takes the scheduled and issued timestamps and
// calls SystemUnderTest::IssueQuery; nothing else happens between the issued timestamp and the
// call. Completions (QueryCompleter, which this class implements) come from any thread and write
// the query's slot of a pre-sized ring of records. A flush thread copies completed records out of
// the ring in id order and hands them to the QueryRecordSink (encoding and I/O happen there, as
// LoadGen formats its logs on another thread), and polls the sink for STOP.
//
// Latency as LoadGen defines it (inference_rules.adoc; issue mlcommons/inference#455): from the
// scheduled time, taken just before IssueQuery, to the completion's timestamp, the first thing a
// completion does. In single_stream, closed-loop multi_stream and offline a query is scheduled
// when it is issued (QueryScheduler<SingleStream>::Wait in issue_query_controller.cc), so the time
// the generator spends between queries is not in any latency; in server and fixed-interval
// multi_stream it is scheduled at its arrival, so issue lateness and queueing count.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "load/load_clock.h"
#include "load/schedule.h"
#include "load/settings.h"
#include "load/system_under_test.h"

namespace dlbench::load {

// Ceilings of one Run. The run also ends when the sink reports STOP.
struct RunLimits {
  std::uint64_t max_queries = std::numeric_limits<std::uint64_t>::max();  // issued in this run
  // From the run's start to the next query's scheduled time (server, fixed interval) or to now
  // (closed loop), on the load clock.
  std::int64_t max_duration_ns = std::numeric_limits<std::int64_t>::max();
  // After the last issue, how long (real time) outstanding queries may take to complete.
  std::int64_t drain_timeout_ns = 10'000'000'000;
  // After STOP, how long (real time) the drain waits before the system under test drops the
  // queries it has not started (SystemUnderTest::DropQueued): a server far behind its schedule has
  // a queue that would take longer than the orchestrator's grace after STOP (10 s) to serve, and
  // the cell would end `timeout` instead of `fell_behind` (H200, 2026-12-05: ResNet-50 at 4,000/s).
  std::int64_t stop_drain_timeout_ns = 2'000'000'000;
};

enum class RunEnd {
  kStopped,  // the sink asked to stop (STOP, or the orchestrator is gone)
  kMaxQueries,
  kMaxDuration,
  kTooManyOutstanding,  // max_outstanding queries in flight: the system fell behind the schedule
  kCompletionError,     // a query completed twice, with too many samples, or one never issued
  kDrainTimeout,        // issued queries did not all complete within drain_timeout_ns
  // STOP, and the drain after it outlasted stop_drain_timeout_ns: the system under test dropped
  // the queries it had not started (the last ones issued), which stay outstanding
  kDroppedAfterStop,
};
const char* RunEndName(RunEnd end);

struct RunResult {
  RunEnd end = RunEnd::kStopped;
  std::uint64_t first_id = 0;   // the run's first query id (ids continue across runs)
  std::uint64_t issued = 0;     // queries issued in this run
  std::uint64_t completed = 0;  // of those, completed (all of them unless the drain timed out)
  std::int64_t start_ns = 0;    // the run's start on the load clock: offsets count from here
  std::int64_t end_ns = 0;
  std::string error;  // what went wrong, naming the query id (kTooManyOutstanding onwards)
};

class LoadGenerator final : private QueryCompleter {
 public:
  // Records are flushed to the sink in batches of at most kFlushRecords, at least every
  // kFlushIntervalNs (the STEPS frame's cadence).
  static constexpr std::size_t kFlushRecords = 1024;
  static constexpr std::int64_t kFlushIntervalNs = 50'000'000;

  LoadGenerator(const EffectiveLoadSettings& settings, LoadClock& clock);
  ~LoadGenerator() override;
  LoadGenerator(const LoadGenerator&) = delete;
  LoadGenerator& operator=(const LoadGenerator&) = delete;

  // Issues queries until a limit, STOP or an error; then flushes the system under test, waits for
  // its outstanding queries and delivers every record. Every completed query's record reaches the
  // sink once, in id order. May be called again (the peak search's probes): ids and the sample
  // stream continue; the schedule's offsets continue too (a server run's first query is due at the
  // new run's start plus the offset reached) unless SetTargetQps restarted them at 0. Not
  // reentrant.
  RunResult Run(SystemUnderTest& sut, const QuerySampleLibrary& library, QueryRecordSink& sink,
                const RunLimits& limits);

  // The server rate of the next Run (the peak search's probes). Requires scenario server.
  void SetTargetQps(double target_qps);

  const EffectiveLoadSettings& settings() const { return settings_; }

 private:
  struct Slot {
    record::QueryRecord record;
    // The low 32 bits of the query id that holds the slot, and its samples not yet completed:
    // (id32 << 32) | remaining, so a completion checks "my query, not done yet" in one atomic.
    std::atomic<std::uint64_t> state{0};
    std::atomic<bool> done{false};  // set (release) after the record's completion fields
  };
  enum class CompletionError : int { kNone = 0, kUnknown, kDuplicate };

  void Complete(std::uint64_t query_id, const QueryTiming& timing) noexcept override;
  void CompleteSamples(std::uint64_t query_id, std::uint32_t samples,
                       const QueryTiming& timing) noexcept override;
  bool StopRequested() const noexcept override { return stop_.load(std::memory_order_relaxed); }
  void CompleteBatch(const std::uint64_t* query_ids, std::size_t count,
                     const QueryTiming& timing) noexcept override;
  void CompleteAt(std::uint64_t query_id, std::uint32_t samples, bool whole, const QueryTiming& timing,
                  std::int64_t now_ns) noexcept;
  void RecordError(CompletionError error, std::uint64_t query_id) noexcept;

  // Blocks until `count` queries completed (true), or stop/error/`deadline_ns` on the load clock
  // (false).
  bool WaitForCompletions(std::uint64_t count, std::int64_t deadline_ns);
  // Delivers the completed prefix of records not yet delivered; returns how many.
  std::size_t FlushReady(QueryRecordSink& sink);
  void FlushLoop(QueryRecordSink& sink);

  EffectiveLoadSettings settings_;
  LoadClock& clock_;
  std::optional<QuerySchedule> schedule_;
  std::optional<ScheduledQuery> pending_;  // generated but not issued when the last run ended
  std::uint32_t library_size_ = 0;

  std::unique_ptr<Slot[]> slots_;
  std::uint64_t capacity_ = 0;  // a power of two
  std::uint64_t mask_ = 0;
  std::atomic<std::uint64_t> issued_{0};     // ids below this were issued
  std::atomic<std::uint64_t> completed_{0};  // queries completed
  std::atomic<std::uint64_t> flushed_{0};    // ids below this were delivered; their slots are free
  std::atomic<int> error_{0};                // CompletionError of the first bad completion
  std::atomic<std::uint64_t> error_id_{0};
  std::atomic<bool> stop_{false};

  // Waking the issue thread when it blocks for a completion.
  std::atomic<bool> waiting_{false};
  std::mutex wait_mutex_;
  std::condition_variable wait_cv_;

  // The flush thread.
  std::mutex flush_mutex_;
  std::condition_variable flush_cv_;
  bool flush_quit_ = false;
  std::vector<record::QueryRecord> flush_buffer_;
};

}  // namespace dlbench::load
