// dlbench-null: a runner that does no model work. It busy-waits a configured time per step so the
// harness can be measured (its own overhead) and every failure path can be provoked on purpose
// (inject: crash, hang, exit, garbage, leak, oom). It speaks the protocol exactly like the torch
// runner, through protocol::RunnerSession.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/version.h"
#include "protocol/runner_session.h"

namespace dlbench::nullrunner {
namespace {

using protocol::RunnerSession;
using record::RunnerErrorKind;

enum class Inject { kNone, kCrash, kHang, kExit, kGarbage, kLeak, kOom };

struct Params {
  double step_ms = 1.0;
  double jitter_pct = 0.0;
  std::string jitter_dist = "normal";
  Inject inject = Inject::kNone;
  std::int64_t inject_at_step = 20;
  std::int64_t leak_bytes_per_step = 65536;
  int exit_code = 3;
  std::int64_t samples_per_step = 1;
  double setup_ms = 0.0;
  std::int64_t warmup_steps = 0;
  double warmup_factor = 3.0;
};

// Reads the parameters this runner knows; the orchestrator validated them against the registry,
// but a runner must not trust its input either.
bool ParseParams(const nlohmann::json& p, Params& out, std::string& error) {
  try {
    out.step_ms = p.value("step_ms", out.step_ms);
    out.jitter_pct = p.value("jitter_pct", out.jitter_pct);
    out.jitter_dist = p.value("jitter_dist", out.jitter_dist);
    const std::string inject = p.value("inject", std::string("none"));
    static const std::pair<const char*, Inject> kInjects[] = {
        {"none", Inject::kNone}, {"crash", Inject::kCrash},     {"hang", Inject::kHang},
        {"exit", Inject::kExit}, {"garbage", Inject::kGarbage}, {"leak", Inject::kLeak},
        {"oom", Inject::kOom}};
    bool known = false;
    for (const auto& [name, value] : kInjects) {
      if (inject == name) {
        out.inject = value;
        known = true;
      }
    }
    if (!known) {
      error = "unknown inject '" + inject + "' (none, crash, hang, exit, garbage, leak, oom)";
      return false;
    }
    out.inject_at_step = p.value("inject_at_step", out.inject_at_step);
    out.leak_bytes_per_step = p.value("leak_bytes_per_step", out.leak_bytes_per_step);
    out.exit_code = p.value("exit_code", out.exit_code);
    out.samples_per_step = p.value("samples_per_step", p.value("batch_size", std::int64_t{1}));
    out.setup_ms = p.value("setup_ms", out.setup_ms);
    out.warmup_steps = p.value("warmup_steps", out.warmup_steps);  // names: a parameter, not the metric
    out.warmup_factor = p.value("warmup_factor", out.warmup_factor);
  } catch (const nlohmann::json::exception& e) {
    error = std::string("bad parameter type: ") + e.what();
    return false;
  }
  if (out.step_ms < 0 || out.jitter_pct < 0 || out.samples_per_step < 1 || out.setup_ms < 0 ||
      out.warmup_factor < 1) {
    error = "step_ms, jitter_pct, setup_ms must be >= 0, samples_per_step >= 1, warmup_factor >= 1";
    return false;
  }
  if (out.jitter_dist != "normal" && out.jitter_dist != "uniform" && out.jitter_dist != "lognormal") {
    error = "unknown jitter_dist '" + out.jitter_dist + "' (normal, uniform, lognormal)";
    return false;
  }
  return true;
}

// Step durations drawn ahead of the loop, so the timed region does nothing but wait. A multiplier
// m has mean 1 and standard deviation jitter_pct/100 whatever the distribution.
std::vector<std::int64_t> DrawDurations(const Params& p, std::uint64_t seed, std::size_t count) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-std::sqrt(3.0), std::sqrt(3.0));
  const double sd = p.jitter_pct / 100.0;
  const double sigma = std::sqrt(std::log1p(sd * sd));  // lognormal with mean 1, sd `sd`
  std::vector<std::int64_t> out(count);
  for (auto& d : out) {
    double m = 1.0;
    if (sd > 0) {
      if (p.jitter_dist == "normal")
        m = 1.0 + sd * normal(rng);
      else if (p.jitter_dist == "uniform")
        m = 1.0 + sd * uniform(rng);
      else
        m = std::exp(sigma * normal(rng) - sigma * sigma / 2);
    }
    d = static_cast<std::int64_t>(std::max(0.0, p.step_ms * 1e6 * m));
  }
  return out;
}

