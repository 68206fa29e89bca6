// RunBoundarySearch with a fake cell runner: the search's probes and the measured run of the value
// found, and the measured run's step-down when it ends oom where the probes fit (memory that grows
// over a longer run; docs/memory.md "Boundary search").
#include "orchestrator/boundary_cell.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "measure/policy.h"
#include "record/metrics.h"
#include "record/step.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

plan::Cell SearchCell() {
  plan::Cell cell;
  cell.id = "bs-max#r0";
  cell.params = {{"batch_size", "max"},
                 {"boundary_min", 8},
                 {"boundary_max", 4096},
                 {"boundary_max_probes", 20},
                 {"boundary_probe_steps", 2}};
  return cell;
}

// A runner whose probes fit up to `probe_limit` and whose measured runs fit up to
// `measured_limit`; it remembers each call's batch size and whether it was a probe.
struct FakeRunner {
  std::int64_t probe_limit;
  std::int64_t measured_limit;
  std::vector<std::pair<std::int64_t, bool>> calls;  // batch size, probe

  record::CellRecord operator()(const plan::Cell& cell, const CellRunOptions& options) {
    const std::int64_t batch = cell.params.at("batch_size").get<std::int64_t>();
    const bool probe = !options.log_suffix.empty();
    calls.emplace_back(batch, probe);
    record::CellRecord rec;
    rec.effective["memory_model_bytes"] = batch * 1000;
    const bool fits = batch <= (probe ? probe_limit : measured_limit);
    rec.outcome = fits ? record::Outcome::kOk : record::Outcome::kOom;
    if (!fits) rec.message = "out of memory at batch " + std::to_string(batch);
    // Each call 2 s of wall time from t = calls x 10 s, 0.25 s of it setup.
    rec.started_wall_ns = static_cast<std::int64_t>(calls.size()) * 10'000'000'000;
    rec.finished_wall_ns = rec.started_wall_ns + 2'000'000'000;
    record::SetMetric(rec, metric::kSetupS, 0.25);
    return rec;
  }
};

RunCellFn Bind(FakeRunner& runner) {
  return [&runner](const plan::Cell& c, const CellRunOptions& o) { return runner(c, o); };
}

std::vector<std::int64_t> MeasuredCalls(const FakeRunner& runner) {
  std::vector<std::int64_t> out;
  for (const auto& [batch, probe] : runner.calls)
    if (!probe) out.push_back(batch);
  return out;
}

TEST(BoundaryCell, AMeasuredRunThatFitsIsTheCellAtTheValueFound) {
  FakeRunner runner{373, 373, {}};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{373}));
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryBatchSize), 373);
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryFirstFailingBatchSize), 374);
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("found"), 373);
  EXPECT_EQ(search.at("probes_found"), 373);
  EXPECT_TRUE(search.at("measured_oom").empty());
  for (const nlohmann::json& p : search.at("probes")) {
    EXPECT_FALSE(p.value("measured", false));
    // Each probe's times (ProbeTimes): the record's wall span and setup; no HELLO time reported.
    EXPECT_DOUBLE_EQ(p.at("times").at("wall_s").get<double>(), 2.0) << p.dump();
    EXPECT_DOUBLE_EQ(p.at("times").at("setup_s").get<double>(), 0.25) << p.dump();
    EXPECT_FALSE(p.at("times").contains("hello_s")) << p.dump();
  }
  EXPECT_FALSE(rec.extras.contains("warnings"));
  EXPECT_EQ(rec.params.at("batch_size"), "max");
}

