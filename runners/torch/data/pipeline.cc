#include "data/pipeline.h"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <optional>

#include "common/clock.h"
#include "data/crop.h"
#include "data/jpeg.h"
#include "data/shuffle.h"

namespace dlbench::torchrunner::data {
namespace {

// ImageNet's per-channel statistics, as torchvision's Normalize uses them.
constexpr double kMean[3] = {0.485, 0.456, 0.406};
constexpr double kStd[3] = {0.229, 0.224, 0.225};
constexpr std::size_t kCorruptExamplesKept = 20;

std::int64_t ThreadCpuNs(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A corrupt input may be skipped; a label outside the model's classes is a mismatch between data
// and model that skipping would hide.
struct SampleFailure {
  Error error;
  bool skippable = false;
};

}  // namespace

// The order of samples, batch by batch: batches are cut from one ShuffleStream in stream order,
// whichever worker asks first; those asked for early wait here until their turn.
class Pipeline::Order {
 public:
  Order(std::int64_t n, std::int64_t buffer, std::uint64_t seed, std::int64_t batch_size)
      : stream_(n, buffer, seed), batch_size_(batch_size) {}
  std::vector<std::int64_t> Take(std::int64_t batch) {
    while (generated_ <= batch) {
      std::vector<std::int64_t> indices(static_cast<std::size_t>(batch_size_));
      for (auto& i : indices) i = stream_.Next();
      pending_.emplace(generated_++, std::move(indices));
    }
    auto it = pending_.find(batch);
    std::vector<std::int64_t> out = std::move(it->second);
    pending_.erase(it);
    return out;
  }

 private:
  ShuffleStream stream_;
  std::int64_t batch_size_;
  std::int64_t generated_ = 0;
  std::map<std::int64_t, std::vector<std::int64_t>> pending_;
};

// Decoded full-size images kept after their first decode (cache: true), up to a byte limit.
class Pipeline::Cache {
 public:
  Cache(std::int64_t n, std::int64_t limit) : entries_(static_cast<std::size_t>(n)), limit_(limit) {}
  std::shared_ptr<const RgbImage> Get(std::int64_t i) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_[static_cast<std::size_t>(i)];
  }
  void Put(std::int64_t i, const RgbImage& image) {
    const auto size = static_cast<std::int64_t>(image.pixels.size());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (entries_[static_cast<std::size_t>(i)] || bytes_ + size > limit_) return;
      bytes_ += size;  // reserved before the copy, so concurrent Puts cannot overshoot the limit
      ++count_;
    }
    auto copy = std::make_shared<const RgbImage>(image);
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[static_cast<std::size_t>(i)] = std::move(copy);
  }
  std::int64_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }
  std::int64_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const RgbImage>> entries_;
  std::int64_t limit_;
  std::int64_t bytes_ = 0;
  std::int64_t count_ = 0;
};

// What one worker owns: its decoder and the buffers it reuses from sample to sample.
class Pipeline::Producer {
 public:
  JpegDecoder decoder;
  std::string bytes;
  RgbImage image;
};