inline void BusyWaitNs(std::int64_t ns) {
  if (ns <= 0) return;
  const std::int64_t until = MonotonicNowNs() + ns;
  while (MonotonicNowNs() < until) {
  }
}

int Main() {
  auto connected = RunnerSession::Connect();
  if (!connected.ok()) {
    std::fprintf(stderr, "dlbench-null: %s\n", connected.error().message.c_str());
    return 2;
  }
  RunnerSession& session = **connected;
  (void)session.SendHello({{"runner", "null"},
                           {"runner_version", kVersion},
                           {"framework", {{"name", "none"}}},
                           {"devices", nlohmann::json::array({{{"type", "cpu"}}})}});
  auto cell = session.ReceiveConfigure();
  if (!cell.ok()) {
    // EOF before CONFIGURE is how the orchestrator probes a runner's HELLO: not an error.
    if (cell.error().kind == ErrorKind::kIo) return 0;
    std::fprintf(stderr, "dlbench-null: %s\n", cell.error().message.c_str());
    return 2;
  }
  session.set_rank(static_cast<std::uint32_t>(cell->rank));
  Params p;
  std::string error;
  if (!ParseParams(cell->params, p, error)) {
    (void)session.SendError(RunnerErrorKind::kInvalid, error);
    return 0;
  }
  BusyWaitNs(static_cast<std::int64_t>(p.setup_ms * 1e6));
  constexpr std::size_t kDurations = 4096;
  const std::vector<std::int64_t> durations = DrawDurations(p, cell->seed, kDurations);
  std::vector<std::vector<char>> leaked;
  if (p.inject == Inject::kLeak) leaked.reserve(1 << 16);

  nlohmann::json effective = cell->params;
  effective["samples_per_step"] = p.samples_per_step;
  effective["seed"] = cell->seed;
  (void)session.SendReady(effective);

  const auto samples = static_cast<std::uint32_t>(p.samples_per_step);
  std::int64_t step = 0;
  bool failed = false;
  auto result = protocol::RunStepLoop(session, cell->limits, [&](protocol::StepRecord& r) {
    std::int64_t d = durations[static_cast<std::size_t>(step) % kDurations];
    if (step < p.warmup_steps) d = static_cast<std::int64_t>(static_cast<double>(d) * p.warmup_factor);
    BusyWaitNs(d);
    if (p.inject == Inject::kLeak) {
      // Touch every page so the growth shows in RSS, as a real leak would.
      leaked.emplace_back(static_cast<std::size_t>(p.leak_bytes_per_step), '\1');
    }
    r.samples = samples;
    ++step;
    if (p.inject != Inject::kNone && p.inject != Inject::kLeak && step == p.inject_at_step) {
      failed = true;
      return false;
    }
    return true;
  });

  if (failed) {
    switch (p.inject) {
      case Inject::kCrash:
        std::fprintf(stderr, "dlbench-null: crashing on purpose at step %lld\n",
                     static_cast<long long>(step));
        std::fflush(stderr);
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        break;
      case Inject::kHang:
        std::fprintf(stderr, "dlbench-null: hanging on purpose at step %lld\n", static_cast<long long>(step));
        std::fflush(stderr);
        signal(SIGTERM, SIG_IGN);  // a real hang often ignores polite requests too
        for (;;) pause();
      case Inject::kExit:
        std::fprintf(stderr, "dlbench-null: exiting with code %d on purpose at step %lld\n", p.exit_code,
                     static_cast<long long>(step));
        std::fflush(stderr);
        _exit(p.exit_code);
      case Inject::kGarbage: {
        const char junk[] = "\xff\xff\xff\x7f garbage on the protocol pipe";
        const char* fd_text = std::getenv(protocol::kFdOutEnv);
        (void)protocol::WriteAll(std::atoi(fd_text), junk, sizeof junk);
        // Keep running so the orchestrator, not our exit, has to notice.
        for (int i = 0; i < 1000; ++i) usleep(10'000);
        return 0;
      }
      case Inject::kOom: {
        const std::int64_t requested = std::int64_t{80} << 30;
        (void)session.SendError(RunnerErrorKind::kOom,
                                "out of memory (injected): tried to allocate 80.00 GiB",
                                {{"requested_bytes", requested}});
        return 0;
      }
      default:
        break;
    }
  }
  (void)session.SendExtras({{"info", {{"steps_run", result.steps}, {"leaked_blocks", leaked.size()}}}});
  (void)session.SendDone(protocol::LoopEndName(result.end), result.steps);
  return 0;
}

}  // namespace
}  // namespace dlbench::nullrunner

int main() { return dlbench::nullrunner::Main(); }
