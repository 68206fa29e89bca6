// The cell limit (docs/limits.md): a matrix that could expand to more than kMaxCells is refused
// from a count computed before anything is expanded, so even 10^9 cells are refused at once.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "config/matrix.h"
#include "plan/plan.h"

namespace dlbench::plan {
namespace {

// A null-runner matrix with `axes` axes of `values` values each (the numbers 1..values).
config::Matrix Grid(int axes, int values) {
  static const char* kNames[] = {"batch_size",       "step_ms",       "jitter_pct",     "setup_ms",
                                 "warmup_steps",     "warmup_factor", "inject_at_step", "leak_bytes_per_step",
                                 "samples_per_step", "world_size"};
  config::Matrix m;
  m.path = "grid.yaml";
  for (int a = 0; a < axes; ++a) {
    config::Axis axis;
    axis.name = kNames[a];
    for (int v = 1; v <= values; ++v) axis.values.emplace_back(v);
    m.axes.push_back(std::move(axis));
  }
  return m;
}

TEST(CellLimitTest, CountIsTheProductPlusIncludesTimesRepetitions) {
  EXPECT_EQ(MaxCellCount(Grid(3, 10)), 1000u);
  config::Matrix m = Grid(2, 10);
  m.include.push_back({{"batch_size", config::Value(64)}});
  m.include.push_back({{"batch_size", config::Value(128)}});
  m.repetitions = 3;
  EXPECT_EQ(MaxCellCount(m), (100u + 2u) * 3u);
  config::Matrix only_includes;
  only_includes.include.push_back({{"batch_size", config::Value(1)}});
  EXPECT_EQ(MaxCellCount(only_includes), 1u);
  // 10^20 does not fit 64 bits: the count saturates instead of wrapping to something small.
  EXPECT_EQ(MaxCellCount(Grid(10, 100)), std::numeric_limits<std::uint64_t>::max());
}

TEST(CellLimitTest, HugeMatrixIsRefusedWithItsCountBeforeExpanding) {
  // 10^9 cells: expanding used to take the machine's memory (bad_alloc); refused from the count.
  Result<Plan> huge = Expand(Grid(9, 10));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(
      huge.error().message,
      "grid.yaml: error: the matrix expands to 1000000000 cells (axes of 10 x 10 x 10 x 10 x 10 x 10 x 10 "
      "x 10 x 10 values), more than the 100000 a plan may hold (docs/limits.md); split it into several "
      "matrix files");

  config::Matrix repeated = Grid(2, 100);
  repeated.repetitions = 11;
  repeated.include.push_back({{"batch_size", config::Value(1000)}});
  Result<Plan> too_many = Expand(repeated);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().message,
            "grid.yaml: error: the matrix expands to 110011 cells (axes of 100 x 100 values + 1 include "
            "entries, x 11 repetitions), more than the 100000 a plan may hold (docs/limits.md); split it "
            "into several matrix files");

  Result<Plan> saturated = Expand(Grid(10, 100));
  ASSERT_FALSE(saturated.ok());
  EXPECT_NE(saturated.error().message.find("expands to more than 18446744073709551615 cells"),
            std::string::npos)
      << saturated.error().message;
}

TEST(CellLimitTest, APlanAtTheLimitExpands) {
  // 100 x 100 x 10 = 100,000 cells, exactly the limit.
  config::Matrix m = Grid(3, 100);
  m.axes[2].values.resize(10);
  ASSERT_EQ(MaxCellCount(m), kMaxCells);
  Result<Plan> plan = Expand(m);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->cells.size(), kMaxCells);
  EXPECT_EQ(plan->cells.back().index, static_cast<int>(kMaxCells) - 1);
}

}  // namespace
}  // namespace dlbench::plan
