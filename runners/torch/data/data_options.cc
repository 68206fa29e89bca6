#include "data/data_options.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>

namespace dlbench::torchrunner {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

}  // namespace

const char* DataSourceName(DataSource source) {
  switch (source) {
    case DataSource::kDevice:
      return "device";
    case DataSource::kHost:
      return "host";
    case DataSource::kJpegDir:
      return "jpeg_dir";
    case DataSource::kTfRecord:
      return "tfrecord";
  }
  return "device";
}

Result<DataOptions> ParseDataOptions(const config::RunnerParams& p) {
  // Types, ranges and allowed values are the registry's (RunnerParams::Parse checked them); the
  // keys have no constant registry default, so absent reads as the documented default here.
  DataOptions d;
  const std::string name = p.Text("data").value_or(DataSourceName(DataSource::kDevice));
  bool known = false;
  for (DataSource s : {DataSource::kDevice, DataSource::kHost, DataSource::kJpegDir, DataSource::kTfRecord}) {
    if (name == DataSourceName(s)) {
      d.source = s;
      known = true;
    }
  }
  if (!known) return Invalid(fmt::format("parameter 'data': '{}' is not implemented by this runner", name));
  d.path = p.Text("data_path").value_or("");
  if (d.decodes() && d.path.empty()) {
    return Invalid(d.source == DataSource::kJpegDir
                       ? "data: jpeg_dir needs data_path, the folder of class sub-folders holding the JPEGs"
                       : "data: tfrecord needs data_path, a glob of TFRecord files (e.g. /data/train-*)");
  }
  if (auto workers = p.Int("data_workers")) d.workers = static_cast<int>(*workers);  // 1..256 or auto
  if (auto prefetch = p.Int("prefetch")) d.prefetch = static_cast<int>(*prefetch);   // 1..1024
  if (auto shuffle = p.Int("shuffle_buffer")) d.shuffle_buffer = *shuffle;           // 0..1e9
  d.pin_memory = p.Bool("pin_memory").value_or(false);
  d.async_copy = p.Bool("async_copy").value_or(false);
  d.cache = p.Bool("cache").value_or(false);
  d.skip_corrupt = p.Bool("skip_corrupt").value_or(false);
  d.pipeline_only = p.Bool("pipeline_only").value_or(false);
  if (d.pipeline_only && !d.from_host()) {
    return Invalid(
        "pipeline_only: true needs a pipeline to run: data host, jpeg_dir or tfrecord (data: device has "
        "none)");
  }
  return d;
}

Status CheckDataSupported(const DataOptions& data, bool cuda_device) {
  if (cuda_device) return Status::Ok();
  for (auto [key, on] :
       {std::pair<const char*, bool>{"pin_memory", data.pin_memory}, {"async_copy", data.async_copy}}) {
    if (on) {
      return MakeError(
          ErrorKind::kUnsupported,
          fmt::format("unsupported: {} does not apply on the CPU: there is no host-to-device copy "
                      "(it applies to CUDA devices; use {}: false on the CPU)",
                      key, key));
    }
  }
  return Status::Ok();
}

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int ResolveDataWorkers(const std::optional<int>& requested, int usable_cores) {
  if (requested) return *requested;
  return std::max(1, usable_cores - 1);
}

}  // namespace dlbench::torchrunner
