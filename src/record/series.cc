#include "record/series.h"

#include <charconv>

namespace dlbench::record::series {

std::string GpuSeriesName(int index, std::string_view field) {
  return "gpu" + std::to_string(index) + "." + std::string(field);
}

std::optional<GpuSeriesRef> ParseGpuSeriesName(std::string_view name) {
  if (name.size() < 5 || name.substr(0, 3) != "gpu") return std::nullopt;
  const std::size_t dot = name.find('.', 3);
  if (dot == std::string_view::npos || dot == 3 || dot + 1 == name.size()) return std::nullopt;
  int index = 0;
  const char* begin = name.data() + 3;
  const char* end = name.data() + dot;
  auto [ptr, ec] = std::from_chars(begin, end, index);
  if (ec != std::errc() || ptr != end || index < 0) return std::nullopt;
  return GpuSeriesRef{index, name.substr(dot + 1)};
}

}  // namespace dlbench::record::series
