// The precision trade-off of a run (docs/precisions.md): each cell at a precision other than
// fp32 set against the fp32 cell of the same model, on the outputs both runners recorded for the
// same fixed evaluation set (extras.info.eval, runners/torch/reference_eval.h), and one row per
// precision with its size, latency, throughput, energy per sample, peak memory and output agreement.
//
// Everything here is computed when read (show, report), from stored records: the fp32 cell may
// run after the cell compared with it, and the figures follow from what both stored.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/records.h"
#include "report/box_match.h"

namespace dlbench::report {

// The precision every other is compared with.
inline constexpr char kReferencePrecision[] = "fp32";
inline constexpr char kNoFp32Reference[] = "no fp32 reference in this run";

// Where in CellRecord::extras a runner's evaluation outputs are.
inline constexpr char kEvalInfoKey[] = "eval";

// One cell's outputs against its fp32 reference's. Figures are set only when why_none is empty.
struct OutputAgreement {
  const record::CellRecord* reference = nullptr;  // the fp32 cell chosen, when there is one
  std::string why_none;                           // why there are no figures
  std::int64_t rows = 0;                          // output rows whose top-1 was compared
  std::int64_t values = 0;                        // output values compared
  double top1_agreement = 0.0;                    // share of rows with the same argmax, in [0, 1]
  double max_abs_diff = 0.0;                      // over the compared values
  double mean_abs_diff = 0.0;
  // Detection models (both evaluations recorded "detections"): the reference's boxes matched to
  // this cell's by IoU (box_match.h); boxes_why_none says why not when either lacks them or they
  // do not parse.
  std::optional<BoxMatch> boxes;
  std::string boxes_why_none;
  // The cell's tolerances for its precision, as its runner recorded them in info.eval:
  // min_agreement (`tolerance`: the least top-1 agreement, and for detection share of boxes
  // matched), max_abs_diff and max_mean_abs_diff (the largest max and mean |diff|). `warning` names
  // each figure beyond its tolerance and the tolerance, "; " between them; empty when none is.
  std::optional<double> tolerance;
  std::optional<double> max_abs_diff_tolerance;
  std::optional<double> max_mean_abs_diff_tolerance;
  std::string warning;
  // What the cell's runner found when its own fp32 forward disagreed beyond the tolerance
  // (info.eval.fault: the layer most likely at fault, or why it could not be told); empty otherwise.
  std::string fault;
  bool has_figures() const { return why_none.empty(); }
};

// The requested precision of a cell (params.precision; "fp32" when absent, the registry default).
std::string PrecisionOf(const record::CellRecord& cell);

// The fp32 cell `cell` is compared with: among `cells`, a cell that ended ok, requested fp32,
// and requested the same value for every other parameter (model, sizes, batch, device, runner,
// reference_samples, ...) but the comparison's tolerances (min_agreement, max_abs_diff,
// max_mean_abs_diff). The same repetition is preferred,
// then the lowest. nullptr when there is none, or when `cell` is fp32 itself.
const record::CellRecord* FindFp32Reference(const record::CellRecord& cell,
                                            const std::vector<record::CellRecord>& cells);

// Compares two info.eval objects: the cell's and the reference's. No figures (why_none says why)
// when either lacks the fields, when their weights or inputs hashes differ (they did not evaluate
// the same thing), when shapes differ, or when a value is not finite.
OutputAgreement CompareEvalOutputs(const nlohmann::json& eval, const nlohmann::json& reference_eval);

// `cell` against its fp32 reference in `cells`: kNoFp32Reference when there is none.
OutputAgreement CompareWithFp32(const record::CellRecord& cell, const std::vector<record::CellRecord>& cells);

// Sets a's tolerances, a.warning and a.fault from the cell's info.eval (min_agreement,
// max_abs_diff, max_mean_abs_diff, fault) and a's figures; `against` names the reference in the warning
// ("fp32", "the CPU cell").
void ApplyTolerance(OutputAgreement& a, const nlohmann::json& eval, const std::string& against);

// CPU-GPU consistency (docs/precisions.md): a cell on a CUDA device (params.device "cuda" or
// "cuda:N") set against the cell of the same run that ended ok on device "cpu" with the same value
// of every other parameter (precision included): same repetition first, then the lowest.
inline constexpr char kNoCpuReference[] = "no CPU cell with the same parameters in this run";
const record::CellRecord* FindCpuReference(const record::CellRecord& cell,
                                           const std::vector<record::CellRecord>& cells);

// What a comparison says beyond its top-1 and difference figures, one line each: SSD's boxes
// matched by IoU (or why not), "warning: ..." for a figure below the tolerance with the layer its
// runner found most likely at fault. Empty without figures.
std::vector<std::string> AgreementNotes(const OutputAgreement& a);

struct ConsistencyRow {
  const record::CellRecord* cell = nullptr;  // the CUDA cell
  std::string precision;
  OutputAgreement agreement;  // its outputs against the CPU cell's; reference = the CPU cell
};
// Every ok CUDA cell that records an evaluation, against its CPU cell; in the order the cells ran.
std::vector<ConsistencyRow> CpuGpuConsistency(const std::vector<record::CellRecord>& cells);

struct PrecisionRow {
  const record::CellRecord* cell = nullptr;
  std::string precision;
  std::optional<double> weight_bytes;  // record::metric::kWeightBytes
  std::optional<double> step_p50_ns;   // one step of batch_size samples
  std::optional<double> step_p99_ns;
  std::optional<double> samples_per_s;
  // Energy per sample over the measured window: the GPU's (energy_per_sample_j, NVML) where the
  // monitor has it, else the CPU package's (cpu_package_energy_per_sample_j, RAPL), as
  // energy_source says ("gpu" or "cpu_package"); absent when neither was measured.
  std::optional<double> energy_per_sample_j;
  std::string energy_source;
  // The peak memory the results table shows: the device allocator's steady-state peak
  // (device_allocated_peak_bytes) on a GPU, else the runner process's peak RSS over the measured
  // window (proc_rss_peak_bytes).
  std::optional<double> peak_memory_bytes;
  OutputAgreement agreement;   // for the fp32 row: why_none "the reference"
  bool fastest = false;        // the highest samples_per_s of the group
  bool most_accurate = false;  // of the non-fp32 rows with figures: highest top-1, then lowest mean diff
};

// The cells that differ only in precision (same other parameters, ok outcome, not scenario
// converge), when there are
// at least two precisions: one row per precision, in the order the cells ran; of several cells
// at one precision (repetitions) the lowest repetition.
struct PrecisionGroup {
  std::string label;  // the first row's cell label
  std::vector<PrecisionRow> rows;
};
std::vector<PrecisionGroup> PrecisionTradeOff(const std::vector<record::CellRecord>& cells);

}  // namespace dlbench::report
