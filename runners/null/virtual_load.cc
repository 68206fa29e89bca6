#include "runners/null/virtual_load.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/clock.h"
#include "common/error.h"
#include "load/batcher.h"
#include "load/load_generator.h"
#include "load/peak_search.h"
#include "load/protocol_sink.h"

namespace dlbench::nullrunner {
namespace {

using load::Scenario;

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

void SleepRealNs(std::int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

load::QueryTiming ServiceTiming(std::int64_t service_ns, std::uint32_t batch_samples) {
  load::QueryTiming t;
  t.compute_ns = service_ns;
  t.present = record::kQueryHasCompute;
  t.batch_samples = batch_samples;
  return t;
}

// The faults of the QUERIES stream, between the generator and the protocol sink.
class FaultySink final : public load::QueryRecordSink {
 public:
  FaultySink(load::QueryRecordSink& next, QueryStreamFault fault, std::uint64_t id)
      : next_(next), fault_(fault), id_(id) {}
  void Write(const record::QueryRecord* records, std::size_t count) override {
    if (fault_ == QueryStreamFault::kNone || count == 0 || id_ < records[0].query_id ||
        id_ > records[count - 1].query_id) {
      next_.Write(records, count);
      return;
    }
    scratch_.assign(records, records + count);
    const auto at = static_cast<std::ptrdiff_t>(id_ - records[0].query_id);
    if (fault_ == QueryStreamFault::kDrop) {
      scratch_.erase(scratch_.begin() + at);
    } else {
      scratch_.insert(scratch_.begin() + at, scratch_[static_cast<std::size_t>(at)]);
    }
    next_.Write(scratch_.data(), scratch_.size());
  }
  bool StopRequested() override { return next_.StopRequested(); }

 private:
  load::QueryRecordSink& next_;
  QueryStreamFault fault_;
  std::uint64_t id_;
  std::vector<record::QueryRecord> scratch_;
};

}  // namespace

VirtualLoadServer::VirtualLoadServer(const load::EffectiveLoadSettings& settings,
                                     const VirtualService& service, std::int64_t start_ns,
                                     double real_speedup, std::optional<std::int64_t> serve_after_stop_ns)
    : settings_(settings),
      service_(service),
      now_ns_(start_ns),
      virtual_begin_ns_(start_ns),
      real_begin_ns_(MonotonicNowNs()),
      real_speedup_(real_speedup),
      serve_after_stop_ns_(serve_after_stop_ns),
      servers_(settings.scenario == Scenario::kServer ? settings.streams : 1) {}

void VirtualLoadServer::SetNow(std::int64_t t_ns) {
  if (t_ns > now_ns_.load()) now_ns_.store(t_ns);
}

void VirtualLoadServer::Throttle() {
  const auto due_real =
      real_begin_ns_ +
      static_cast<std::int64_t>(static_cast<double>(now_ns_.load() - virtual_begin_ns_) / real_speedup_);
  const std::int64_t ahead = due_real - MonotonicNowNs();
  if (ahead > 200'000) SleepRealNs(ahead);
}

void VirtualLoadServer::Dispatch(bool flush) {
  load::BatcherSettings rule;
  rule.max_batch = settings_.max_batch;
  rule.batch_timeout_ns = settings_.batch_timeout_ns;
  rule.streams = settings_.streams;
  for (Server& server : servers_) {
    if (queue_.empty()) return;
    if (!server.ids.empty()) continue;
    // Server queries have one sample each, so the fitting prefix is min(queued, max_batch).
    const std::size_t fit = std::min<std::size_t>(queue_.size(), settings_.max_batch);
    const load::BatchDecision d = load::DecideBatch(queue_.size(), fit, static_cast<std::uint32_t>(fit),
                                                    queue_.front().queued_ns, NowNs(), rule, flush);
    if (!d.dispatch) return;
    for (std::size_t i = 0; i < d.queries; ++i) {
      server.ids.push_back(queue_.front().id);
      queue_.pop_front();
    }
    server.busy_until_ns = NowNs() + service_.Of(d.samples);
  }
}

void VirtualLoadServer::Advance(std::int64_t t_ns, bool flush) {
  for (;;) {
    std::int64_t next = kNever;
    Server* finishing = nullptr;
    bool any_free = false;
    for (Server& server : servers_) {
      if (server.ids.empty()) {
        any_free = true;
      } else if (server.busy_until_ns < next) {
        next = server.busy_until_ns;
        finishing = &server;
      }
    }
    std::int64_t timeout = kNever;
    if (any_free && !queue_.empty() && settings_.batch_timeout_ns > 0) {
      timeout = queue_.front().queued_ns + settings_.batch_timeout_ns;
    }
    if (std::min(next, timeout) > t_ns) break;
    if (next == kNever && (timeout == kNever || queue_.empty())) break;
    if (timeout < next) {
      SetNow(timeout);
      Dispatch(flush);
      continue;
    }
    SetNow(next);
    const std::vector<std::uint64_t> ids = std::move(finishing->ids);
    finishing->ids.clear();
    const std::int64_t service_ns = service_.Of(static_cast<std::uint32_t>(ids.size()));
    completer_->CompleteBatch(ids.data(), ids.size(),
                              ServiceTiming(service_ns, static_cast<std::uint32_t>(ids.size())));
    Dispatch(flush);
  }
  if (t_ns != kNever) SetNow(t_ns);
}

void VirtualLoadServer::SleepUntilNs(std::int64_t t_ns) {
  Advance(t_ns, /*flush=*/false);
  Throttle();
}

void VirtualLoadServer::IssueQuery(const load::Query& query, load::QueryCompleter& completer) {
  completer_ = &completer;
  if (settings_.scenario == Scenario::kServer) {
    queue_.push_back({query.id, NowNs()});
    Dispatch(/*flush=*/false);
    return;
  }
  // The closed-loop scenarios are served on the issue thread, as the torch runner serves them.
  if (settings_.scenario == Scenario::kOffline) {
    std::uint32_t left = query.samples;
    while (left > 0) {
      const std::uint32_t n = std::min(left, settings_.max_batch);
      SetNow(NowNs() + service_.Of(n));
      completer.CompleteSamples(query.id, n, ServiceTiming(service_.Of(n), n));
      left -= n;
    }
  } else {
    SetNow(NowNs() + service_.Of(query.samples));
    completer.Complete(query.id, ServiceTiming(service_.Of(query.samples), query.samples));
  }
  Throttle();
}

void VirtualLoadServer::FlushQueries() {
  if (settings_.scenario != Scenario::kServer) return;
  Dispatch(/*flush=*/true);
  // After STOP with serve_after_stop_us, only that much more virtual time is served.
  const bool stopping = serve_after_stop_ns_ && completer_ != nullptr && completer_->StopRequested();
  Advance(stopping ? NowNs() + *serve_after_stop_ns_ : kNever, /*flush=*/true);
}

std::uint64_t VirtualLoadServer::DropQueued() {
  const std::uint64_t dropped = queue_.size();
  queue_.clear();
  Advance(kNever, /*flush=*/true);  // the batches in service finish
  return dropped;
}

NullLoadOutcome RunNullLoad(const load::EffectiveLoadSettings& settings, const NullLoadOptions& options,
                            int out_fd, std::uint32_t rank, std::int64_t start_ns, std::uint64_t max_queries,
                            std::int64_t max_time_ns, const std::function<bool()>& poll_stop) {
  VirtualLoadServer server(settings, options.service, start_ns, options.real_speedup,
                           options.serve_after_stop_ns);
  load::ProtocolQuerySink protocol_sink(out_fd, rank, poll_stop);
  FaultySink sink(protocol_sink, options.fault, options.fault_query_id);
  load::LoadGenerator generator(settings, server);
  NullLoadOutcome outcome;
  if (settings.peak_search) {
    std::int64_t budget_ns = max_time_ns;
    if (settings.peak_max_time_ns) budget_ns = std::min(budget_ns, *settings.peak_max_time_ns);
    const load::PeakSearchOutcome search =
        load::RunPeakSearch(settings, generator, server, server, sink, server, start_ns + budget_ns);
    outcome.queries = static_cast<std::int64_t>(search.issued);
    if (search.error.empty())
      outcome.reason = search.reason;
    else
      outcome.error = search.error;
    outcome.info = {{"peak_search", search.ToJson()}};
  } else {
    load::RunLimits limits;
    limits.max_queries = std::max<std::uint64_t>(max_queries, 1);
    limits.max_duration_ns = max_time_ns;
    const load::RunResult result = generator.Run(server, server, sink, limits);
    outcome.queries = static_cast<std::int64_t>(result.issued);
    if (std::optional<std::string> reason = load::DoneReason(result.end)) {
      outcome.reason = *reason;
    } else {
      outcome.error = result.error;
    }
  }
  if (protocol_sink.write_failed() && !outcome.error) outcome.reason = "stopped";
  return outcome;
}

Result<NullLoadOptions> LoadOptionsFromParams(const nlohmann::json& params) {
  NullLoadOptions o;
  auto micros = [&](const char* key, double fallback) -> Result<double> {
    const auto it = params.find(key);
    if (it == params.end() || it->is_null()) return fallback;
    // The registry's bounds, checked again: a runner must not trust its input.
    if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > 3.6e9) {
      return MakeError(ErrorKind::kInvalidInput, std::string("parameter '") + key +
                                                     "' must be a number of microseconds in [0, 3600000000]");
    }
    return it->get<double>();
  };
  auto per_batch = micros("service_us", 1000.0);
  if (!per_batch.ok()) return per_batch.error();
  auto per_sample = micros("service_per_sample_us", 0.0);
  if (!per_sample.ok()) return per_sample.error();
  // A batch takes at least 1 ns: a system that takes no time has no latency to measure.
  o.service.per_batch_ns = std::max<std::int64_t>(1, std::llround(*per_batch * 1e3));
  o.service.per_sample_ns = static_cast<std::int64_t>(std::llround(*per_sample * 1e3));
  if (const auto it = params.find("serve_after_stop_us"); it != params.end() && !it->is_null()) {
    auto after_stop = micros("serve_after_stop_us", 0.0);
    if (!after_stop.ok()) return after_stop.error();
    o.serve_after_stop_ns = static_cast<std::int64_t>(std::llround(*after_stop * 1e3));
  }
  const auto speedup = params.find("virtual_speedup");
  if (speedup != params.end() && speedup->is_number()) o.real_speedup = speedup->get<double>();
  if (!(o.real_speedup > 0) || !std::isfinite(o.real_speedup)) {
    return MakeError(ErrorKind::kInvalidInput, "virtual_speedup must be a finite number > 0");
  }
  return o;
}

int ServeLoadCell(protocol::RunnerSession& session, const protocol::CellConfig& cell,
                  const nlohmann::json& effective_extra, const NullLoadOptions& options) {
  auto settings = load::ResolveLoadSettings(cell.params, cell.seed);
  if (!settings.ok()) {
    (void)session.SendError(record::RunnerErrorKind::kInvalid, settings.error().message);
    return 0;
  }
  const char* out_fd_text = std::getenv(protocol::kFdOutEnv);
  if (out_fd_text == nullptr) {
    (void)session.SendError(record::RunnerErrorKind::kInternal,
                            std::string(protocol::kFdOutEnv) + " is not set");
    return 0;
  }
  nlohmann::json effective = cell.params;
  for (const auto& [k, v] : effective_extra.items()) effective[k] = v;
  nlohmann::json load_json = settings->ToJson();
  load_json["service_us"] = static_cast<double>(options.service.per_batch_ns) / 1e3;
  load_json["service_per_sample_us"] = static_cast<double>(options.service.per_sample_ns) / 1e3;
  if (options.serve_after_stop_ns) {
    load_json["serve_after_stop_us"] = static_cast<double>(*options.serve_after_stop_ns) / 1e3;
  }
  load_json["system_under_test"] =
      "simulated: a batch of n samples takes service_us + n x service_per_sample_us on the virtual clock";
  effective["load"] = load_json;
  effective["virtual_time"] = true;
  if (!session.SendReady(effective).ok()) return 1;

  const std::int64_t start_ns = MonotonicNowNs();
  const auto max_time_ns = static_cast<std::int64_t>(std::min(cell.limits.max_time_s * 1e9, 9e18));
  const NullLoadOutcome outcome = RunNullLoad(
      *settings, options, std::atoi(out_fd_text), static_cast<std::uint32_t>(cell.rank), start_ns,
      static_cast<std::uint64_t>(std::max<std::int64_t>(cell.limits.max_steps, 1)), max_time_ns, [&session] {
        session.FlushSteps(MonotonicNowNs());  // polls for STOP without sending anything
        return session.stop_requested();
      });
  if (outcome.error) {
    (void)session.SendError(record::RunnerErrorKind::kInternal, *outcome.error);
    return 0;
  }
  nlohmann::json info = {{"queries_issued", outcome.queries}};
  if (!outcome.info.empty()) info["load"] = outcome.info;
  (void)session.SendExtras({{"info", info}});
  return session.SendDone(outcome.reason, outcome.queries).ok() ? 0 : 1;
}

int ServeLoad(protocol::RunnerSession& session, const protocol::CellConfig& cell, Fault inject,
              std::int64_t inject_at_step) {
  auto options = LoadOptionsFromParams(cell.params);
  if (!options.ok()) {
    (void)session.SendError(record::RunnerErrorKind::kInvalid, options.error().message);
    return 0;
  }
  if (inject == Fault::kDropQuery || inject == Fault::kDuplicateQuery) {
    options->fault = inject == Fault::kDropQuery ? QueryStreamFault::kDrop : QueryStreamFault::kDuplicate;
    options->fault_query_id = static_cast<std::uint64_t>(inject_at_step);
  } else if (inject != Fault::kNone) {
    (void)session.SendError(record::RunnerErrorKind::kInvalid, "inject: " + std::string(FaultName(inject)) +
                                                                   " is not implemented for a load cell");
    return 0;
  }
  return ServeLoadCell(session, cell, {{"seed", cell.seed}}, *options);
}

}  // namespace dlbench::nullrunner