Pipeline::Pipeline(std::shared_ptr<const SampleSource> source, PipelineOptions options)
    : source_(std::move(source)), options_(std::move(options)) {
  if (options_.workers < 1 || options_.prefetch < 1 || options_.batch_size < 1 || options_.out_height < 1 ||
      options_.out_width < 1 || source_ == nullptr || source_->size() < 1) {
    throw std::invalid_argument(
        "Pipeline: workers, prefetch, batch size, output size and samples must be positive");
  }
  auto float_opts = torch::TensorOptions().dtype(torch::kFloat);
  scale_ = torch::empty({3, 1, 1}, float_opts);
  shift_ = torch::empty({3, 1, 1}, float_opts);
  for (int c = 0; c < 3; ++c) {
    scale_[c].fill_(1.0 / (255.0 * kStd[c]));
    shift_[c].fill_(-kMean[c] / kStd[c]);
  }
  const std::vector<std::int64_t> sizes = {options_.batch_size, 3, options_.out_height, options_.out_width};
  auto host = torch::TensorOptions().device(torch::kCPU).pinned_memory(options_.pin_memory);
  // Enough buffers that the worker of the batch the step waits for always finds one free: the
  // other workers hold one each, at most prefetch - 1 others are ready, the step holds two (the
  // current batch and, with an asynchronous copy, the one still being copied).
  const int slots = options_.workers + options_.prefetch + 2;
  for (int i = 0; i < slots; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->batch.images = options_.image_strides.empty()
                             ? torch::empty(sizes, host.dtype(torch::kFloat))
                             : torch::empty_strided(sizes, options_.image_strides, host.dtype(torch::kFloat));
    if (options_.with_labels)
      slot->batch.labels = torch::empty({options_.batch_size}, host.dtype(torch::kLong));
    slots_.push_back(std::move(slot));
  }
  order_ =
      std::make_unique<Order>(source_->size(), options_.shuffle_buffer, options_.seed, options_.batch_size);
  corrupt_.assign(static_cast<std::size_t>(source_->size()), 0);
  corrupt_inputs_ = static_cast<std::int64_t>(source_->open_problems().size());
  for (const auto& p : source_->open_problems()) {
    if (corrupt_examples_.size() < kCorruptExamplesKept) corrupt_examples_.push_back(p.message);
  }
  if (options_.cache) cache_ = std::make_unique<Cache>(source_->size(), options_.cache_limit_bytes);

  // Workers run their ops single-threaded, as DataLoader workers do (torch.set_num_threads(1)):
  // several workers each starting an OpenMP team would oversubscribe the cores. set_num_threads
  // also sets process-wide state (the default for new threads, MKL's count), so the training
  // loop's count is put back once every worker has set its own.
  const int loop_threads = at::get_num_threads();
  start_ns_ = MonotonicNowNs();
  // Every Worker exists before any thread starts: a running worker reads workers_.
  for (int w = 0; w < options_.workers; ++w) workers_.push_back(std::make_unique<Worker>());
  for (int w = 0; w < options_.workers; ++w) {
    Worker& worker = *workers_[static_cast<std::size_t>(w)];
    worker.thread = std::thread([this, w] { RunWorker(w); });
    pthread_getcpuclockid(worker.thread.native_handle(), &worker.cpu_clock);
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    started_cv_.wait(lock, [this] { return started_ == options_.workers; });
  }
  at::set_num_threads(loop_threads);
}

Pipeline::~Pipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    stopping_ = true;
  }
  free_cv_.notify_all();
  room_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::vector<std::int64_t> Pipeline::BatchIndices(std::int64_t batch) {
  std::lock_guard<std::mutex> lock(order_mutex_);
  return order_->Take(batch);
}

void Pipeline::RunWorker(int w) {
  (void)at::get_num_threads();  // initialise this thread's OpenMP state first, then override it
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++started_;
  }
  started_cv_.notify_all();
  Worker& worker = *workers_[static_cast<std::size_t>(w)];
  Producer producer;
  for (std::int64_t b = w;; b += options_.workers) {
    Slot* slot = nullptr;
    {
      const std::int64_t t0 = MonotonicNowNs();
      std::unique_lock<std::mutex> lock(mutex_);
      free_cv_.wait(lock, [this, &slot] {
        if (stop_) return true;
        for (auto& s : slots_) {
          if (s->state == SlotState::kFree) {
            slot = s.get();
            return true;
          }
        }
        return false;
      });
      if (stop_) return;
      slot->state = SlotState::kFilling;
      slot->batch.index = b;
      slot->batch.worker = w;
      slot->error = nullptr;
      worker.blocked_ns += MonotonicNowNs() - t0;
    }
    try {
      FillBatch(producer, worker, *slot);
    } catch (...) {
      slot->error = std::current_exception();
    }
    if (stopping_) return;
    {
      const std::int64_t t0 = MonotonicNowNs();
      std::unique_lock<std::mutex> lock(mutex_);
      room_cv_.wait(lock, [this, b] { return stop_ || b < next_batch_ + options_.prefetch; });
      if (stop_) return;
      worker.blocked_ns += MonotonicNowNs() - t0;
      // Counted before it is published: a consumer that has the batch sees it counted.
      ++worker.batches;
      slot->state = SlotState::kReady;
    }
    ready_cv_.notify_all();
    if (slot->error) return;  // the step rethrows it; this worker has nothing more to add
  }
}

