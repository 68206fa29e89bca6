// The input pipeline of jpeg_dir and tfrecord cells: worker threads that read, decode and
// augment images into host batches, handed to the step in order (docs/input-pipeline.md).
//
// Batch b is made by worker b mod workers (PyTorch DataLoader's round-robin), so the work split is
// fixed and batch b's contents depend only on the seed: the sample order comes from one
// ShuffleStream and each sample's crop and flip from a generator seeded by its position in the
// stream. At most `prefetch` finished batches wait for the step; each worker holds the one it is
// making (or has made and may not yet publish). Workers run their LibTorch ops single-threaded.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "data/sources.h"

namespace dlbench::torchrunner::data {

// Corrupt or unusable input (a JPEG that does not decode, a record whose CRC is wrong, a missing
// key, a label outside the model's classes). The runner reports it as an invalid cell.
class DataError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct PipelineOptions {
  int workers = 1;
  int prefetch = 2;
  std::int64_t batch_size = 1;
  int out_height = 224;
  int out_width = 224;
  // Strides of the images tensor the model reads ([B,3,H,W]); the host batch gets the same, so
  // the copy to the device is one memcpy. Empty: contiguous (NCHW).
  std::vector<std::int64_t> image_strides;
  bool with_labels = true;
  std::int64_t label_limit = -1;  // >= 0: every label must lie in [0, label_limit)
  bool train = true;              // RandomResizedCrop + flip; false: Resize + CenterCrop
  bool cache = false;
  std::int64_t cache_limit_bytes = 0;
  std::int64_t shuffle_buffer = 0;
  bool skip_corrupt = false;
  bool pin_memory = false;  // host batches in page-locked memory (CUDA builds only)
  std::uint64_t seed = 0;
};

// A batch as the workers made it: normalised float32 images [B,3,H,W] (ImageNet mean and std) and
// int64 labels [B] (undefined without labels).
struct HostBatch {
  torch::Tensor images;
  torch::Tensor labels;
  std::int64_t index = -1;  // position in the stream of batches
  int worker = -1;          // the worker that made it: index mod workers
};

// Cumulative counters of one worker since the pipeline started.
struct WorkerCounters {
  std::int64_t batches = 0;
  std::int64_t samples = 0;
  std::int64_t read_ns = 0;       // reading the encoded bytes (file or record)
  std::int64_t decode_ns = 0;     // JPEG header and decode
  std::int64_t transform_ns = 0;  // crop, resize, flip, normalise, into the batch
  std::int64_t blocked_ns = 0;    // waiting for a free batch buffer or for room ahead of the step
  std::int64_t cpu_ns = 0;        // the thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
  std::int64_t cache_hits = 0;
  std::int64_t busy_ns() const { return read_ns + decode_ns + transform_ns; }
};

struct PipelineCounters {
  std::int64_t wall_ns = 0;  // since the workers started
  std::vector<WorkerCounters> workers;
  std::int64_t corrupt_inputs = 0;   // distinct corrupt samples (and broken files at open)
  std::int64_t skipped_samples = 0;  // times a corrupt sample was replaced by the next good one
  std::int64_t cache_entries = 0;
  std::int64_t cache_bytes = 0;
  std::vector<std::string> corrupt_examples;  // the first messages, naming file and offset
};

class Pipeline {
 public:
  // Starts the workers. Throws std::invalid_argument for options that cannot work.
  Pipeline(std::shared_ptr<const SampleSource> source, PipelineOptions options);
  ~Pipeline();  // stops and joins the workers
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The next batch in stream order; blocks until it is ready. Rethrows what went wrong making it
  // (DataError for bad input). No allocation: callable inside a timed step.
  HostBatch& Next();
  // Gives a batch from Next back; its buffers are refilled afterwards. Call once the batch's copy
  // to the device has finished.
  void Release(HostBatch& batch);
  PipelineCounters Counters() const;
  const PipelineOptions& options() const { return options_; }
  const SampleSource& source() const { return *source_; }

 private:
  enum class SlotState { kFree, kFilling, kReady, kTaken };
  struct Slot {
    HostBatch batch;
    SlotState state = SlotState::kFree;
    std::exception_ptr error;
  };
  struct alignas(64) Worker {
    std::thread thread;
    clockid_t cpu_clock{};
    std::atomic<std::int64_t> batches{0}, samples{0}, read_ns{0}, decode_ns{0}, transform_ns{0},
        blocked_ns{0}, cache_hits{0};
  };
  class Producer;  // one worker's decoder and scratch buffers

  void RunWorker(int w);
  std::vector<std::int64_t> BatchIndices(std::int64_t batch);
  void FillBatch(Producer& producer, Worker& worker, Slot& slot);

  std::shared_ptr<const SampleSource> source_;
  PipelineOptions options_;
  std::int64_t start_ns_ = 0;
  torch::Tensor scale_, shift_;  // normalisation: x * scale + shift, per channel [3,1,1]

  mutable std::mutex mutex_;
  std::condition_variable free_cv_, ready_cv_, room_cv_, started_cv_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::int64_t next_batch_ = 0;  // the batch Next returns next
  bool stop_ = false;
  std::atomic<bool> stopping_{false};
  int started_ = 0;

  std::mutex order_mutex_;  // the sample order
  class Order;
  std::unique_ptr<Order> order_;

  mutable std::mutex corrupt_mutex_;
  std::vector<std::uint8_t> corrupt_;  // per sample: known to be corrupt
  std::int64_t corrupt_inputs_ = 0;
  std::vector<std::string> corrupt_examples_;
  std::atomic<std::int64_t> skipped_{0};

  class Cache;
  std::unique_ptr<Cache> cache_;

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace dlbench::torchrunner::data
