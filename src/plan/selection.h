// Which cells of a plan `run` and `plan` keep: --only FILTER, then --shard K/N, and which selection
// a resumed run applies. Every function returns a value or an Error (kInvalidInput for anything the
// user must change); none prints or exits: the CLI maps errors to messages and exit codes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "plan/plan.h"
#include "record/records.h"

namespace dlbench::plan {

// FILTER is a comma-separated list of terms that must all match a cell: `name=value` compares a
// parameter's value as text (`batch_size=32`, `model=resnet50`), `name!=value` excludes, and a
// bare word matches a substring of the cell's label. Repeating --only keeps cells matching any.
Result<std::vector<Cell>> FilterCells(const std::vector<Cell>& cells,
                                      const std::vector<std::string>& filters);

// One term of a FILTER: `name=value`, `name!=value`, or a bare word matched against the label.
// Names are canonical (a label abbreviation such as `bs` is read as batch_size).
struct FilterTerm {
  std::string name;
  std::string value;
  enum class Op { kEquals, kNotEquals, kLabel } op = Op::kLabel;
};

// Filters in FilterCells' syntax for anything with parameters and a label (stored cells: `trend
// --only`): the OR of `any_of`, each the AND of its terms; `texts` keeps each filter as written.
struct CellFilter {
  std::vector<std::vector<FilterTerm>> any_of;
  std::vector<std::string> texts;
};
Result<CellFilter> ParseCellFilter(const std::vector<std::string>& filters);
// Whether a cell with these parameters (a JSON object), label and key matches; numbers compare
// as numbers. An empty filter matches every cell.
bool MatchesCellFilter(const CellFilter& filter, const nlohmann::json& params, const std::string& label,
                       const std::string& key);
// kInvalidInput naming a term's parameter that none of `names` (every parameter the cells have)
// holds, as FilterCells refuses a typo; Ok when `names` is empty (no cells to judge by).
Status CheckCellFilterNames(const CellFilter& filter, const std::set<std::string>& names);

// --shard K/N: part K (1-based) of N disjoint parts of a plan, so that N processes (one per GPU)
// together run the whole matrix once.
struct Shard {
  int index = 1;  // K, 1 <= K <= count
  int count = 1;  // N
};

// Parses "K/N" (decimal integers, 1 <= K <= N). Anything else is kInvalidInput naming the text
// and what was expected.
Result<Shard> ParseShard(const std::string& text);
std::string ShardText(const Shard& shard);  // "K/N"

// The cells of shard K/N: those at 0-based position p of `cells` with p % N == K - 1. Round robin
// rather than contiguous blocks, so that the slow cells of a grouped plan (a big model, the large
// batch sizes) spread over the shards instead of landing on one. Keeps the order of `cells`;
// empty when K exceeds the number of cells.
std::vector<Cell> ShardCells(const std::vector<Cell>& cells, const Shard& shard);

// What the user asked to run of a matrix (--only filters, OR of them; --shard K/N or empty). The
// run stores it, so it is the data model's record type.
using Selection = record::RunSelection;

// `selection` with its shard rewritten as ShardText writes it ("2/2"), the form a run stores and
// resumes compare. kInvalidInput (ParseShard's message) for a shard that is not K/N.
Result<Selection> NormalizeSelection(const Selection& selection);

// The selection as `dlbench run` options, shell-quoted where needed: "--only model=a --shard 2/2";
// "" when empty.
std::string SelectionArgs(const Selection& selection);

// A word as a POSIX shell reads it back: unchanged when it has only safe characters, else in
// single quotes.
std::string ShellWord(const std::string& word);

// Which selection `run --resume` applies to a run that was started with `stored`, given the
// (normalized) options of this invocation. No --only and no --shard given: the stored one.
// Given ones must equal the stored ones (the same --only filters, in any order, and the same
// shard), else kInvalidInput naming both. A run with an empty stored selection (started on the
// whole matrix, or stored before runs recorded their selection) gets the given one; the caller
// still checks that it keeps the run's cells (CheckResumedCells).
Result<Selection> ResumeSelection(std::int64_t run_id, const Selection& stored, const Selection& given);

// A matrix read, validated and expanded, with the cells the selection keeps.
// `kept` (a subset of `planned`, in its order) with the input-bound controls its cells need
// (Cell::input_control_id) and their ddp cells' world_size 1 cells (Cell::ddp_scaling_control_id)
// put back in plan order: --only keeps a cell's control with it. A ddp cell's twins are not put
// back: each is a cell of as many ranks, which --only did not ask for.
std::vector<Cell> WithInputControls(const std::vector<Cell>& planned, std::vector<Cell> kept);

struct SelectedPlan {
  config::Matrix matrix;
  std::size_t planned = 0;            // cells before --only
  std::size_t matched = 0;            // cells after --only, before --shard
  std::optional<Shard> shard;         // --shard, when given
  std::vector<Cell> cells;            // the cells to run, in run order (Cell::index unchanged)
  std::vector<std::string> warnings;  // Plan::warnings
};

// Parses --shard first (a bad value fails before the matrix is read), then loads the matrix,
// expands it and applies --only and --shard. Errors are kInvalidInput; a matrix file that cannot
// be read or is wrong gives config::LoadMatrix's message unchanged, which starts with
// "<matrix_path>:" and lists one diagnostic per line ("m.yaml:3:5: error: ..."), so a caller can
// print it as a compiler's diagnostics. An empty selection is a value (see EmptySelectionMessage).
Result<SelectedPlan> SelectPlan(const std::string& matrix_path, const Selection& selection);

// Whether `error` came from reading or validating the matrix file at `matrix_path` (its message is
// that file's diagnostics, see SelectPlan).
bool IsMatrixDiagnostic(const Error& error, const std::string& matrix_path);

// Why a selection that kept no cell is empty, for `run` to refuse it: "--only matched none of
// the 8 cells ..." or "--shard 5/6 has no cells: ...". Empty when `selected` has cells.
std::string EmptySelectionMessage(const SelectedPlan& selected, const std::string& matrix_path);

// How `run` and `plan` name the part they hold: "" without --shard, else ", shard K/N of M" where
// M counts the cells before sharding.
std::string ShardSummary(const SelectedPlan& selected);

// The second guard of a resume, and the only one for runs stored before runs recorded their
// selection: the selection must keep the run's cells, i.e. its cell count (`total_cells`) and
// every cell it already finished. kInvalidInput naming the first finished cell it drops.
Status CheckResumedCells(const record::RunRecord& run, const std::set<std::string>& finished,
                         const SelectedPlan& selected);

}  // namespace dlbench::plan