void Pipeline::FillBatch(Producer& p, Worker& worker, Slot& slot) {
  const std::vector<std::int64_t> indices = BatchIndices(slot.batch.index);
  const std::int64_t n = source_->size();
  for (std::int64_t i = 0; i < options_.batch_size; ++i) {
    if (stopping_) return;
    const std::int64_t position = slot.batch.index * options_.batch_size + i;
    std::int64_t index = indices[static_cast<std::size_t>(i)];
    for (std::int64_t attempt = 0;; ++attempt) {
      if (attempt >= n) {
        std::lock_guard<std::mutex> lock(corrupt_mutex_);
        throw DataError(
            fmt::format("every one of the {} samples is corrupt (the first: {})", n,
                        corrupt_examples_.empty() ? std::string("?") : corrupt_examples_.front()));
      }
      bool known_corrupt = false;
      if (options_.skip_corrupt) {
        std::lock_guard<std::mutex> lock(corrupt_mutex_);
        known_corrupt = corrupt_[static_cast<std::size_t>(index)] != 0;
      }
      if (known_corrupt) {
        ++skipped_;
        index = (index + 1) % n;
        continue;
      }
      // One sample: read, decode, transform into row i of the batch.
      SplitMix64 rng(MixSeed(options_.seed, static_cast<std::uint64_t>(position)));
      std::int64_t label = 0;
      std::optional<SampleFailure> failure;
      const std::int64_t t0 = MonotonicNowNs();
      Status read = source_->Read(index, p.bytes, label);
      const std::int64_t t1 = MonotonicNowNs();
      worker.read_ns += t1 - t0;
      if (!read.ok()) {
        failure = SampleFailure{read.error(), read.error().kind == ErrorKind::kInvalidInput};
      } else if (options_.label_limit >= 0 && (label < 0 || label >= options_.label_limit)) {
        failure = SampleFailure{
            MakeError(ErrorKind::kInvalidInput,
                      fmt::format("label {} is outside [0, {}), the model's classes (set num_classes; "
                                  "ImageNet TFRecords count classes from 1 and need num_classes: 1001)",
                                  label, options_.label_limit)),
            false};
      }
      std::shared_ptr<const RgbImage> cached;
      const RgbImage* image = &p.image;
      CropBox box;
      Scale scale{1, 1};
      int width = 0, height = 0;
      if (!failure) {
        if (cache_) cached = cache_->Get(index);
        if (cached) {
          ++worker.cache_hits;
          image = cached.get();
          width = image->width;
          height = image->height;
        } else {
          auto info = p.decoder.ReadHeader(p.bytes);
          if (!info.ok()) {
            failure = SampleFailure{info.error(), true};
          } else {
            width = info->width;
            height = info->height;
          }
        }
      }
      if (!failure) {
        box = options_.train ? RandomResizedCropBox(width, height, rng)
                             : CenterCropBox(width, height, options_.out_width, options_.out_height);
        if (!cached) {
          // The cache keeps full-size images: later epochs crop them elsewhere.
          scale = cache_ ? Scale{1, 1} : ChooseScale(box, options_.out_width, options_.out_height);
          Status decoded = p.decoder.Decode(p.bytes, scale, p.image);
          if (!decoded.ok()) {
            failure = SampleFailure{decoded.error(), true};
          } else if (cache_) {
            cache_->Put(index, p.image);
          }
        }
      }
      const std::int64_t t2 = MonotonicNowNs();
      worker.decode_ns += t2 - t1;
      if (failure) {
        std::string message = failure->error.message;
        if (read.ok()) message = fmt::format("{}: {}", source_->Where(index), message);
        if (!options_.skip_corrupt || !failure->skippable) throw DataError(message);
        {
          std::lock_guard<std::mutex> lock(corrupt_mutex_);
          if (corrupt_[static_cast<std::size_t>(index)] == 0) {
            corrupt_[static_cast<std::size_t>(index)] = 1;
            ++corrupt_inputs_;
            if (corrupt_examples_.size() < kCorruptExamplesKept) corrupt_examples_.push_back(message);
          }
        }
        ++skipped_;
        index = (index + 1) % n;
        continue;
      }
      const CropBox sbox = ScaleBox(box, width, height, scale);
      torch::Tensor hwc = torch::from_blob(const_cast<std::uint8_t*>(image->pixels.data()),
                                           {image->height, image->width, 3}, torch::kUInt8);
      torch::Tensor x = hwc.narrow(0, sbox.y, sbox.height)
                            .narrow(1, sbox.x, sbox.width)
                            .permute({2, 0, 1})
                            .unsqueeze(0)
                            .to(torch::kFloat);
      if (sbox.height != options_.out_height || sbox.width != options_.out_width) {
        // Bilinear with antialiasing, as torchvision's resized_crop on tensors (antialias=True).
        x = torch::nn::functional::interpolate(
            x, torch::nn::functional::InterpolateFuncOptions()
                   .size(std::vector<std::int64_t>{options_.out_height, options_.out_width})
                   .mode(torch::kBilinear)
                   .align_corners(false)
                   .antialias(true));
      }
      if (options_.train && rng.Uniform() < 0.5) x = x.flip({3});
      torch::Tensor row = slot.batch.images[i];
      row.copy_(x[0]);
      row.mul_(scale_).add_(shift_);
      if (options_.with_labels) slot.batch.labels.data_ptr<std::int64_t>()[i] = label;
      worker.transform_ns += MonotonicNowNs() - t2;
      ++worker.samples;
      break;
    }
  }
}

