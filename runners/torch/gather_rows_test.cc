// The server's row-copy gather (gather_rows.h) gives what index_select gives, for contiguous and
// channels_last libraries, and refuses layouts whose rows are not blocks.
#include "gather_rows.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace dlbench::torchrunner {
namespace {

void ExpectGatherEqualsIndexSelect(const torch::Tensor& library, const std::vector<std::int64_t>& rows) {
  ASSERT_TRUE(RowsAreBlocks(library));
  std::vector<std::int64_t> shape = library.sizes().vec();
  shape[0] = 8;
  const torch::Tensor dst =
      torch::empty(shape, library.options().memory_format(library.suggest_memory_format())).fill_(-7);
  ASSERT_EQ(dst.strides().slice(1), library.strides().slice(1)) << "the same layout, as the server's buffers";
  ASSERT_TRUE(RowsAreBlocks(dst));
  const auto n = static_cast<std::int64_t>(rows.size());
  GatherRows(library, rows.data(), n, dst);
  const torch::Tensor expected = torch::index_select(library, 0, torch::tensor(rows, torch::kLong));
  EXPECT_TRUE(torch::equal(dst.narrow(0, 0, n), expected));
  if (n < 8) {
    EXPECT_TRUE(torch::all(dst.narrow(0, n, 8 - n) == -7).item<bool>()) << "rows past n are left alone";
  }
}

TEST(GatherRows, EqualsIndexSelectOnAContiguousLibrary) {
  const torch::Tensor library = torch::arange(20 * 3 * 5, torch::kFloat).reshape({20, 3, 5});
  ExpectGatherEqualsIndexSelect(library, {19, 0, 7, 7, 3});
  ExpectGatherEqualsIndexSelect(library.to(torch::kBFloat16), {1, 2, 3, 4, 5, 6, 7, 8});
  ExpectGatherEqualsIndexSelect(torch::arange(12, torch::kLong).reshape({12, 1}), {11, 0});
}

TEST(GatherRows, EqualsIndexSelectOnAChannelsLastLibrary) {
  const torch::Tensor library = torch::arange(10 * 3 * 4 * 6, torch::kFloat)
                                    .reshape({10, 3, 4, 6})
                                    .contiguous(torch::MemoryFormat::ChannelsLast);
  ASSERT_FALSE(library.is_contiguous());
  ExpectGatherEqualsIndexSelect(library, {9, 4, 0});
}

TEST(GatherRows, RowsThatAreNotBlocksAreRefused) {
  const torch::Tensor t = torch::zeros({4, 6});
  EXPECT_FALSE(RowsAreBlocks(t.t())) << "dimension 0 innermost";
  EXPECT_FALSE(RowsAreBlocks(t.narrow(1, 0, 3))) << "rows with gaps";
  EXPECT_FALSE(RowsAreBlocks(torch::zeros({0, 3})));
  EXPECT_FALSE(RowsAreBlocks(torch::Tensor()));
  EXPECT_TRUE(RowsAreBlocks(t.narrow(0, 1, 2))) << "a slice of rows is still rows of blocks";
}

}  // namespace
}  // namespace dlbench::torchrunner
