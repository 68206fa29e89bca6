#include "data/feeder.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/clock.h"
#include "failure.h"
#include "record/metrics.h"

namespace dlbench::torchrunner::data {
namespace {

// Half of MemAvailable when the cell starts: what cache: true may hold.
std::int64_t CacheLimitBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024 / 2;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / 2 : 0;
}

std::string Shape(const torch::Tensor& t) {
  std::string s;
  for (std::int64_t d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return fmt::format("{} {}", c10::toString(t.scalar_type()), s);
}

nlohmann::json Metric(std::string_view name, double value) {
  return {{"name", name}, {"value", value}, {"unit", record::MetricUnit(name)}};
}

torch::Tensor EmptyLike(const torch::Tensor& t, torch::TensorOptions options) {
  return torch::empty_strided(t.sizes(), t.strides(), options.dtype(t.scalar_type()));
}

}  // namespace

Feeder::Feeder(const TorchCell& cell, Workload& workload, torch::Device device, std::uint64_t seed)
    : options_(cell.data), device_(device), train_(Trains(cell.scenario)) {
  if (options_.source == DataSource::kDevice) return;
  feed_ = workload.FeedTensors();
  auto host_options = torch::TensorOptions().device(torch::kCPU).pinned_memory(options_.pin_memory);
  if (options_.source == DataSource::kHost) {
    for (const torch::Tensor& t : feed_) {
      torch::Tensor h = EmptyLike(t, host_options);
      h.copy_(t);
      host_.push_back(h);
    }
  } else {
    const std::string model = workload.name();
    std::string takes;
    for (const auto& t : feed_) takes += (takes.empty() ? "" : ", ") + Shape(t);
    const bool image = !feed_.empty() && feed_[0].dim() == 4 && feed_[0].size(1) == 3 &&
                       c10::isFloatingType(feed_[0].scalar_type()) && feed_[0].size(0) == cell.batch_size;
    const bool labels = feed_.size() == 2 && feed_[1].dim() == 1 && feed_[1].scalar_type() == torch::kLong &&
                        feed_[1].size(0) == cell.batch_size;
    if (!image || feed_.size() > 2 || (feed_.size() == 2 && !labels)) {
      throw UnsupportedError(fmt::format(
          "unsupported: data: {} feeds image models, whose inputs are a [B,3,H,W] float image batch and, for "
          "training a classifier, [B] int64 class labels; {} takes {} (use data: device or host)",
          DataSourceName(options_.source), model, takes));
    }
    auto opened = options_.source == DataSource::kJpegDir
                      ? OpenJpegFolder(options_.path)
                      : OpenTfRecords(options_.path, options_.skip_corrupt);
    if (!opened.ok()) throw DataError(opened.error().message);
    source_ = std::move(*opened);
    std::optional<std::int64_t> classes;
    if (labels) classes = workload.NumClasses();
    if (classes && source_->num_classes() > *classes) {
      throw DataError(
          fmt::format("jpeg_dir '{}' has {} classes but {} has num_classes {}; set num_classes: {}",
                      options_.path, source_->num_classes(), model, *classes, source_->num_classes()));
    }
    usable_cores_ = UsableCores();
    workers_ = ResolveDataWorkers(options_.workers, usable_cores_);
    PipelineOptions p;
    p.workers = workers_;
    p.prefetch = options_.prefetch;
    p.batch_size = cell.batch_size;
    p.out_height = static_cast<int>(feed_[0].size(2));
    p.out_width = static_cast<int>(feed_[0].size(3));
    p.image_strides = feed_[0].strides().vec();
    p.with_labels = labels;
    p.label_limit = classes.value_or(-1);
    p.train = train_;
    p.cache = options_.cache;
    p.cache_limit_bytes = options_.cache ? CacheLimitBytes() : 0;
    p.shuffle_buffer = options_.shuffle_buffer;
    p.skip_corrupt = options_.skip_corrupt;
    p.pin_memory = options_.pin_memory;
    p.seed = seed;
    pipeline_ = std::make_unique<Pipeline>(source_, p);
  }
  if (options_.async_copy && device_.is_cuda()) {
    copier_ = MakeSideStreamCopier(device_.index());
    if (!copier_) throw UnsupportedError("unsupported: async_copy needs a LibTorch with CUDA");
    for (auto& buffers : device_buffers_) {
      for (const torch::Tensor& t : feed_) buffers.push_back(EmptyLike(t, t.options()));
    }
    // Batch 0 goes to the device before the first step; every step then starts the next copy.
    const std::vector<torch::Tensor>* first = &host_;
    std::vector<torch::Tensor> tensors;
    if (pipeline_) {
      held_[0] = &pipeline_->Next();
      tensors = {held_[0]->images};
      if (held_[0]->labels.defined()) tensors.push_back(held_[0]->labels);
      first = &tensors;
    }
    scratch_.resize(feed_.size());
    copier_->CopyAsync(device_buffers_[0], *first, 0);
    copier_->Wait(0);
    if (held_[0] != nullptr) pipeline_->Release(*held_[0]);
    held_[0] = nullptr;
    for (std::size_t i = 0; i < feed_.size(); ++i) feed_[i].set_data(device_buffers_[0][i]);
  }
}

Feeder::~Feeder() {
  // A copy may still be in flight into memory that is about to be freed. After a device fault the
  // synchronize throws; the process is ending the cell anyway, and a destructor must not throw.
  if (!device_.is_cuda()) return;
  try {
    torch::cuda::synchronize(device_.index());
  } catch (...) {
  }
}

void Feeder::Load(const std::vector<torch::Tensor>& host) {
  const bool non_blocking = options_.pin_memory;
  for (std::size_t i = 0; i < feed_.size(); ++i) feed_[i].copy_(host[i], non_blocking);
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
}

void Feeder::BeginStep(protocol::StepRecord& record) {
  const std::int64_t t0 = MonotonicNowNs();
  std::int64_t t1 = t0;
  if (options_.source == DataSource::kDevice) {
    compute_begin_ns_ = t0;
  } else if (!copier_) {
    if (pipeline_) {
      HostBatch& batch = pipeline_->Next();
      t1 = MonotonicNowNs();
      // The two tensors of a pipeline batch, without building a vector (no allocation here).
      feed_[0].copy_(batch.images, options_.pin_memory);
      if (batch.labels.defined()) feed_[1].copy_(batch.labels, options_.pin_memory);
      if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
      pipeline_->Release(batch);
    } else {
      Load(host_);
    }
    compute_begin_ns_ = MonotonicNowNs();
  } else {
    const int next = 1 - current_;
    if (pipeline_) {
      held_[next] = &pipeline_->Next();
      t1 = MonotonicNowNs();
      HostBatch& b = *held_[next];
      scratch_[0] = b.images;
      if (feed_.size() == 2) scratch_[1] = b.labels;
      copier_->CopyAsync(device_buffers_[next], scratch_, next);
    } else {
      copier_->CopyAsync(device_buffers_[next], host_, next);
    }
    copier_->Wait(current_);  // this step's batch, whose copy the previous step started
    if (held_[current_] != nullptr) {
      pipeline_->Release(*held_[current_]);
      held_[current_] = nullptr;
    }
    for (std::size_t i = 0; i < feed_.size(); ++i) feed_[i].set_data(device_buffers_[current_][i]);
    compute_begin_ns_ = MonotonicNowNs();
  }
  record.data_wait_ns = t1 - t0;
  record.present |= record::kHasDataWait;
}

void Feeder::EndStep(protocol::StepRecord& record) {
  if (options_.pipeline_only) {
    if (copier_) current_ = 1 - current_;
    return;
  }
  record.compute_ns = MonotonicNowNs() - compute_begin_ns_;
  record.present |= record::kHasCompute;
  if (copier_) current_ = 1 - current_;
}

void Feeder::Synchronize() {
  if (copier_) {
    copier_->SynchronizeCompute();
  } else if (device_.is_cuda()) {
    torch::cuda::synchronize(device_.index());
  }
}

void Feeder::MarkSteady() {
  if (pipeline_) steady_ = pipeline_->Counters();
}

void Feeder::MarkEnd() {
  if (pipeline_) end_ = pipeline_->Counters();
}

nlohmann::json Feeder::Effective() const {
  nlohmann::json e = {
      {"data", DataSourceName(options_.source)},
      {"pipeline_only", options_.pipeline_only},
      {"step_phases",
       {{"data_wait_ns", "waiting for the step's host batch from the pipeline (0 for device and host)"},
        {"compute_ns", options_.pipeline_only
                           ? "absent: pipeline_only runs no model"
                           : "forward, backward and optimizer, to the closing synchronisation"},
        // What end - start - data_wait - compute is: the copy for host-fed sources.
        {"remainder", options_.source == DataSource::kDevice ? "none" : "copy"},
        {"remainder_is", options_.source == DataSource::kDevice
                             ? "nothing but clock reads: the batch stays on the device"
                             : (copier_ ? "starting the next batch's asynchronous copy and waiting for this "
                                          "batch's, which the previous step started"
                                        : "the host-to-device copy of the batch")}}},
  };
  if (options_.source == DataSource::kDevice) return e;
  e["pin_memory"] = options_.pin_memory;
  e["async_copy"] = copier_ != nullptr;
  if (!pipeline_) return e;
  e["data_path"] = options_.path;
  e["data_workers"] = workers_;
  e["data_workers_requested"] = options_.workers ? nlohmann::json(*options_.workers) : nlohmann::json("auto");
  e["usable_cores"] = usable_cores_;
  e["prefetch"] = options_.prefetch;
  e["cache"] = options_.cache;
  e["shuffle_buffer"] = options_.shuffle_buffer;
  e["skip_corrupt"] = options_.skip_corrupt;
  e["data_source"] = source_->Describe();
  e["worker_intraop_threads"] = 1;
  const auto& p = pipeline_->options();
  e["image_transform"] = fmt::format(
      "{}; libjpeg-turbo decode at the smallest DCT scale that keeps the crop at least {}x{}{}; bilinear "
      "antialiased resize to {}x{} (LibTorch); ImageNet mean/std normalisation",
      train_ ? "RandomResizedCrop (scale 0.08-1, ratio 3/4-4/3) and horizontal flip p=0.5 (training)"
             : "Resize (shorter side to output / 0.875) and CenterCrop (inference)",
      p.out_width, p.out_height, options_.cache ? " (full size when cached)" : "", p.out_width, p.out_height);
  if (options_.cache) e["cache_limit_bytes"] = p.cache_limit_bytes;
  return e;
}

void Feeder::AddExtras(nlohmann::json& metrics, nlohmann::json& info) const {
  if (!pipeline_) return;
  const PipelineCounters end = end_ ? *end_ : pipeline_->Counters();
  const PipelineCounters begin =
      steady_.value_or(PipelineCounters{0, std::vector<WorkerCounters>(end.workers.size())});
  const double wall = static_cast<double>(end.wall_ns - begin.wall_ns);
  double cpu = 0, busy = 0, read = 0, decode = 0, transform = 0, samples = 0, hits = 0;
  nlohmann::json per_worker = nlohmann::json::array();
  for (std::size_t w = 0; w < end.workers.size(); ++w) {
    const WorkerCounters& a = begin.workers[w];
    const WorkerCounters& b = end.workers[w];
    cpu += static_cast<double>(b.cpu_ns - a.cpu_ns);
    read += static_cast<double>(b.read_ns - a.read_ns);
    decode += static_cast<double>(b.decode_ns - a.decode_ns);
    transform += static_cast<double>(b.transform_ns - a.transform_ns);
    samples += static_cast<double>(b.samples - a.samples);
    hits += static_cast<double>(b.cache_hits - a.cache_hits);
    per_worker.push_back({{"worker", w},
                          {"batches", b.batches},
                          {"samples", b.samples},
                          {"cpu_s", NsToSeconds(b.cpu_ns)},
                          {"busy_s", NsToSeconds(b.busy_ns())},
                          {"blocked_s", NsToSeconds(b.blocked_ns)}});
  }
  busy = read + decode + transform;
  const double n = static_cast<double>(end.workers.size());
  if (wall > 0 && n > 0) {
    metrics.push_back(Metric(record::metric::kDataWorkerCpuUtilPct, 100.0 * cpu / (n * wall)));
    metrics.push_back(Metric(record::metric::kDataWorkerBusyPct, 100.0 * busy / (n * wall)));
  }
  if (busy > 0) {
    metrics.push_back(Metric(record::metric::kDataSamplesPerWorkerS, samples / (busy * 1e-9)));
    metrics.push_back(Metric(record::metric::kDataReadPct, 100.0 * read / busy));
    metrics.push_back(Metric(record::metric::kDataDecodePct, 100.0 * decode / busy));
    metrics.push_back(Metric(record::metric::kDataTransformPct, 100.0 * transform / busy));
  }
  if (options_.cache && samples > 0)
    metrics.push_back(Metric(record::metric::kDataCacheHitPct, 100.0 * hits / samples));
  if (options_.skip_corrupt) {
    metrics.push_back(Metric(record::metric::kDataCorruptInputs, static_cast<double>(end.corrupt_inputs)));
    metrics.push_back(Metric(record::metric::kDataSkippedSamples, static_cast<double>(end.skipped_samples)));
  }
  info["data_workers"] = per_worker;
  info["data_counted_from"] = steady_ ? "the warm-up snapshot (after 3 steps)" : "the pipeline's start";
  if (!end.corrupt_examples.empty()) info["data_corrupt_examples"] = end.corrupt_examples;
  if (options_.cache) {
    info["data_cache_entries"] = end.cache_entries;
    info["data_cache_bytes"] = end.cache_bytes;
  }
}

}  // namespace dlbench::torchrunner::data
