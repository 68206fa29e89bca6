// The registry's table, part 1 (registry_entries.h): the top-level keys (name, runner, matrix,
// exclude, include, repetitions, seed, timeout_s, ordering, order_seed, measure) and the measure:
// keys (min_steps to sample_interval_ms, one per MeasureSettings field).
#include <cstdint>
#include <vector>

#include "config/matrix.h"
#include "config/registry.h"
#include "config/registry_entries.h"

namespace dlbench::config::internal {
namespace {

const char* OrderingName(Ordering ordering) {
  return ordering == Ordering::kInterleaved ? "interleaved" : "grouped";
}

}  // namespace

void AppendRunEntries(std::vector<ParamSpec>& r) {
  // Defaults of top-level and measure keys are read from the structs' initialisers so that the
  // struct in matrix.h and this table cannot disagree.
  const Matrix matrix_defaults;
  const MeasureSettings measure_defaults;

  // Top-level keys.
  r.push_back(Entry("name", kTop, kCore, ParamType::kString)
                  .Help("A name for the matrix, stored with the run and shown in reports.")
                  .Build());
  r.push_back(Entry("runner", kTop, kCore, ParamType::kRunner)
                  .Default(Value(matrix_defaults.runner.name))
                  .Help("The program that runs each cell: `null` (the built-in runner that does no "
                        "work), `torch` (the LibTorch runner) or `{command: [argv...]}` for any "
                        "program that speaks the runner protocol.")
                  .Build());
  r.push_back(Entry("matrix", kTop, kCore, ParamType::kMapping)
                  .DefaultText("required")
                  .Help("The axes: cell parameter -> a value or a list of values. Required, with "
                        "at least one parameter.")
                  .Build());
  r.push_back(Entry("exclude", kTop, kCore, ParamType::kMappingList)
                  .Help("Entries of axis values; a combination matching every key of an entry is "
                        "dropped.")
                  .Build());
  r.push_back(Entry("include", kTop, kCore, ParamType::kMappingList)
                  .Help("Entries that extend combinations or add new ones (GitHub Actions "
                        "semantics, below).")
                  .Build());
  r.push_back(Entry("repetitions", kTop, kCore, ParamType::kInt)
                  .Default(Int(matrix_defaults.repetitions))
                  .Min(1)
                  .Max(100000)
                  .Help("How many times each cell runs, each time in a fresh process. At most 100000, the "
                        "cell limit of a run (docs/limits.md).")
                  .Build());
  r.push_back(Entry("seed", kTop, kCore, ParamType::kInt)
                  .Default(Int(static_cast<std::int64_t>(matrix_defaults.seed)))
                  .Min(0)
                  .Help("Base seed; each cell and repetition derives its own (see Seeds).")
                  .Build());
  r.push_back(
      Entry("timeout_s", kTop, kCore, ParamType::kNumber)
          .Unit("s")
          .Default(Num(matrix_defaults.timeout_s))
          .Min(0, false)
          .Max(604800)
          .Help("Per cell, from spawn to exit; a cell that exceeds it ends as timeout. At most 604800 (a "
                "week): longer is a hung cell, and deadlines stay within 64-bit nanoseconds.")
          .Build());
  r.push_back(Entry("ordering", kTop, kCore, ParamType::kEnum)
                  .Allowed({"grouped", "interleaved"})
                  .Default(Str(OrderingName(matrix_defaults.ordering)))
                  .Help("Run order: `grouped` keeps plan order with a cell's repetitions adjacent; "
                        "`interleaved` shuffles the cells anew for each round of repetitions.")
                  .Build());
  r.push_back(Entry("order_seed", kTop, kCore, ParamType::kInt)
                  .Default(Int(static_cast<std::int64_t>(matrix_defaults.order_seed)))
                  .Min(0)
                  .Help("Seed of the interleaved shuffle; the same seed gives the same order on "
                        "every platform.")
                  .Build());
  r.push_back(Entry("measure", kTop, kCore, ParamType::kMapping)
                  .DefaultText("all defaults")
                  .Help("The measurement policy's settings (keys below).")
                  .Build());

  // measure: keys, one per MeasureSettings field.
  r.push_back(Entry("min_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.min_steps))
                  .Min(1)
                  .Max(10000000)
                  .Help("Never stop with fewer measured (post-warm-up) steps. At most 10000000: the driver "
                        "keeps every step of a cell (48 bytes each) in memory and in the store.")
                  .Build());
  r.push_back(Entry("max_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.max_steps))
                  .Min(1)
                  .Max(10000000)
                  .Help("Stop here whatever the confidence interval says; >= min_steps. At most 10000000: "
                        "the driver keeps every step of a cell (48 bytes each) in memory and in the store.")
                  .Build());
  r.push_back(Entry("min_time_s", kMeas, kCore, ParamType::kNumber)
                  .Unit("s")
                  .Default(Num(measure_defaults.min_time_s))
                  .Min(0)
                  .Max(604800)
                  .Help("Never stop with less measured time. At most 604800 (a week), like timeout_s.")
                  .Build());
  r.push_back(Entry("max_time_s", kMeas, kCore, ParamType::kNumber)
                  .Unit("s")
                  .Default(Num(measure_defaults.max_time_s))
                  .Min(0, false)
                  .Max(604800)
                  .Help("Stop here whatever the confidence interval says; >= min_time_s. At most 604800 (a "
                        "week), like timeout_s.")
                  .Build());
  r.push_back(Entry("target_rel_ci", kMeas, kCore, ParamType::kNumber)
                  .Default(Num(measure_defaults.target_rel_ci))
                  .Min(0, false)
                  .Max(1, false)
                  .Help("Stop when the confidence interval's half-width divided by the mean step "
                        "time is below this.")
                  .Build());
  r.push_back(Entry("ci_level", kMeas, kCore, ParamType::kNumber)
                  .Default(Num(measure_defaults.ci_level))
                  .Min(0.5, false)
                  .Max(1, false)
                  .Help("Confidence level of that interval.")
                  .Build());
  r.push_back(Entry("min_warmup_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.min_warmup_steps))
                  .Min(0)
                  .Max(10000000)
                  .Help("The warm-up cut is never earlier than this step. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(
      Entry("idle_baseline_s", kMeas, kCore, ParamType::kNumber)
          .Unit("s")
          .Min(0)
          .Max(3600)
          .Help("Seconds of device and host sampling before the cell starts, as a "
                "baseline; absent: none. At most 3600 (an hour), so that a wrong unit is caught here.")
          .Build());
  r.push_back(Entry("sample_interval_ms", kMeas, kCore, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(measure_defaults.sample_interval_ms))
                  .Min(1)
                  .Max(60000)
                  .Help("Interval of the device and host monitor's samples. At least 1: faster sampling "
                        "would only spin the monitor thread and fill memory. At most 60000 (a minute).")
                  .Build());
  r.push_back(Entry("retry_disturbed", kMeas, kCore, ParamType::kInt)
                  .Unit("attempts")
                  .Default(Int(measure_defaults.retry_disturbed))
                  .Min(0)
                  .Max(10)
                  .Help("Measure again: a cell that ended ok with a verdict saying the machine disturbed "
                        "it (contended, shifted or drifting) runs again, up to this many more times, and "
                        "the first attempt not disturbed is stored (else the last), with every attempt's "
                        "verdict in extras.attempts. Not for boundary searches, load, converge or ddp "
                        "cells (plan names them). At most 10.")
                  .Build());
}

}  // namespace dlbench::config::internal
