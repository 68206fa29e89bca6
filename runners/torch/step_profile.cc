#include "step_profile.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/files.h"
#include "common/text.h"

namespace dlbench::torchrunner {
namespace {

namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// LibTorch 1.13's KinetoEvent has durationUs(); 2.x's has durationNs() (and no durationUs()).
template <typename Event>
auto DurationNs(const Event& e, int /*prefer*/) -> decltype(static_cast<std::int64_t>(e.durationNs())) {
  return static_cast<std::int64_t>(e.durationNs());
}
template <typename Event>
std::int64_t DurationNs(const Event& e, long /*fallback*/) {
  return static_cast<std::int64_t>(e.durationUs()) * 1000;
}

struct Totals {
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;
};

// The `top` names by total time, each with its calls and time per step.
nlohmann::json Top(const std::map<std::string, Totals>& by_name, std::int64_t all_ns, int steps) {
  std::vector<std::pair<std::string, Totals>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total_ns != b.second.total_ns ? a.second.total_ns > b.second.total_ns : a.first < b.first;
  });
  if (rows.size() > kStepProfileTop) rows.resize(kStepProfileTop);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, t] : rows) {
    out.push_back(
        {{"name", name},
         {"calls_per_step", static_cast<double>(t.calls) / steps},
         {"us_per_step", static_cast<double>(t.total_ns) / 1e3 / steps},
         {"share", all_ns > 0 ? static_cast<double>(t.total_ns) / static_cast<double>(all_ns) : 0.0}});
  }
  return out;
}

}  // namespace

Result<std::optional<StepProfileRequest>> StepProfileRequestFrom(const char* dir, const char* steps) {
  if (dir == nullptr || *dir == '\0') return std::optional<StepProfileRequest>();
  StepProfileRequest request;
  request.dir = dir;
  struct stat st {};
  if (::stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("{}={}: not a directory (the step profile is written into it)", kStepProfileDirEnv, dir));
  }
  if (steps != nullptr && *steps != '\0') {
    const auto n = ParseInt(steps);
    if (!n || *n < 1 || *n > kStepProfileMaxSteps) {
      return MakeError(ErrorKind::kInvalidInput,
                       fmt::format("{}={}: expected a whole number of steps in [1, {}]", kStepProfileStepsEnv,
                                   steps, kStepProfileMaxSteps));
    }
    request.steps = static_cast<int>(*n);
  }
  return std::optional<StepProfileRequest>(std::move(request));
}

Result<std::optional<StepProfileRequest>> StepProfileRequestFromEnv() {
  return StepProfileRequestFrom(std::getenv(kStepProfileDirEnv), std::getenv(kStepProfileStepsEnv));
}

nlohmann::json ProfileSteps(const StepProfileRequest& request, const std::string& file_stem, bool cuda,
                            const std::function<void()>& step) {
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
  if (cuda) activities.insert(impl::ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  std::unique_ptr<prof::ProfilerResult> result;
  const std::int64_t start_ns = MonotonicNowNs();
  try {
    for (int i = 0; i < request.steps; ++i) step();
  } catch (...) {
    (void)prof::disableProfiler();
    throw;
  }
  const std::int64_t wall_ns = MonotonicNowNs() - start_ns;
  result = prof::disableProfiler();

  std::map<std::string, Totals> ops;
  std::map<std::string, Totals> kernels;
  std::int64_t kernel_ns = 0;
  std::int64_t op_ns = 0;
  for (const prof::KinetoEvent& e : result->events()) {
    const std::int64_t ns = DurationNs(e, 0);
    const bool on_device = e.deviceType() != c10::DeviceType::CPU;
    Totals& t = (on_device ? kernels : ops)[std::string(e.name())];
    ++t.calls;
    t.total_ns += ns;
    (on_device ? kernel_ns : op_ns) += ns;
  }
  const int steps = request.steps;
  nlohmann::json summary = {
      {"steps", steps},
      {"wall_us_per_step", static_cast<double>(wall_ns) / 1e3 / steps},
      {"device_events_us_per_step", static_cast<double>(kernel_ns) / 1e3 / steps},
      {"device_events", Top(kernels, kernel_ns, steps)},
      {"host_ops", Top(ops, op_ns, steps)},
      {"method",
       "LibTorch's profiler (Kineto) over the steps after the measured loop, outside every timed step; host "
       "operators' times are inclusive (a parent's includes its children's) and share is of the host "
       "operators' "
       "sum; device events (kernels, copies, memsets) are CUPTI's, share of their sum; the profiler's own "
       "cost is "
       "in wall_us_per_step"}};
  const std::string base = request.dir + "/" + file_stem;
  summary["file"] = base + ".json";
  const std::string trace = base + ".trace.json";
  struct stat st {};
  try {
    // Only an absent path or a regular file is written (LibTorch's save would follow a link or
    // write into a FIFO or device).
    if (::lstat(trace.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw std::runtime_error(trace + " exists and is not a regular file: not written");
    result->save(trace);
    summary["trace"] = trace;
  } catch (const std::exception& e) {
    // Debian's LibTorch 1.13 is built without Kineto: the events are there, a trace file is not.
    const std::string what = e.what();
    summary["trace_error"] = what.substr(0, what.find('\n'));
  }
  if (const Status written = WriteFileAtomic(base + ".json", summary.dump(1) + "\n"); !written.ok())
    summary["write_error"] = written.error().message;
  return summary;
}

}  // namespace dlbench::torchrunner
