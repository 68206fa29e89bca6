#include "data/data_options.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>

namespace dlbench::torchrunner {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

bool Present(const nlohmann::json& params, const char* key) {
  return params.contains(key) && !params.at(key).is_null();
}

Result<bool> Bool(const nlohmann::json& params, const char* key, bool fallback) {
  if (!Present(params, key)) return fallback;
  const auto& v = params.at(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string() && (v == "true" || v == "false")) return v == "true";
  return Invalid(fmt::format("parameter '{}' must be true or false, got {}", key, v.dump()));
}

// An integer in [lo, hi]; `keyword`, when not empty, is accepted too and reads as nullopt.
Result<std::optional<std::int64_t>> Int(const nlohmann::json& params, const char* key, std::int64_t lo,
                                        std::int64_t hi, const char* keyword = "") {
  if (!Present(params, key)) return std::optional<std::int64_t>();
  const auto& v = params.at(key);
  if (*keyword != '\0' && v.is_string() && v.get<std::string>() == keyword)
    return std::optional<std::int64_t>();
  const std::string expected = *keyword != '\0'
                                   ? fmt::format("an integer between {} and {}, or {}", lo, hi, keyword)
                                   : fmt::format("an integer between {} and {}", lo, hi);
  if (!v.is_number_integer())
    return Invalid(fmt::format("parameter '{}' must be {}, got {}", key, expected, v.dump()));
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi) return Invalid(fmt::format("parameter '{}' must be {}, got {}", key, expected, n));
  return std::optional<std::int64_t>(n);
}

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

Result<DataOptions> ParseDataOptions(const nlohmann::json& params) {
  DataOptions d;
  if (Present(params, "data")) {
    const auto& v = params.at("data");
    const std::string name = v.is_string() ? v.get<std::string>() : v.dump();
    bool known = false;
    for (DataSource s :
         {DataSource::kDevice, DataSource::kHost, DataSource::kJpegDir, DataSource::kTfRecord}) {
      if (name == DataSourceName(s)) {
        d.source = s;
        known = true;
      }
    }
    if (!known) {
      return Invalid(
          fmt::format("parameter 'data' must be one of device, host, jpeg_dir, tfrecord, got '{}'", name));
    }
  }
  if (Present(params, "data_path")) {
    const auto& v = params.at("data_path");
    if (!v.is_string())
      return Invalid(fmt::format("parameter 'data_path' must be a string, got {}", v.dump()));
    d.path = v.get<std::string>();
  }
  if (d.decodes() && d.path.empty()) {
    return Invalid(d.source == DataSource::kJpegDir
                       ? "data: jpeg_dir needs data_path, the folder of class sub-folders holding the JPEGs"
                       : "data: tfrecord needs data_path, a glob of TFRecord files (e.g. /data/train-*)");
  }
  auto workers = Int(params, "data_workers", 1, 256, "auto");
  if (!workers.ok()) return workers.error();
  if (*workers) d.workers = static_cast<int>(**workers);
  auto prefetch = Int(params, "prefetch", 1, 1024);
  if (!prefetch.ok()) return prefetch.error();
  if (*prefetch) d.prefetch = static_cast<int>(**prefetch);
  auto shuffle = Int(params, "shuffle_buffer", 0, 1'000'000'000);
  if (!shuffle.ok()) return shuffle.error();
  if (*shuffle) d.shuffle_buffer = **shuffle;
  for (auto [key, field] : {std::pair<const char*, bool*>{"pin_memory", &d.pin_memory},
                            {"async_copy", &d.async_copy},
                            {"cache", &d.cache},
                            {"skip_corrupt", &d.skip_corrupt},
                            {"pipeline_only", &d.pipeline_only}}) {
    auto b = Bool(params, key, *field);
    if (!b.ok()) return b.error();
    *field = *b;
  }
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
