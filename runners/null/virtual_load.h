// dlbench-null's inference under load (docs/load.md, "The null runner"): src/load's generator runs
// the cell's scenario against a simulated system under test on a virtual clock, so every scenario
// and the orchestrator's handling of QUERIES are tested with exact, predictable latencies.
//
// The simulated system serves a batch of n samples in service_us + n x service_per_sample_us
// (virtual microseconds). Single stream, multi stream and offline run on the issue thread (offline
// in batches of batch_size, as the torch runner serves them). The server scenario is a queue in
// front of `streams` servers with the dynamic batcher's rule (load::DecideBatch's semantics: a
// batch goes when max_batch samples are queued, or its oldest query has waited batch_timeout_us,
// or at once with a timeout of 0), simulated as discrete events: the clock's sleeps are where the
// events between two arrivals happen, each completion stamped at its own virtual instant. So a
// server cell below capacity has latencies near the service time, and one above capacity queues
// without bound until the generator's max_outstanding ends it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "load/load_clock.h"
#include "load/settings.h"
#include "load/system_under_test.h"
#include "protocol/runner_session.h"
#include "runners/null/faults.h"

namespace dlbench::nullrunner {

// The service time of one batch, in virtual ns.
struct VirtualService {
  std::int64_t per_batch_ns = 1'000'000;
  std::int64_t per_sample_ns = 0;
  std::int64_t Of(std::uint32_t samples) const {
    return per_batch_ns + per_sample_ns * static_cast<std::int64_t>(samples);
  }
};

// The clock and the system under test in one: SleepUntilNs runs the simulation up to the time it
// is asked for. Only the issue thread calls SleepUntilNs, IssueQuery and FlushQueries; NowNs is
// safe from any thread. `real_speedup` bounds how fast virtual time runs against real time (the
// clock sleeps when it is further ahead than 200 us), which bounds how far a cell runs past STOP.
class VirtualLoadServer final : public load::LoadClock,
                                public load::SystemUnderTest,
                                public load::QuerySampleLibrary {
 public:
  // `serve_after_stop_ns` (the cell's serve_after_stop_us): after STOP the server serves its queue
  // for only this long of virtual time, and what is still queued waits for the load generator's
  // DropQueued, as dlbench-torch's batcher's queue does when it is longer than the STOP drain.
  // Absent: the queue is served at once, however long.
  VirtualLoadServer(const load::EffectiveLoadSettings& settings, const VirtualService& service,
                    std::int64_t start_ns, double real_speedup,
                    std::optional<std::int64_t> serve_after_stop_ns = std::nullopt);

  std::int64_t NowNs() const override { return now_ns_.load(); }
  void SleepUntilNs(std::int64_t t_ns) override;
  void IssueQuery(const load::Query& query, load::QueryCompleter& completer) override;
  void FlushQueries() override;
  // Drops the queue (only serve_after_stop_ns leaves one after a run) and finishes the batches in
  // service; returns the queries dropped.
  std::uint64_t DropQueued() override;
  std::uint32_t SampleCount() const override { return settings_.sample_library_size; }

 private:
  struct Server {
    std::int64_t busy_until_ns = 0;
    std::vector<std::uint64_t> ids;  // the batch in service; empty when the server is free
  };
  struct Queued {
    std::uint64_t id;
    std::int64_t queued_ns;
  };
  // Processes every event at or before `t_ns` (every event when `flush`), then sets the clock to
  // `t_ns` if it is later.
  void Advance(std::int64_t t_ns, bool flush);
  // Starts batches on free servers as the batching rule allows at the current time.
  void Dispatch(bool flush);
  void SetNow(std::int64_t t_ns);
  void Throttle();

  load::EffectiveLoadSettings settings_;
  VirtualService service_;
  std::atomic<std::int64_t> now_ns_;
  std::int64_t virtual_begin_ns_;
  std::int64_t real_begin_ns_;
  double real_speedup_;
  std::optional<std::int64_t> serve_after_stop_ns_;
  load::QueryCompleter* completer_ = nullptr;
  std::vector<Server> servers_;
  std::deque<Queued> queue_;
};

// What a null load cell sends in DONE (or ERROR when `error` is set) and EXTRAS.
struct NullLoadOutcome {
  // "stopped", "max_steps", "max_time", "too_many_outstanding"; "peak_search" when the search
  // ended by its own rule
  std::string reason;
  std::int64_t queries = 0;  // issued
  std::optional<std::string> error;
  nlohmann::json info = nlohmann::json::object();  // EXTRAS info.load: the peak search's probes
};

// A fault of the QUERIES stream (inject: drop_query, duplicate_query): the record of query
// `query_id` is left out of its frame, or sent twice.
enum class QueryStreamFault { kNone, kDrop, kDuplicate };

struct NullLoadOptions {
  VirtualService service;
  double real_speedup = 1000.0;
  QueryStreamFault fault = QueryStreamFault::kNone;
  std::uint64_t fault_query_id = 0;
  std::optional<std::int64_t> serve_after_stop_ns;  // serve_after_stop_us (VirtualLoadServer)
};

// Runs the cell's scenario until `poll_stop` says STOP, or a ceiling: `max_queries` queries, or
// `max_time_ns` of virtual time. With target_qps: max it runs the peak search instead
// (load::RunPeakSearch on the virtual clock, within max_time_ns and peak_max_time_s of virtual
// time), its probes in `info`. Writes every record as QUERIES frames of `rank` to `out_fd`
// (from the generator's flush thread; `poll_stop` is called there too, after each write).
NullLoadOutcome RunNullLoad(const load::EffectiveLoadSettings& settings, const NullLoadOptions& options,
                            int out_fd, std::uint32_t rank, std::int64_t start_ns, std::uint64_t max_queries,
                            std::int64_t max_time_ns, const std::function<bool()>& poll_stop);

// A null-runner load cell from CONFIGURE to DONE: resolves the load settings (an invalid one is
// ERROR invalid), sends READY (the effective cell: `params`, `effective_extra`, the normalised
// `load` and the service time, virtual_time true), serves the scenario until STOP or the
// ceilings (limits.max_steps counts queries, limits.max_time_s is virtual time), then EXTRAS and
// DONE with the queries issued. Returns the process's exit code.
int ServeLoadCell(protocol::RunnerSession& session, const protocol::CellConfig& cell,
                  const nlohmann::json& effective_extra, const NullLoadOptions& options);

// The service time and speed of a load cell from its parameters (service_us,
// service_per_sample_us, virtual_speedup, serve_after_stop_us); kInvalidInput naming the key.
Result<NullLoadOptions> LoadOptionsFromParams(const nlohmann::json& params);

// A dlbench-null cell with `load` (load::LoadRequested), served on the virtual clock instead of
// stepping: its options from the parameters (LoadOptionsFromParams), the query stream faults
// drop_query and duplicate_query at query id `inject_at_step`; any other fault, or a bad option,
// is ERROR invalid. Returns the process's exit code.
int ServeLoad(protocol::RunnerSession& session, const protocol::CellConfig& cell, Fault inject,
              std::int64_t inject_at_step);

}  // namespace dlbench::nullrunner
