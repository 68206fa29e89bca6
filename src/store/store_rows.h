// Reading a whole run, cell or step row into its record, the same for both backends: `Row` is any
// type with the column accessors of sqlite::Statement (Int64, OptionalInt64, Text, IsNull by column
// number); RowAt in pg_store_read.cc gives them to one row of a PostgreSQL result. Only the
// stores include this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "store/result_store.h"
#include "store/store_codec.h"

namespace dlbench::store::codec {

// A row of codec::kRunSelect's columns; kStore when a stored word or JSON text does not read back.
// The run's tags are not in the row.
template <class Row>
Result<RunRecord> ReadRunRow(const Row& row) {
  RunRecord run;
  run.id = row.Int64(0);
  run.name = row.Text(1);
  run.matrix_path = row.Text(2);
  run.matrix_text = row.Text(3);
  run.started_wall_ns = row.Int64(4);
  run.finished_wall_ns = row.OptionalInt64(5);
  const std::string status = row.Text(6);
  auto parsed_status = record::ParseRunStatus(status);
  if (!parsed_status) return UnknownStoredName("status", status, " of run " + std::to_string(run.id));
  run.status = *parsed_status;
  run.environment_hash = row.Text(7);
  auto fingerprint = ParseJson(row.Text(8), "environment fingerprint of run " + std::to_string(run.id));
  if (!fingerprint.ok()) return fingerprint.error();
  run.environment = std::move(*fingerprint);
  run.tool_version = row.Text(9);
  run.git_commit = row.Text(10);
  run.total_cells = static_cast<int>(row.Int64(11));
  auto selection_json = ParseJson(row.Text(12), "selection of run " + std::to_string(run.id));
  if (!selection_json.ok()) return selection_json.error();
  auto selection = record::RunSelectionFromJson(*selection_json);
  if (!selection.ok()) {
    return MakeError(ErrorKind::kStore, "the stored selection of run " + std::to_string(run.id) + ": " +
                                            selection.error().message);
  }
  run.selection = std::move(*selection);
  run.uuid = row.Text(13);
  if (!row.IsNull(14)) run.sweep = row.Text(14);
  run.sweep_cells = static_cast<int>(row.OptionalInt64(15).value_or(0));
  return run;
}

// A row of codec::kCellSelect's columns, without the cell's metrics, steps and series; kStore when
// a stored word, seed or JSON text does not read back.
template <class Row>
Result<CellRecord> ReadCellRow(const Row& row) {
  CellRecord cell;
  cell.id = row.Int64(0);
  cell.run_id = row.Int64(1);
  cell.index = static_cast<int>(row.Int64(2));
  cell.cell_id = row.Text(3);
  cell.key = row.Text(4);
  cell.label = row.Text(5);
  const std::string where = " of cell '" + cell.cell_id + "' in run " + std::to_string(cell.run_id);
  struct JsonColumn {
    int column;
    const char* name;
    nlohmann::json* target;
  };
  const JsonColumn json_columns[] = {{6, "params", &cell.params},
                                     {7, "effective", &cell.effective},
                                     {8, "hello", &cell.hello},
                                     {14, "verdict_reasons", &cell.verdict_reasons},
                                     {22, "extras", &cell.extras}};
  for (const JsonColumn& c : json_columns) {
    auto value = ParseJson(row.Text(c.column), std::string(c.name) + where);
    if (!value.ok()) return value.error();
    *c.target = std::move(*value);
  }
  cell.repetition = static_cast<int>(row.Int64(9));
  auto seed = ParseSeed(row.Text(10), cell.id);
  if (!seed.ok()) return seed.error();
  cell.seed = *seed;
  const std::string outcome = row.Text(11);
  auto parsed_outcome = record::ParseOutcome(outcome);
  if (!parsed_outcome) return UnknownStoredName("outcome", outcome, where);
  cell.outcome = *parsed_outcome;
  cell.message = row.Text(12);
  const std::string verdict = row.Text(13);
  auto parsed_verdict = record::ParseVerdict(verdict);
  if (!parsed_verdict) return UnknownStoredName("verdict", verdict, where);
  cell.verdict = *parsed_verdict;
  // The measured window: warmup_steps is its first step, measured_steps its length (schema 3);
  // both are NULL for a cell that produced no step.
  const std::optional<std::int64_t> first_step = row.OptionalInt64(15);
  if (first_step) cell.window = record::MeasuredWindow{*first_step, row.OptionalInt64(23).value_or(0)};
  cell.warmup_rule = row.Text(16);
  cell.stop_reason = row.Text(17);
  cell.stdout_path = row.Text(18);
  cell.stderr_path = row.Text(19);
  cell.started_wall_ns = row.Int64(20);
  cell.finished_wall_ns = row.Int64(21);
  return cell;
}

// A row of "rank, start_ns, end_ns, samples, data_wait_ns, compute_ns, comm_ns" from steps:
// `present` is rebuilt from which phase columns are non-NULL, and an absent phase reads as 0.
template <class Row>
StepRow ReadStepRow(const Row& row) {
  StepRow step;
  step.rank = static_cast<std::uint32_t>(row.Int64(0));
  step.record.start_ns = row.Int64(1);
  step.record.end_ns = row.Int64(2);
  step.record.samples = static_cast<std::uint32_t>(row.Int64(3));
  const std::pair<std::int64_t*, std::uint32_t> phases[] = {{&step.record.data_wait_ns, record::kHasDataWait},
                                                            {&step.record.compute_ns, record::kHasCompute},
                                                            {&step.record.comm_ns, record::kHasComm}};
  for (int i = 0; i < 3; ++i) {
    if (row.IsNull(4 + i)) continue;
    *phases[i].first = row.Int64(4 + i);
    step.record.present |= phases[i].second;
  }
  return step;
}

}  // namespace dlbench::store::codec