// 373 fits two steps but not a measured run; 5% lower, 354 (floor of 354.35), does.
TEST(BoundaryCell, AMeasuredRunThatEndsOomStepsDownFivePercentAndSaysWhere) {
  FakeRunner runner{373, 360, {}};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{373, 354}));
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryBatchSize), 354);
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryFirstFailingBatchSize), 373);
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("found"), 354);
  EXPECT_EQ(search.at("first_failing"), 373);
  EXPECT_EQ(search.at("probes_found"), 373);
  EXPECT_EQ(search.at("measured_oom"), nlohmann::json::array({373}));
  const nlohmann::json& last = search.at("probes").back();
  EXPECT_TRUE(last.at("measured").get<bool>());
  EXPECT_EQ(last.at("batch_size"), 373);
  EXPECT_EQ(last.at("outcome"), "oom");
  EXPECT_EQ(last.at("message"), "out of memory at batch 373");
  EXPECT_DOUBLE_EQ(last.at("times").at("wall_s").get<double>(), 2.0) << last.dump();
  ASSERT_TRUE(rec.extras.contains("warnings"));
  EXPECT_EQ(
      rec.extras.at("warnings").at(0),
      "batch_size: max: the probes (2 steps) fit up to batch_size 373, but the measured run ended oom at "
      "373: memory grew over the longer run; measured at 354, so the largest value that fits a "
      "measured run is between 354 and 372");
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryProbes), search.at("probes").size() - 1)
      << "the measured runs are not probes of the search";
}

// A probe's steps run to boundary_probe_steps whatever the measure block's max_time_s says: a
// runner whose steps take 20 s each, under max_time_s 15 and the real stop policy, and whose
// second step runs out of memory above batch 100 (the optimizer's state). Were max_time_s to end
// a probe after its first step, every batch would fit its probes and the measured runs would all
// end oom (session 30's CI); here the probes find 100 and its measured run fits.
TEST(BoundaryCell, MaxTimeDoesNotEndAProbeBeforeItsSteps) {
  std::vector<std::int64_t> probe_steps_run;
  RunCellFn runner = [&probe_steps_run](const plan::Cell& c, const CellRunOptions& o) {
    const std::int64_t batch = c.params.at("batch_size").get<std::int64_t>();
    measure::MeasurePolicy policy(o.measure);
    record::CellRecord rec;
    rec.outcome = record::Outcome::kOk;
    std::int64_t steps = 0;
    for (std::int64_t t = 0; !policy.Evaluate().stop; t += 20'000'000'000) {
      if (++steps == 2 && batch > 100) {
        rec.outcome = record::Outcome::kOom;
        rec.message = "out of memory in step 2";
        break;
      }
      const record::StepRecord step{t, t + 20'000'000'000, 0, 0, 0, 1, 0};
      policy.Add(&step, 1);
    }
    if (!o.log_suffix.empty()) probe_steps_run.push_back(steps);
    return rec;
  };
  CellRunOptions options;
  options.measure.max_time_s = 15;
  options.measure.min_warmup_steps = 1;
  options.measure.max_steps = 4;
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), options, runner);
  EXPECT_EQ(rec.outcome, record::Outcome::kOk) << rec.message;
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryBatchSize), 100);
  EXPECT_TRUE(rec.extras.at("boundary_search").at("measured_oom").empty());
  ASSERT_FALSE(probe_steps_run.empty());
  for (const std::int64_t steps : probe_steps_run) EXPECT_LE(steps, 2);
  EXPECT_NE(std::find(probe_steps_run.begin(), probe_steps_run.end(), 2), probe_steps_run.end());
}

// A probe that ended ok after fewer steps than boundary_probe_steps (here 1 of 2 above batch 64,
// as a runner stopped by its own rule would) does not fit: the search ends on it, `invalid`, and
// claims nothing for that batch.
TEST(BoundaryCell, AProbeThatRanFewerStepsThanItsOwnIsNoFit) {
  FakeRunner fake{4096, 4096, {}};
  RunCellFn runner = [&fake](const plan::Cell& c, const CellRunOptions& o) {
    record::CellRecord rec = fake(c, o);
    const bool short_run = c.params.at("batch_size").get<std::int64_t>() > 64;
    record::SetMetric(rec, metric::kWarmupSteps, 0.0);
    record::SetMetric(rec, metric::kMeasuredSteps, short_run ? 1.0 : 2.0);
    if (short_run) rec.stop_reason = "runner: data exhausted";
    return rec;
  };
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), CellRunOptions{}, runner);
  EXPECT_EQ(rec.outcome, record::Outcome::kInvalid);
  EXPECT_EQ(rec.message,
            "batch_size: max: the probe at batch_size 128 ended invalid: the probe ran 1 of its 2 steps (it "
            "stopped: runner: data exhausted): it answers only for the steps it ran");
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("end"), "probe_failed");
  EXPECT_EQ(search.at("found"), 64);
  EXPECT_TRUE(search.at("probes").back().at("fits").is_null());
  EXPECT_TRUE(MeasuredCalls(fake).empty());
}

