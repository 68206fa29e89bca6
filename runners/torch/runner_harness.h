// A test harness that plays the orchestrator's part of the protocol against a real runner
// binary: it spawns the runner with the protocol pipes on fds 3/4 (the convention `dlbench run`
// uses: the runner reads fd 4 and writes fd 3), answers HELLO with CONFIGURE, sends STOP after a
// number of steps, and collects every message until the runner exits.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/subprocess.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"

namespace dlbench::torchrunner::testing {

struct HarnessOptions {
  std::int64_t stop_after_steps = 5;      // STOP once this many step records arrived
  std::int64_t stop_after_queries = 100;  // or this many query records (load cells)
  double timeout_s = 300.0;               // the whole cell; then the runner is killed and an error returned
  std::vector<std::pair<std::string, std::string>> extra_env;
};

// Everything one cell sent, in arrival order per kind.
struct CellTranscript {
  std::optional<nlohmann::json> hello;
  std::optional<nlohmann::json> ready;  // READY's "effective" object
  std::optional<nlohmann::json> error;
  std::optional<nlohmann::json> done;
  std::vector<nlohmann::json> memory;
  std::vector<nlohmann::json> extras;
  std::vector<protocol::StepRecord> steps;
  std::vector<protocol::QueryRecord> queries;  // QUERIES records, in arrival order
  ExitStatus exit;
};

// Runs one cell of `runner_binary` with `config`. Errors are the harness's own failures (spawn,
// protocol violation, timeout); a runner that reports ERROR is a successful transcript.
Result<CellTranscript> RunCell(const std::string& runner_binary, const protocol::CellConfig& config,
                               const HarnessOptions& options = {});

// Only the HELLO: CONFIGURE is never sent; the pipe is closed after HELLO and the runner exits.
Result<nlohmann::json> ReadHello(const std::string& runner_binary);

}  // namespace dlbench::torchrunner::testing
