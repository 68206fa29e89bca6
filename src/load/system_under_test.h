// The interfaces between the load generator and what it measures, in LoadGen's style
// (mlcommons/inference loadgen/system_under_test.h, query_sample_library.h, loadgen.h's
// QuerySamplesComplete): the system under test receives queries and reports them complete; the
// sample library says how many pre-made inputs the queries may name; the sink receives the
// finished records. Each method says who calls it, from which thread, and what it may do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "record/query.h"

namespace dlbench::load {

// One query handed to the system under test. Its samples are `samples` consecutive indices of
// the sample library from `first_sample`, wrapping at `library_size` (SampleIndex(j)).
struct Query {
  std::uint64_t id = 0;           // 0, 1, 2, ... in issue order; what Complete() names
  std::int64_t scheduled_ns = 0;  // when it was due (latency counts from here)
  std::uint32_t first_sample = 0;
  std::uint32_t samples = 1;
  std::uint32_t library_size = 1;

  std::uint32_t SampleIndex(std::uint32_t j) const {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(first_sample) + j) % library_size);
  }
};

// Where the time serving a query (or one part of it) went: the fields of record::QueryRecord's
// decomposition, with its presence bits. Durations in ns.
struct QueryTiming {
  std::int64_t host_pre_ns = 0;
  std::int64_t h2d_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t d2h_ns = 0;
  std::int64_t host_post_ns = 0;
  std::uint32_t present = 0;        // record::QueryFieldBits
  std::uint32_t batch_samples = 0;  // samples of the batch that served the query; 0 when not known
};

// How the system under test reports completions (LoadGen's QuerySamplesComplete). Every call
// reads the clock first, before anything else, and then only writes the query's pre-sized record
// slot and a few atomics: no allocation, no I/O, no lock except to wake an issue thread that is
// blocked waiting (closed-loop scenarios with an asynchronous system under test).
//
// Calling rules: any thread may call, concurrently with other queries' completions. Each query is
// completed once: either Complete/CompleteBatch with all its samples, or CompleteSamples parts
// that add up to its sample count, the parts of one query from one thread at a time. A second
// completion, too many samples, or an id never issued is recorded as an error and ends the run
// (RunEnd::kCompletionError); it is never counted twice.
class QueryCompleter {
 public:
  virtual ~QueryCompleter() = default;
  // The whole query is done.
  virtual void Complete(std::uint64_t query_id, const QueryTiming& timing) noexcept = 0;
  // `samples` more of the query's samples are done (offline serves one query in many batches);
  // the query completes with its last sample. Timings of the parts are summed.
  virtual void CompleteSamples(std::uint64_t query_id, std::uint32_t samples,
                               const QueryTiming& timing) noexcept = 0;
  // Several whole queries done at one instant (one batch): one timestamp for all.
  virtual void CompleteBatch(const std::uint64_t* query_ids, std::size_t count,
                             const QueryTiming& timing) noexcept = 0;
  // Whether the run was asked to stop (STOP): a system that serves a long query on the issue
  // thread (offline's parts) checks it between parts and gives the rest of the query up.
  virtual bool StopRequested() const noexcept { return false; }
};

// What the load generator measures.
class SystemUnderTest {
 public:
  virtual ~SystemUnderTest() = default;
  // Called by the issue thread, one query at a time, in id order, right after the query's
  // scheduled and issued timestamps were taken. It may complete the query before it returns (a
  // synchronous system: the issue thread then serves it, as LoadGen allows) or return at once and
  // complete it later from any thread. `completer` lives until the run ends. Must not throw: a
  // failure is reported by the system under test to its owner and the run stopped through the sink.
  virtual void IssueQuery(const Query& query, QueryCompleter& completer) = 0;
  // Called by the issue thread after the last IssueQuery of a run (or a peak-search probe): any
  // query held back for a fuller batch is to be run now, without waiting for its timeout.
  virtual void FlushQueries() = 0;
  // Called once when a run that was asked to stop has drained for RunLimits::stop_drain_timeout_ns
  // and queries are still outstanding: drop the queries not started yet (they stay outstanding and
  // are reported so), let those running finish, and return how many queries will now never
  // complete (the dropped ones, and a query given up after StopRequested).
  virtual std::uint64_t DropQueued() { return 0; }
};

// The pre-made inputs queries draw from (LoadGen's QuerySampleLibrary, its performance sample
// count). The system under test owns the inputs; the load generator only needs how many there are.
class QuerySampleLibrary {
 public:
  virtual ~QuerySampleLibrary() = default;
  virtual std::uint32_t SampleCount() const = 0;  // >= 1
};

// Receives the records of completed queries, in query-id order with no gaps, each exactly once.
// Called from the load generator's flush thread while the run goes on (never from the issue
// thread or a completion), and from the thread that called Run for the last records after the
// system under test drained. Write and StopRequested are never called concurrently.
class QueryRecordSink {
 public:
  virtual ~QueryRecordSink() = default;
  virtual void Write(const record::QueryRecord* records, std::size_t count) = 0;
  // Polled after every Write and at least every flush interval: true ends the run (STOP arrived,
  // or the orchestrator is gone).
  virtual bool StopRequested() = 0;
};

}  // namespace dlbench::load