// Every measured run ends oom: four runs (the value found and three steps of 5%), then the last
// one's oom is the cell's, naming them all, and no value is claimed to fit.
TEST(BoundaryCell, MeasuredRunsThatAllEndOomAreBoundedAndNoValueIsClaimed) {
  FakeRunner runner{373, 0, {}};
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOom);
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{373, 354, 336, 319}));
  EXPECT_FALSE(record::MetricValue(rec, metric::kBoundaryBatchSize).has_value());
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryFirstFailingBatchSize), 319);
  EXPECT_EQ(
      rec.message,
      "batch_size: max: the probes (2 steps) fit up to batch_size 373, but the measured runs at 373, 354, "
      "336, 319 ended oom: memory grew over the longer run: out of memory at batch 319");
  EXPECT_TRUE(rec.extras.at("boundary_search").at("found").is_null());
}

// A step-down whose measured run ends otherwise (here an error) claims no value either.
TEST(BoundaryCell, AStepDownThatEndsOtherwiseClaimsNoValue) {
  FakeRunner runner{373, 360, {}};
  RunCellFn failing = [&runner](const plan::Cell& c, const CellRunOptions& o) {
    record::CellRecord rec = runner(c, o);
    if (o.log_suffix.empty() && rec.outcome == record::Outcome::kOk) {
      rec.outcome = record::Outcome::kError;
      rec.message = "runner ended with exit code 3";
    }
    return rec;
  };
  const record::CellRecord rec = RunBoundarySearch(SearchCell(), CellRunOptions{}, failing);
  EXPECT_EQ(rec.outcome, record::Outcome::kError);
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{373, 354}));
  EXPECT_FALSE(record::MetricValue(rec, metric::kBoundaryBatchSize).has_value());
  EXPECT_EQ(
      rec.message,
      "batch_size: max: the probes (2 steps) fit up to batch_size 373, but the measured runs at 373 ended "
      "oom: memory grew over the longer run; the one at 354 ended error: runner ended with exit code 3");
  EXPECT_FALSE(rec.extras.contains("warnings"));
}

// The step-down stops at boundary_min: below it nothing was asked for.
TEST(BoundaryCell, TheStepDownStopsAtBoundaryMin) {
  plan::Cell cell = SearchCell();
  cell.params["boundary_min"] = 10;
  FakeRunner runner{10, 0, {}};
  const record::CellRecord rec = RunBoundarySearch(cell, CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOom);
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{10}));
}

// boundary_probe_process: shared. A runner whose probes and measured runs share one process
// (options.pool set) and whose measured run there fits up to `shared_limit` (memory the process
// holds after its earlier cells), while a measured run in a fresh process fits up to `fresh_limit`.
struct SharedProcessRunner {
  std::int64_t probe_limit;
  std::int64_t shared_limit;
  std::int64_t fresh_limit;
  int cells_of_shared = 0;
  std::vector<std::pair<std::int64_t, bool>> measured;  // batch size, in the shared process

