#include "report/tensorboard.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/files.h"
#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::report {
namespace {

// The GPU fields exported, under "gpu<N>/<field>".
constexpr std::string_view kGpuFields[] = {record::series::kSmUtilPct, record::series::kMemUtilPct,
                                           record::series::kPowerW, record::series::kMemUsedBytes};

// The tag of a converge curve: "train.loss" -> "train/loss".
std::string CurveTag(std::string_view series) {
  std::string tag(series);
  std::replace(tag.begin(), tag.end(), '.', '/');
  return tag;
}

// Refuses a path that exists and is not a directory (lstat: a symbolic link is refused too);
// creates it when absent.
Status EnsureDirectory(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    const char* what = S_ISLNK(st.st_mode)   ? "a symbolic link"
                       : S_ISREG(st.st_mode) ? "a file"
                                             : "not a directory";
    return MakeError(ErrorKind::kIo,
                     fmt::format("{}: exists and is {}; the TensorBoard export writes folders and replaces "
                                 "nothing else",
                                 path, what));
  }
  if (errno != ENOENT) return MakeError(ErrorKind::kIo, fmt::format("{}: {}", path, std::strerror(errno)));
  return MakeDirs(path);
}

}  // namespace

std::string TensorBoardCellFolder(const record::CellRecord& cell) {
  std::string name = fmt::format("cell-{:04d}-", cell.index);
  std::size_t kept = 0;
  for (char c : cell.label) {
    if (kept++ == 100) break;
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '=' || c == ',' || c == '-';
    name += safe ? c : '_';
  }
  return name;
}

std::vector<tfrecord::ScalarEvent> TensorBoardScalars(const record::CellRecord& cell) {
  std::vector<tfrecord::ScalarEvent> out;
  const std::vector<record::StepRecord> steps = record::RankZeroSteps(cell);
  // The wall clock at a CLOCK_MONOTONIC time of the runner's records.
  const std::int64_t first = cell.warmup_steps().value_or(0);
  const std::int64_t anchor_ns = static_cast<std::size_t>(first) < steps.size()
                                     ? steps[first].start_ns
                                     : (steps.empty() ? 0 : steps[0].start_ns);
  const double anchor_wall = static_cast<double>(cell.started_wall_ns) * 1e-9 +
                             record::MetricValue(cell, record::metric::kTimeToMeasureS).value_or(0);
  auto wall = [&](std::int64_t t_ns) { return anchor_wall + static_cast<double>(t_ns - anchor_ns) * 1e-9; };

  const std::size_t stride = std::max<std::size_t>(1, (steps.size() + kMaxStepPoints - 1) / kMaxStepPoints);
  for (std::size_t i = stride - 1; i < steps.size(); i += stride) {
    const record::StepRecord& r = steps[i];
    const double ns = static_cast<double>(r.end_ns - r.start_ns);
    const auto step = static_cast<std::int64_t>(i + 1);
    out.push_back({"step/time_ms", step, wall(r.end_ns), static_cast<float>(ns * 1e-6)});
    if (ns > 0)
      out.push_back(
          {"step/samples_per_s", step, wall(r.end_ns), static_cast<float>(r.samples / (ns * 1e-9))});
  }
  // Series by tag, each in time order (the store keeps sampling order; a sort makes it certain).
  std::map<std::string, std::vector<const record::SeriesPoint*>> by_tag;
  for (const record::SeriesPoint& p : cell.series) {
    const auto& curves = record::series::kConvergeCurves;
    if (std::find(std::begin(curves), std::end(curves), p.series) != std::end(curves)) {
      by_tag[CurveTag(p.series)].push_back(&p);
      continue;
    }
    const auto gpu = record::series::ParseGpuSeriesName(p.series);
    if (gpu && std::find(std::begin(kGpuFields), std::end(kGpuFields), gpu->field) != std::end(kGpuFields))
      by_tag[fmt::format("gpu{}/{}", gpu->index, gpu->field)].push_back(&p);
  }
  for (auto& [tag, points] : by_tag) {
    std::stable_sort(
        points.begin(), points.end(),
        [](const record::SeriesPoint* a, const record::SeriesPoint* b) { return a->t_ns < b->t_ns; });
    for (const record::SeriesPoint* p : points)
      out.push_back({tag, record::StepsEndedBy(steps, p->t_ns), wall(p->t_ns), static_cast<float>(p->value)});
  }
  return out;
}

Result<std::vector<std::string>> WriteTensorBoard(const record::RunRecord& run,
                                                  const std::vector<record::CellRecord>& cells,
                                                  const std::string& dir) {
  DLBENCH_RETURN_IF_ERROR(EnsureDirectory(dir));
  std::vector<std::string> written;
  for (const record::CellRecord& cell : cells) {
    const std::string folder = dir + "/" + TensorBoardCellFolder(cell);
    DLBENCH_RETURN_IF_ERROR(EnsureDirectory(folder));
    const std::string path = fmt::format("{}/events.out.tfevents.{}.dlbench-run{}", folder,
                                         cell.started_wall_ns / 1'000'000'000, run.id);
    DLBENCH_RETURN_IF_ERROR(tfrecord::WriteScalarEventFile(
        path, static_cast<double>(cell.started_wall_ns) * 1e-9, TensorBoardScalars(cell)));
    written.push_back(path);
  }
  return written;
}

}  // namespace dlbench::report
