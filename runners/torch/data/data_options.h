// What a torch cell asks of its input (the `data` keys of the registry; docs/input-pipeline.md),
// read from CONFIGURE's params as the registry validated them (config::RunnerParams). No LibTorch
// here, as in cell_options.h: the rules are tested in milliseconds and the runner turns an Error
// into the protocol's ERROR.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "config/runner_params.h"

namespace dlbench::torchrunner {

enum class DataSource {
  kDevice,    // the fixed batch already on the device: the compute-only control
  kHost,      // the same synthetic tensors, copied from the host every step
  kJpegDir,   // JPEG files in ImageFolder layout under `path`
  kTfRecord,  // TFRecord files of tf.train.Example matching the glob `path`
};
const char* DataSourceName(DataSource source);

struct DataOptions {
  DataSource source = DataSource::kDevice;
  std::string path;            // jpeg_dir: the folder; tfrecord: the glob
  std::optional<int> workers;  // absent: auto (ResolveDataWorkers)
  int prefetch = 2;
  bool pin_memory = false;
  bool async_copy = false;
  bool cache = false;
  std::int64_t shuffle_buffer = 10000;
  bool skip_corrupt = false;
  bool pipeline_only = false;

  // Whether the batch comes from the host (every source but kDevice).
  bool from_host() const { return source != DataSource::kDevice; }
  // Whether decode workers run (jpeg_dir, tfrecord).
  bool decodes() const { return source == DataSource::kJpegDir || source == DataSource::kTfRecord; }
};

// Reads the data keys of params the registry has checked (absent keys keep their defaults).
// kInvalidInput for what one value alone cannot say: jpeg_dir or tfrecord without data_path,
// pipeline_only with data: device (there is no pipeline to run).
Result<DataOptions> ParseDataOptions(const config::RunnerParams& p);

// kUnsupported, saying it does not apply, for pin_memory or async_copy on a CPU device: there is
// no host-to-device copy there to pin for or to overlap.
Status CheckDataSupported(const DataOptions& data, bool cuda_device);

// The CPUs this process may run on (sched_getaffinity), at least 1.
int UsableCores();
// data_workers as it runs: the request, or for auto the usable cores less one for the training
// loop (at least 1).
int ResolveDataWorkers(const std::optional<int>& requested, int usable_cores);

}  // namespace dlbench::torchrunner