HostBatch& Pipeline::Next() {
  std::unique_lock<std::mutex> lock(mutex_);
  Slot* found = nullptr;
  ready_cv_.wait(lock, [this, &found] {
    for (auto& s : slots_) {
      if (s->state == SlotState::kReady && s->batch.index == next_batch_) {
        found = s.get();
        return true;
      }
    }
    return stop_;
  });
  if (found == nullptr) throw std::runtime_error("the input pipeline stopped");
  found->state = SlotState::kTaken;
  ++next_batch_;
  lock.unlock();
  room_cv_.notify_all();
  if (found->error) std::rethrow_exception(found->error);
  return found->batch;
}

void Pipeline::Release(HostBatch& batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : slots_) {
      if (&s->batch == &batch) s->state = SlotState::kFree;
    }
  }
  free_cv_.notify_one();
}

PipelineCounters Pipeline::Counters() const {
  PipelineCounters c;
  c.wall_ns = MonotonicNowNs() - start_ns_;
  for (const auto& w : workers_) {
    WorkerCounters wc;
    wc.batches = w->batches;
    wc.samples = w->samples;
    wc.read_ns = w->read_ns;
    wc.decode_ns = w->decode_ns;
    wc.transform_ns = w->transform_ns;
    wc.blocked_ns = w->blocked_ns;
    wc.cache_hits = w->cache_hits;
    wc.cpu_ns = ThreadCpuNs(w->cpu_clock);
    c.workers.push_back(wc);
  }
  {
    std::lock_guard<std::mutex> lock(corrupt_mutex_);
    c.corrupt_inputs = corrupt_inputs_;
    c.corrupt_examples = corrupt_examples_;
  }
  c.skipped_samples = skipped_;
  if (cache_) {
    c.cache_entries = cache_->count();
    c.cache_bytes = cache_->bytes();
  }
  return c;
}

}  // namespace dlbench::torchrunner::data