  record::CellRecord operator()(const plan::Cell& cell, const CellRunOptions& options) {
    const std::int64_t batch = cell.params.at("batch_size").get<std::int64_t>();
    const bool probe = !options.log_suffix.empty();
    const bool in_shared = options.pool != nullptr;
    if (!probe) measured.emplace_back(batch, in_shared);
    record::CellRecord rec;
    rec.extras["runner_process"] =
        in_shared ? nlohmann::json{{"pid", 100}, {"cell_of_process", ++cells_of_shared}}
                  : nlohmann::json{{"pid", 200 + measured.size()}, {"cell_of_process", 1}};
    const bool fits = batch <= (probe ? probe_limit : in_shared ? shared_limit : fresh_limit);
    rec.outcome = fits ? record::Outcome::kOk : record::Outcome::kOom;
    if (!fits) rec.message = "out of memory at batch " + std::to_string(batch);
    return rec;
  }
};

RunCellFn Bind(SharedProcessRunner& runner) {
  return [&runner](const plan::Cell& c, const CellRunOptions& o) { return runner(c, o); };
}

plan::Cell SharedSearchCell() {
  plan::Cell cell = SearchCell();
  cell.params["boundary_probe_process"] = "shared";
  return cell;
}

// The measured run at 373 ends oom in the process the probes used and fits in a fresh one: the
// value found stands, measured in the fresh process, and a warning says why it ran twice (an H100
// run of SSD-MobileNet training, session 23, stepped down 5% from a value that fit).
TEST(BoundaryCell, AnOomOfTheMeasuredRunInTheSharedProcessIsRunAgainInAFreshOne) {
  SharedProcessRunner runner{373, 360, 373};
  const record::CellRecord rec = RunBoundarySearch(SharedSearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(runner.measured, (std::vector<std::pair<std::int64_t, bool>>{{373, true}, {373, false}}));
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryBatchSize), 373);
  EXPECT_EQ(record::MetricValue(rec, metric::kBoundaryFirstFailingBatchSize), 374);
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("found"), 373);
  EXPECT_TRUE(search.at("measured_oom").empty());
  const nlohmann::json& shared_run = search.at("probes").back();
  EXPECT_TRUE(shared_run.at("measured").get<bool>());
  EXPECT_EQ(shared_run.at("batch_size"), 373);
  EXPECT_EQ(shared_run.at("outcome"), "oom");
  EXPECT_TRUE(shared_run.at("fits").is_null()) << "an oom in a shared process says nothing about fitting";
  EXPECT_GT(shared_run.at("process").at("cell_of_process").get<int>(), 1);
  ASSERT_TRUE(rec.extras.contains("warnings"));
  EXPECT_EQ(
      rec.extras.at("warnings").at(0),
      "batch_size: max: the measured run at batch_size 373 ended oom in the process its probes shared and "
      "fit in a fresh process: the shared process held memory from its earlier cells "
      "(boundary_probe_process: shared); measured in the fresh one");
  EXPECT_EQ(rec.extras.at("runner_process").at("cell_of_process"), 1);
}

