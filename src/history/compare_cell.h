// Internal to src/history: one cell key's comparison (compare_cell.cc), which CompareRunData
// (compare.cc) runs for every key both runs measured. compare.cc: the names of metrics and
// verdicts, matching cells by key and the matrix-wide false-discovery rate; compare_cell.cc:
// pooling a key's repetitions, the bootstrap and t-intervals, the noise floor and the verdict;
// compare_stored.cc: loading stored runs (or sweeps) and learning noise floors from history.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "history/compare.h"
#include "history/samples.h"
#include "record/records.h"

namespace dlbench::history::internal {

// One side of one key: its repetitions pooled.
struct Side {
  std::vector<const record::CellRecord*> cells;  // every stored repetition
  int ok_repetitions = 0;
  std::vector<double> step_ns;  // measured step times of the ok repetitions, in order
  // Each measured step's period per sample: from its start to the next step's start (the last:
  // to its end), so the periods of a repetition add up to its measured window and throughput
  // here is samples / window, the stored samples_per_s's definition (record/metrics.h).
  std::vector<double> period_ns_per_sample;
  std::vector<double> rep_values;            // the metric of each ok repetition, in MetricUnit()
  std::string contended;                     // the reason of a contended repetition, if any
  std::vector<StepBatch> batches;            // the same steps cut per repetition (p99's blocks)
  std::vector<std::string> outcomes;         // of the repetitions that did not
  std::vector<std::string> invalid_reasons;  // of ok repetitions whose verdict is not usable
  std::vector<double> stored_values;         // the stored metric of ok repetitions (energy)
  std::int64_t steps = 0;
};

// A key's repetitions (every stored one) pooled for `metric`: the ok ones' steps, figures and
// batches, and why the others did not count.
Side Pool(const std::vector<const record::CellRecord*>& cells, Metric metric);

// The mean of v (stats::ComputeMoments).
double Mean(const std::vector<double>& v);

// One key's comparison: its figures, the ratio's interval and p-value (the verdict waits for the
// matrix's q-values: Decide).
CellComparison CompareCell(const std::string& key, const Side& base, const Side& candidate,
                           const CompareOptions& options, const NoiseFloors& noise);

// The verdict from the q-value and the interval against the threshold.
void Decide(CellComparison& cell, const CompareOptions& options);

}  // namespace dlbench::history::internal
