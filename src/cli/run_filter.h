// Which cells of a plan `run` and `plan` keep: --only FILTER, then --shard K/N.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/matrix.h"
#include "plan/plan.h"

namespace dlbench::cli {

// FILTER is a comma-separated list of terms that must all match a cell: `name=value` compares a
// parameter's value as text (`batch_size=32`, `model=resnet50`), `name!=value` excludes, and a
// bare word matches a substring of the cell's label. Repeating --only keeps cells matching any.
Result<std::vector<plan::Cell>> FilterCells(const std::vector<plan::Cell>& cells,
                                            const std::vector<std::string>& filters);

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
std::vector<plan::Cell> ShardCells(const std::vector<plan::Cell>& cells, const Shard& shard);

// What the user asked to run of a matrix.
struct Selection {
  std::vector<std::string> only;  // --only filters (OR of them); empty keeps every cell
  std::string shard;              // --shard K/N as given; empty for no sharding
};

// A matrix read, validated and expanded, with the cells the selection keeps.
struct SelectedPlan {
  config::Matrix matrix;
  std::size_t planned = 0;        // cells before --only
  std::size_t matched = 0;        // cells after --only, before --shard
  std::optional<Shard> shard;     // --shard, when given
  std::vector<plan::Cell> cells;  // the cells to run, in run order (plan::Cell::index unchanged)
};

// Parses --shard first (a bad value fails before the matrix is read), then loads the matrix,
// expands it and applies --only and --shard. On failure prints the error (a matrix's
// file:line:col list as is) and returns the exit code to use.
Result<SelectedPlan> SelectPlan(const std::string& matrix_path, const Selection& selection, int* exit_code);

// Why a selection that kept no cell is empty, for `run` to refuse it: "--only matched none of
// the 8 cells ..." or "--shard 5/6 has no cells: ...". Empty when `selected` has cells.
std::string EmptySelectionMessage(const SelectedPlan& selected, const std::string& matrix_path);

// How `run` and `plan` name the part they hold: "" without --shard, else ", shard K/N of M" where
// M counts the cells before sharding.
std::string ShardSummary(const SelectedPlan& selected);

}  // namespace dlbench::cli
