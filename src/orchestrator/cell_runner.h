// Runs one cell in its own runner process and turns whatever happens into a CellRecord
// (DESIGN.md "Why a process per cell"; outcomes are data, STYLE.md rule 8).
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "monitor/sampler.h"
#include "plan/plan.h"
#include "store/result_store.h"

namespace dlbench::orchestrator {

struct RunnerCommand {
  std::vector<std::string> argv;
  std::string name;  // "null", "torch", or the program's basename
};

// dlbench-null / dlbench-torch beside the dlbench binary, or the matrix's command.
Result<RunnerCommand> ResolveRunner(const config::RunnerSpec& spec, const std::string& bin_dir);

struct CellRunOptions {
  RunnerCommand runner;
  std::string log_dir;  // per-cell stdout/stderr files go here
  double timeout_s = 600;
  config::MeasureSettings measure;
  monitor::Monitor* monitor = nullptr;             // optional
  const std::atomic<bool>* interrupted = nullptr;  // set by the SIGINT handler
  // Called with a one-line status while the cell runs (about once a second); may be empty.
  std::function<void(const std::string&)> on_progress;
};

// Runs `cell` to an outcome. Never throws; every failure becomes the record's outcome.
record::CellRecord RunCell(const plan::Cell& cell, const CellRunOptions& options);

// Starts the runner, reads its HELLO, and lets it go (it exits on EOF before CONFIGURE). Used
// once per run so the environment fingerprint holds the framework's versions.
Result<nlohmann::json> ProbeRunner(const RunnerCommand& runner, double timeout_s);

}  // namespace dlbench::orchestrator
