// The typed test matrix: what `dlbench run MATRIX.yaml` reads. Parsing validates everything
// against the parameter registry (config/registry.h) so nothing runs on bad input.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace dlbench::config {

// A parameter value as written in YAML: a string, integer, number or bool, held as JSON.
using Value = nlohmann::json;

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based
  int column = 0;  // 1-based
};

// Which program runs the cells: a built-in runner ("null", "torch") found beside the dlbench
// binary, or an argv for any program that speaks the protocol (name "command").
struct RunnerSpec {
  std::string name = "null";
  std::vector<std::string> command;  // only for name == "command"
};

// The measurement policy's knobs (the `measure:` block). Units are in the names.
// The fewest measured steps that give a cell a confidence interval (batch means: docs/measurement.md);
// fewer end `too_short`. plan warns of cells whose max_time_s cannot hold them.
inline constexpr int kMinStepsForInterval = 20;
// The margin over kMinStepsForInterval (or min_steps) that advice and plan ask for, so that the
// warm-up cut still leaves enough.
inline constexpr double kWarmupCutMargin = 1.25;

struct MeasureSettings {
  std::int64_t min_steps = 10;            // never stop with fewer measured (post-warm-up) steps
  std::int64_t max_steps = 100'000;       // stop here whatever the CI says
  double min_time_s = 1.0;                // never stop with less measured time
  double max_time_s = 60.0;               // stop here whatever the CI says
  double target_rel_ci = 0.02;            // stop when the CI half-width / mean is below this
  double ci_level = 0.95;                 // confidence level of the CI
  std::int64_t min_warmup_steps = 2;      // the warm-up cut is never earlier than this
  std::optional<double> idle_baseline_s;  // seconds of idle sampling before the cell (monitor)
  double sample_interval_ms = 100.0;      // monitor sampling interval
  // A cell whose verdict says the machine disturbed it (contended, shifted, drifting) runs again,
  // up to this many more times (docs/measurement.md "Measuring again"); 0: never.
  int retry_disturbed = 0;
  // Not a `measure:` key: set per cell by measure::SettingsForCell. The measured window is every
  // step (no warm-up cut) and the policy never stops the cell; the runner's own rule ends it
  // (scenario: converge trains to its target, docs/convergence.md).
  bool whole_run = false;
};

enum class Ordering { kGrouped, kInterleaved };

struct Axis {
  std::string name;
  std::vector<Value> values;
  SourceLocation where;
};

// One include/exclude entry: parameter name -> value.
using Combination = std::map<std::string, Value>;

struct Matrix {
  std::string path;  // as given by the user
  std::string text;  // the file's bytes, stored with the run
  std::string name;  // optional `name:`
  RunnerSpec runner;
  std::vector<Axis> axes;            // in file order
  std::vector<Combination> exclude;  // a cell matching every key of an entry is dropped
  std::vector<Combination> include;  // GitHub Actions semantics (docs/config-reference.md)
  int repetitions = 1;
  std::uint64_t seed = 0;    // base seed; each cell derives its own
  double timeout_s = 600.0;  // per cell, from spawn to exit
  Ordering ordering = Ordering::kGrouped;
  std::uint64_t order_seed = 0;  // shuffles cells when ordering is interleaved
  MeasureSettings measure;
};

// The largest matrix file LoadMatrix reads (docs/limits.md): far above any real matrix, and a
// bound on what a mistaken path (a log file, /dev/zero) can make the driver hold.
inline constexpr std::size_t kMaxMatrixFileBytes = 4u << 20;

// Reads and validates a matrix file. Errors name file:line:col, the key, and what was expected.
// The file must be a regular file of at most kMaxMatrixFileBytes (kInvalidInput otherwise,
// without reading it: a FIFO or a device is never read), holding one YAML document.
Result<Matrix> LoadMatrix(const std::string& path);

// One `--set measure.KEY=VALUE` from the command line, checked as the YAML's measure section is
// (the registry's type and bounds; min_steps <= max_steps, min_time_s <= max_time_s after it);
// kInvalidInput "--set ASSIGNMENT: why" otherwise, `matrix` unchanged.
Status ApplySetting(Matrix& matrix, const std::string& assignment);
// The same for text already in memory; `path` is used in messages.
Result<Matrix> ParseMatrix(const std::string& text, const std::string& path);

}  // namespace dlbench::config