// When the fresh process's run ends oom too, the value does not fit a measured run: the step-down
// goes on as without sharing, every later run in a fresh process, and the shared run is listed
// but not counted among the measured ooms.
TEST(BoundaryCell, AnOomInTheFreshProcessTooStepsDownInFreshProcesses) {
  SharedProcessRunner runner{373, 0, 360};
  const record::CellRecord rec = RunBoundarySearch(SharedSearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(rec.outcome, record::Outcome::kOk);
  EXPECT_EQ(runner.measured,
            (std::vector<std::pair<std::int64_t, bool>>{{373, true}, {373, false}, {354, false}}));
  const nlohmann::json& search = rec.extras.at("boundary_search");
  EXPECT_EQ(search.at("found"), 354);
  EXPECT_EQ(search.at("first_failing"), 373);
  EXPECT_EQ(search.at("measured_oom"), nlohmann::json::array({373}));
  ASSERT_EQ(rec.extras.at("warnings").size(), 1u);
  EXPECT_NE(rec.extras.at("warnings").at(0).get<std::string>().find("memory grew over the longer run"),
            std::string::npos);
}

// A measured run that is its process's first cell (the probes' process ended, or fresh probes)
// steps down at once, as before.
TEST(BoundaryCell, AnOomOfAMeasuredRunThatWasItsProcesssFirstCellStepsDownAtOnce) {
  FakeRunner runner{373, 360, {}};
  const record::CellRecord rec = RunBoundarySearch(SharedSearchCell(), CellRunOptions{}, Bind(runner));
  EXPECT_EQ(MeasuredCalls(runner), (std::vector<std::int64_t>{373, 354}));
  EXPECT_EQ(rec.extras.at("boundary_search").at("found"), 354);
}

// The cells boundary_seed: other_caps reads: the same parameters with another memory_cap, not a
// cell that differs in anything else, nor the cell itself, each key once.
TEST(BoundaryCell, OtherCapKeysAreTheSameCellUnderAnotherCap) {
  auto at = [](const char* cap, const char* model) {
    plan::Cell c = SearchCell();
    c.params["memory_cap"] = cap;
    c.params["model"] = model;
    c.key = std::string(model) + "@" + cap;
    return c;
  };
  const plan::Cell cell = at("16GiB", "resnet50");
  const std::vector<plan::Cell> plan = {at("8GiB", "resnet50"), cell, at("40GiB", "resnet50"),
                                        at("40GiB", "resnet50"), at("40GiB", "bert_base")};
  EXPECT_EQ(OtherCapKeys(cell, plan), (std::vector<std::string>{"resnet50@8GiB", "resnet50@40GiB"}));
  plan::Cell uncapped = SearchCell();
  EXPECT_TRUE(OtherCapKeys(uncapped, plan).empty());
  // A cell with one more parameter is another cell.
  plan::Cell more = at("8GiB", "resnet50");
  more.params["cuda_alloc_conf"] = "expandable_segments:True";
  EXPECT_TRUE(OtherCapKeys(cell, {more}).empty());
}

// A cap the device cannot give in full (a whole-device cap: the CUDA context holds part of the
// device outside the caching allocator): the runner's memory_cap_applied says so, and the guesses
// after the first probe aim at the device less its context. Fits up to 900 (900,000 of the model's
// bytes) under a nominal cap of 1 MiB with 100,000 bytes outside the allocator: the line through 8
// and 16 meets 900,000 at 900, which fits, then 901. Aimed at the nominal 1,048,576 it says 1048.
TEST(BoundaryCell, TheGuideAimsAtWhatTheRunnerSaysTheCapCanHold) {
  plan::Cell cell = SearchCell();
  cell.params["memory_cap"] = "1MiB";
  cell.params["boundary_guide"] = "peak_memory";
  for (const bool reported : {true, false}) {
    FakeRunner fake{900, 900, {}};
    auto run = [&](const plan::Cell& c, const CellRunOptions& o) {
      record::CellRecord rec = fake(c, o);
      if (reported) {
        rec.effective["memory_cap_applied"] = {{"mechanism", "cuda_memory_fraction"},
                                               {"fraction", 1.0},
                                               {"device_total_bytes", 1'000'000},
                                               {"outside_allocator_bytes", 100'000}};
      }
      return rec;
    };
    const record::CellRecord rec = RunBoundarySearch(cell, CellRunOptions{}, run);
    const nlohmann::json& search = rec.extras.at("boundary_search");
    std::vector<std::int64_t> probed;
    for (const nlohmann::json& p : search.at("probes")) {
      if (!p.value("measured", false)) probed.push_back(p.at("batch_size"));
    }
    EXPECT_EQ(search.at("found"), 900) << reported;
    EXPECT_EQ(search.at("guide").at("limit_bytes"), 1048576.0) << reported;
    if (reported) {
      EXPECT_EQ(probed, (std::vector<std::int64_t>{8, 16, 900, 901}));
      EXPECT_EQ(search.at("guide").at("aimed_bytes"), 900000.0);
    } else {
      EXPECT_EQ(probed.at(2), 1048);
      EXPECT_FALSE(search.at("guide").contains("aimed_bytes"));
    }
  }
}

}  // namespace
}  // namespace dlbench::orchestrator
