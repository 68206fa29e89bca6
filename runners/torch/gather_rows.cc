#include "gather_rows.h"

#include <cstring>

namespace dlbench::torchrunner {

bool RowsAreBlocks(const torch::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu() || t.dim() == 0 || t.size(0) == 0) return false;
  if (!t.is_non_overlapping_and_dense()) return false;
  // Dense with dimension 0 the outermost: its stride is one row's elements.
  const std::int64_t row = t.numel() / t.size(0);
  for (std::int64_t d = 1; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) >= t.stride(0)) return false;
  }
  return t.size(0) == 1 || t.stride(0) == row;
}

void GatherRows(const torch::Tensor& src, const std::int64_t* index, std::int64_t n,
                const torch::Tensor& dst) {
  const auto row_bytes = static_cast<std::size_t>(src.numel() / src.size(0)) * src.element_size();
  const auto* from = static_cast<const char*>(src.data_ptr());
  auto* to = static_cast<char*>(dst.data_ptr());
  for (std::int64_t k = 0; k < n; ++k) {
    std::memcpy(to + static_cast<std::size_t>(k) * row_bytes,
                from + static_cast<std::size_t>(index[k]) * row_bytes, row_bytes);
  }
}

}  // namespace dlbench::torchrunner
