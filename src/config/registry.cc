#include "config/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "common/text.h"
#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"

namespace dlbench::config {
namespace {

// Fluent construction of one entry, so the table below reads as a table.
class Entry {
 public:
  Entry(std::string name, ParamSection section, Scope scope, ParamType type) {
    spec_.name = std::move(name);
    spec_.section = section;
    spec_.scope = scope;
    spec_.type = type;
  }
  Entry& Unit(std::string unit) {
    spec_.unit = std::move(unit);
    return *this;
  }
  Entry& Default(Value value) {
    spec_.default_value = std::move(value);
    return *this;
  }
  Entry& DefaultText(std::string text) {
    spec_.default_text = std::move(text);
    return *this;
  }
  Entry& DefaultFrom(std::string name) {
    spec_.default_from = std::move(name);
    return *this;
  }
  Entry& Allowed(std::vector<std::string> values) {
    spec_.allowed = std::move(values);
    return *this;
  }
  Entry& Keywords(std::vector<std::string> words) {
    spec_.keywords = std::move(words);
    return *this;
  }
  Entry& Min(double value, bool inclusive = true) {
    spec_.min = Bound{value, inclusive};
    return *this;
  }
  Entry& Max(double value, bool inclusive = true) {
    spec_.max = Bound{value, inclusive};
    return *this;
  }
  Entry& Format(StringFormat format) {
    spec_.format = format;
    return *this;
  }
  Entry& RequiredWith(std::string runner) {
    spec_.required_with = std::move(runner);
    return *this;
  }
  Entry& Label(std::string label) {
    spec_.label = std::move(label);
    return *this;
  }
  Entry& Help(std::string help) {
    spec_.help = std::move(help);
    return *this;
  }
  Entry& Estimate(EstimateHint hint) {
    spec_.estimate = hint;
    return *this;
  }
  ParamSpec Build() { return std::move(spec_); }

 private:
  ParamSpec spec_;
};

Value Int(std::int64_t v) { return Value(v); }
Value Num(double v) { return Value(v); }
Value Str(const char* v) { return Value(std::string(v)); }

const char* OrderingName(Ordering ordering) {
  return ordering == Ordering::kInterleaved ? "interleaved" : "grouped";
}

std::vector<ParamSpec> BuildRegistry() {
  // Defaults of top-level and measure keys are read from the structs' initialisers so that the
  // struct in matrix.h and this table cannot disagree.
  const Matrix matrix_defaults;
  const MeasureSettings measure_defaults;
  constexpr auto kTop = ParamSection::kTopLevel;
  constexpr auto kMeas = ParamSection::kMeasure;
  constexpr auto kCell = ParamSection::kCell;
  constexpr auto kCore = Scope::kCore;
  constexpr auto kNull = Scope::kNull;
  constexpr auto kTorch = Scope::kTorch;
  constexpr auto kLoad = Scope::kLoad;
  constexpr auto kInput = Scope::kInputSize;
  const std::string kModelSize = "model's standard";
  std::vector<ParamSpec> r;

  // Top-level keys.
  r.push_back(Entry("name", kTop, kCore, ParamType::kString)
                  .Help("A name for the matrix, stored with the run and shown in reports.")
                  .Build());
  r.push_back(Entry("runner", kTop, kCore, ParamType::kRunner)
                  .Default(Value(matrix_defaults.runner.name))
                  .Help("The program that runs each cell: `null` (the built-in runner that does no "
                        "work), `torch` (the LibTorch runner) or `{command: [argv...]}` for any "
                        "program that speaks the runner protocol.")
                  .Build());
  r.push_back(Entry("matrix", kTop, kCore, ParamType::kMapping)
                  .DefaultText("required")
                  .Help("The axes: cell parameter -> a value or a list of values. Required, with "
                        "at least one parameter.")
                  .Build());
  r.push_back(Entry("exclude", kTop, kCore, ParamType::kMappingList)
                  .Help("Entries of axis values; a combination matching every key of an entry is "
                        "dropped.")
                  .Build());
  r.push_back(Entry("include", kTop, kCore, ParamType::kMappingList)
                  .Help("Entries that extend combinations or add new ones (GitHub Actions "
                        "semantics, below).")
                  .Build());
  r.push_back(Entry("repetitions", kTop, kCore, ParamType::kInt)
                  .Default(Int(matrix_defaults.repetitions))
                  .Min(1)
                  .Max(100000)
                  .Help("How many times each cell runs, each time in a fresh process. At most 100000, the "
                        "cell limit of a run (docs/limits.md).")
                  .Build());
  r.push_back(Entry("seed", kTop, kCore, ParamType::kInt)
                  .Default(Int(static_cast<std::int64_t>(matrix_defaults.seed)))
                  .Min(0)
                  .Help("Base seed; each cell and repetition derives its own (see Seeds).")
                  .Build());
  r.push_back(
      Entry("timeout_s", kTop, kCore, ParamType::kNumber)
          .Unit("s")
          .Default(Num(matrix_defaults.timeout_s))
          .Min(0, false)
          .Max(604800)
          .Help("Per cell, from spawn to exit; a cell that exceeds it ends as timeout. At most 604800 (a "
                "week): longer is a hung cell, and deadlines stay within 64-bit nanoseconds.")
          .Build());
  r.push_back(Entry("ordering", kTop, kCore, ParamType::kEnum)
                  .Allowed({"grouped", "interleaved"})
                  .Default(Str(OrderingName(matrix_defaults.ordering)))
                  .Help("Run order: `grouped` keeps plan order with a cell's repetitions adjacent; "
                        "`interleaved` shuffles the cells anew for each round of repetitions.")
                  .Build());
  r.push_back(Entry("order_seed", kTop, kCore, ParamType::kInt)
                  .Default(Int(static_cast<std::int64_t>(matrix_defaults.order_seed)))
                  .Min(0)
                  .Help("Seed of the interleaved shuffle; the same seed gives the same order on "
                        "every platform.")
                  .Build());
  r.push_back(Entry("measure", kTop, kCore, ParamType::kMapping)
                  .DefaultText("all defaults")
                  .Help("The measurement policy's settings (keys below).")
                  .Build());

  // measure: keys, one per MeasureSettings field.
  r.push_back(Entry("min_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.min_steps))
                  .Min(1)
                  .Max(10000000)
                  .Help("Never stop with fewer measured (post-warm-up) steps. At most 10000000: the driver "
                        "keeps every step of a cell (48 bytes each) in memory and in the store.")
                  .Build());
  r.push_back(Entry("max_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.max_steps))
                  .Min(1)
                  .Max(10000000)
                  .Help("Stop here whatever the confidence interval says; >= min_steps. At most 10000000: "
                        "the driver keeps every step of a cell (48 bytes each) in memory and in the store.")
                  .Build());
  r.push_back(Entry("min_time_s", kMeas, kCore, ParamType::kNumber)
                  .Unit("s")
                  .Default(Num(measure_defaults.min_time_s))
                  .Min(0)
                  .Max(604800)
                  .Help("Never stop with less measured time. At most 604800 (a week), like timeout_s.")
                  .Build());
  r.push_back(Entry("max_time_s", kMeas, kCore, ParamType::kNumber)
                  .Unit("s")
                  .Default(Num(measure_defaults.max_time_s))
                  .Min(0, false)
                  .Max(604800)
                  .Help("Stop here whatever the confidence interval says; >= min_time_s. At most 604800 (a "
                        "week), like timeout_s.")
                  .Build());
  r.push_back(Entry("target_rel_ci", kMeas, kCore, ParamType::kNumber)
                  .Default(Num(measure_defaults.target_rel_ci))
                  .Min(0, false)
                  .Max(1, false)
                  .Help("Stop when the confidence interval's half-width divided by the mean step "
                        "time is below this.")
                  .Build());
  r.push_back(Entry("ci_level", kMeas, kCore, ParamType::kNumber)
                  .Default(Num(measure_defaults.ci_level))
                  .Min(0.5, false)
                  .Max(1, false)
                  .Help("Confidence level of that interval.")
                  .Build());
  r.push_back(Entry("min_warmup_steps", kMeas, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(measure_defaults.min_warmup_steps))
                  .Min(0)
                  .Max(10000000)
                  .Help("The warm-up cut is never earlier than this step. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(
      Entry("idle_baseline_s", kMeas, kCore, ParamType::kNumber)
          .Unit("s")
          .Min(0)
          .Max(3600)
          .Help("Seconds of device and host sampling before the cell starts, as a "
                "baseline; absent: none. At most 3600 (an hour), so that a wrong unit is caught here.")
          .Build());
  r.push_back(Entry("sample_interval_ms", kMeas, kCore, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(measure_defaults.sample_interval_ms))
                  .Min(1)
                  .Max(60000)
                  .Help("Interval of the device and host monitor's samples. At least 1: faster sampling "
                        "would only spin the monitor thread and fill memory. At most 60000 (a minute).")
                  .Build());

  // Cell parameters every runner understands.
  r.push_back(Entry("model", kCell, kCore, ParamType::kString)
                  .RequiredWith("torch")
                  .Label("=")
                  .Help("The model to run: a name from the torch runner's model zoo, "
                        "`torchscript` with model_path, or `allreduce` (strategy: ddp: each step one "
                        "all-reduce of allreduce_bytes, nothing else). Other runners record it.")
                  .Build());
  r.push_back(Entry("scenario", kCell, kCore, ParamType::kEnum)
                  .Allowed({"train", "infer", "converge"})
                  .Default(Str("train"))
                  .Label("=")
                  .Help("`train`: forward, backward and optimizer step; `infer`: forward only; `converge`: "
                        "train on a real dataset until a target quality on its held-out set "
                        "(docs/convergence.md; torch runner).")
                  .Build());
  r.push_back(Entry("batch_size", kCell, kCore, ParamType::kInt)
                  .Unit("samples")
                  .Default(Int(1))
                  .Min(1)
                  .Max(1048576)
                  .Keywords({"max"})
                  .Label("bs")
                  .Help("Samples per step (per rank with ddp), or `max` to search for the largest batch "
                        "that runs boundary_probe_steps steps without running out of memory "
                        "(docs/memory.md). At most 1048576 (2^20): no device holds a larger batch, and "
                        "samples per step are 32-bit in the protocol.")
                  .Build());
  // The boundary search (batch_size, seq_len or image_size: max; docs/memory.md).
  r.push_back(Entry("boundary_min", kCell, kCore, ParamType::kInt)
                  .Min(1)
                  .Max(1048576)
                  .DefaultText("1; image_size 32")
                  .Help("KEY: max: the first value the search probes (doubling from it). image_size starts "
                        "at 32 unless set, the smallest input the zoo's CNNs take. At most 1048576, like "
                        "batch_size.")
                  .Build());
  r.push_back(Entry("boundary_max", kCell, kCore, ParamType::kInt)
                  .Min(1)
                  .Max(1048576)
                  .DefaultText("the key's maximum")
                  .Help("KEY: max: the largest value the search probes, at least boundary_min (a model's own "
                        "limit: bert_base's 512 positions for seq_len). A probe above what the model accepts "
                        "ends the search `invalid`. At most 1048576, like batch_size.")
                  .Build());
  r.push_back(Entry("boundary_max_probes", kCell, kCore, ParamType::kInt)
                  .Unit("probes")
                  .Min(1)
                  .Max(64)
                  .DefaultText("24")
                  .Help("KEY: max (batch_size, seq_len, image_size): the search runs at most this many "
                        "probes, each a fresh runner "
                        "process (doubling and bisection together; `dlbench plan` states the most it "
                        "will run). At most 64: doubling from 1 to 2^20 and bisecting to the exact "
                        "batch take 40.")
                  .Build());
  r.push_back(Entry("boundary_probe_steps", kCell, kCore, ParamType::kInt)
                  .Unit("steps")
                  .Min(1)
                  .Max(1000)
                  .DefaultText("5")
                  .Help("KEY: max: the steps each probe runs; a probe fits when it ends `ok`. At "
                        "most 1000: a probe only proves the batch fits; the stored cell is then measured "
                        "at the batch found.")
                  .Build());
  r.push_back(
      Entry("memory_cap", kCell, kCore, ParamType::kString)
          .Format(StringFormat::kBytes)
          .Unit("bytes")
          .DefaultText("none: no cap")
          .Label("cap")
          .Help("The most memory the cell may use, as a smaller device would have it (docs/memory.md): on "
                "the CPU a limit on the runner process (cgroup v2 memory.max where a usable delegated cgroup "
                "is found, DLBENCH_CGROUP_PARENT or the process's own, else RLIMIT_DATA; extras.memory_cap "
                "says which and why); on CUDA the caching allocator's "
                "per-process fraction of the device (dlbench-torch; the CUDA context is outside it). A cell "
                "beyond it ends `oom`. At most 1TiB, so that a wrong unit is caught here.")
          .Build());
  r.push_back(
      Entry("cuda_alloc_conf", kCell, kCore, ParamType::kString)
          .Format(StringFormat::kCudaAllocConf)
          .DefaultText("none: the environment's")
          .Label("alloc")
          .Help("The CUDA caching allocator's settings (docs/memory.md): the orchestrator sets "
                "PYTORCH_CUDA_ALLOC_CONF to this in the runner's environment before it starts, so it is a "
                "matrix axis (expandable_segments:True against the default). Checked against PyTorch's "
                "documented options and values; at most 512 characters. Absent: the runner inherits "
                "dlbench's own environment (recorded in the fingerprint).")
          .Build());
  r.push_back(Entry("host_allocator", kCell, kCore, ParamType::kEnum)
                  .Allowed(HostAllocators())
                  .DefaultText("none: the runner's malloc as dlbench's environment gives it")
                  .Label("malloc")
                  .Help("The runner process's host memory allocator (docs/memory.md \"The host allocator\"): "
                        "`system` (as absent), `glibc_fixed` (glibc's mmap and trim thresholds fixed through "
                        "GLIBC_TUNABLES, so freed blocks stay in the heap instead of being page-faulted "
                        "again), `jemalloc` or `tcmalloc` (Debian's libjemalloc2 or libtcmalloc-minimal4, "
                        "preloaded; a plan error when not installed). The runner reports the allocator it "
                        "found itself running with.")
                  .Build());
  r.push_back(Entry("device", kCell, kCore, ParamType::kString)
                  .Format(StringFormat::kDevice)
                  .Default(Str("cpu"))
                  .Label("=")
                  .Help("Where the model runs; `cuda` is `cuda:0`; N is at most 1023.")
                  .Build());
  r.push_back(Entry("precision", kCell, kCore, ParamType::kEnum)
                  .Allowed({"fp32", "tf32", "bf16", "fp16", "int8"})
                  .Default(Str("fp32"))
                  .Label("=")
                  .Help("Numeric precision: fp32; tf32 matmuls; bf16/fp16 mixed precision "
                        "(autocast); int8 quantised.")
                  .Build());
  r.push_back(Entry("strategy", kCell, kCore, ParamType::kEnum)
                  .Allowed({"none", "ddp"})
                  .Default(Str("none"))
                  .Label("=")
                  .Help("Distribution: `none` (one process) or `ddp` (data-parallel over "
                        "world_size ranks).")
                  .Build());
  r.push_back(
      Entry("world_size", kCell, kCore, ParamType::kInt)
          .Unit("ranks")
          .Default(Int(1))
          .Min(1)
          .Max(1024)
          .Label("ws")
          .Help("Number of ranks for ddp. At most 1024 ranks, the scale dlbench is designed and tested for.")
          .Build());
  // The ddp keys have no registry default, so that cells stored before them keep their keys; the
  // runner reports what it used in the effective cell (docs/distributed.md).
  r.push_back(Entry("ddp_mode", kCell, kTorch, ParamType::kEnum)
                  .Allowed({"overlap", "serial", "compute_only"})
                  .DefaultText("overlap")
                  .Label("=")
                  .Help("With strategy: ddp, how gradients are all-reduced: `overlap` (c10d's Reducer: "
                        "bucketed all-reduce during backward, as PyTorch's DDP), `serial` (the same "
                        "buckets all-reduced after backward: the no-overlap baseline) or `compute_only` "
                        "(no gradient all-reduce, a barrier per step: the step without communication "
                        "that exposed communication and overlap are measured against).")
                  .Build());
  r.push_back(Entry("backend", kCell, kTorch, ParamType::kEnum)
                  .Allowed({"auto", "gloo", "nccl"})
                  .DefaultText("auto")
                  .Label("=")
                  .Help("With strategy: ddp, the c10d process group: `auto` (nccl on cuda, gloo on cpu), "
                        "`gloo`, or `nccl` (CUDA devices, a build with NCCL).")
                  .Build());
  r.push_back(Entry("bucket_cap_bytes", kCell, kTorch, ParamType::kInt)
                  .Unit("bytes")
                  .Min(1024)
                  .Max(1073741824)
                  .DefaultText("26214400 (25 MiB, PyTorch DDP's bucket_cap_mb; the first bucket 1 MiB)")
                  .Label("bucket")
                  .Help("With strategy: ddp, the gradient bytes per all-reduce bucket, at least 1024. At "
                        "most 1073741824 (1 GiB): one bucket then holds every gradient of any model the "
                        "zoo has.")
                  .Build());
  r.push_back(Entry("allreduce_bytes", kCell, kTorch, ParamType::kInt)
                  .Unit("bytes")
                  .Min(4)
                  .Max(1073741824)
                  .DefaultText("26214400 (25 MiB, PyTorch DDP's bucket)")
                  .Label("bytes")
                  .Help("With model: allreduce (and strategy: ddp), the bytes each step all-reduces: float32 "
                        "elements, rounded down to a multiple of 4. At most 1073741824 (1 GiB).")
                  .Build());

  // Inference under load (docs/load.md): LoadGen's scenarios. Every key but `load` applies only
  // with `load`, and some only with one scenario (config/load_rules.h checks each cell). None has
  // a constant default, so cells without `load` keep their keys; the runner reports the values it
  // used in the effective cell. Scope kLoad: the runners that serve queries (dlbench-torch,
  // dlbench-null on its virtual clock, and command runners: the Python client serves them).
  r.push_back(Entry("load", kCell, kLoad, ParamType::kEnum)
                  .Allowed({"single_stream", "multi_stream", "server", "offline"})
                  .DefaultText("none: back-to-back steps")
                  .Label("=")
                  .Help("Inference under load with scenario: infer, as MLPerf LoadGen: `single_stream` (one "
                        "sample per query, the next when it completes), `multi_stream` (samples_per_query "
                        "per query), `server` (Poisson arrivals at target_qps; latency from the scheduled "
                        "arrival), `offline` (offline_samples in one query). Absent: steps back to back.")
                  .Build());
  r.push_back(
      Entry("target_qps", kCell, kLoad, ParamType::kNumber)
          .Unit("1/s")
          .Min(0, false)
          .Max(1e9)
          .Keywords({"max"})
          .DefaultText("required with load: server")
          .Label("qps")
          .Help("load: server: the Poisson arrival rate, or `max` to search for the highest rate whose "
                "latency percentile stays within latency_bound_ms. At most 1e9 queries/s, so that a typo is "
                "caught here.")
          .Build());
  r.push_back(
      Entry("latency_bound_ms", kCell, kLoad, ParamType::kNumber)
          .Unit("ms")
          .Min(0, false)
          .Max(1e7)
          .DefaultText("none (required with target_qps: max)")
          .Label("bound_ms")
          .Help("load: server: the cell is valid only when its latency percentile is within this. At most "
                "10000000 (about 3 hours), so that a wrong unit is caught here.")
          .Build());
  r.push_back(Entry("peak_max_probes", kCell, kLoad, ParamType::kInt)
                  .Unit("probes")
                  .Min(1)
                  .Max(100)
                  .DefaultText("20")
                  .Help("target_qps: max: the peak search runs at most this many probes (bracketing and "
                        "bisection together). At most 100: from 100 queries/s, doubling reaches the "
                        "search's 1e6 cap in 14 probes and bisection to 0.1% takes 12 more.")
                  .Build());
  r.push_back(Entry("peak_resolution", kCell, kLoad, ParamType::kNumber)
                  .Min(0.001)
                  .Max(1)
                  .DefaultText("0.05")
                  .Help("target_qps: max: bisection stops when the lowest failing rate / the peak - 1 is at "
                        "most this, at least 0.001. At most 1: a bracket no wider than a factor of 2.")
                  .Build());
  r.push_back(Entry("peak_max_time_s", kCell, kLoad, ParamType::kNumber)
                  .Unit("s")
                  .Min(0, false)
                  .Max(86400)
                  .DefaultText("the cell's max_time_s")
                  .Help("target_qps: max: the search starts no probe after this many seconds (on the load "
                        "clock: virtual time in dlbench-null) and each probe's runs end at it; the cell's "
                        "max_time_s bounds it too. At most 86400 (a day), so that a wrong unit is caught "
                        "here.")
                  .Build());
  r.push_back(
      Entry("latency_percentile", kCell, kLoad, ParamType::kNumber)
          .Min(0, false)
          .Max(1, false)
          .DefaultText("0.9 single_stream; 0.99 multi_stream, server")
          .Help("The latency percentile a load cell claims (early stopping, the bound). At most just below "
                "1: a percentile is a fraction, and early stopping needs about 4.6 / (1 - p) queries.")
          .Build());
  r.push_back(Entry("samples_per_query", kCell, kLoad, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(65536)
                  .DefaultText("8")
                  .Help("load: multi_stream: samples in each query (LoadGen's default 8). At most 65536, so "
                        "that a typo "
                        "is caught here.")
                  .Build());
  r.push_back(Entry("query_interval_ms", kCell, kLoad, ParamType::kNumber)
                  .Unit("ms")
                  .Min(0, false)
                  .Max(1e7)
                  .DefaultText("none: on completion")
                  .Help("load: multi_stream: issue a query every this many ms (latency then counts from the "
                        "tick); absent: the next query when the previous completes. At most 10000000 (about "
                        "3 hours), so "
                        "that a wrong unit is caught here.")
                  .Build());
  r.push_back(
      Entry("max_batch", kCell, kLoad, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(65536)
          .DefaultText("= batch_size")
          .Help("load: server: the dynamic batcher's largest batch. At most 65536 samples, so that a typo is "
                "caught here.")
          .Build());
  r.push_back(Entry("batch_timeout_us", kCell, kLoad, ParamType::kInt)
                  .Unit("us")
                  .Min(0)
                  .Max(1'000'000'000)
                  .DefaultText("0")
                  .Help("load: server: the longest the oldest queued query waits for a fuller batch; 0 runs "
                        "what is queued as soon as a stream is free. At most 1000000000 (about 17 minutes), "
                        "so that a wrong "
                        "unit is caught here.")
                  .Build());
  r.push_back(Entry("streams", kCell, kLoad, ParamType::kInt)
                  .Min(1)
                  .Max(64)
                  .DefaultText("1")
                  .Help("load: server: batches in flight at once (CUDA streams on a GPU). At most 64, one "
                        "worker thread "
                        "each.")
                  .Build());
  r.push_back(
      Entry("offline_samples", kCell, kLoad, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(100'000'000)
          .DefaultText("24576")
          .Help("load: offline: samples in each query, run in batches of batch_size. At most 100000000, so "
                "that a typo is caught here.")
          .Build());
  r.push_back(Entry("min_queries", kCell, kLoad, ParamType::kInt)
                  .Unit("queries")
                  .Min(1)
                  .Max(1'000'000'000)
                  .DefaultText("the early-stopping minimum")
                  .Help("A load cell measures at least this many queries (and at least what early stopping "
                        "needs). At most 1000000000, so that a typo is caught here.")
                  .Build());
  r.push_back(Entry("early_stopping_confidence", kCell, kLoad, ParamType::kNumber)
                  .Min(0.5, false)
                  .Max(1, false)
                  .DefaultText("0.99")
                  .Help("Confidence of LoadGen's early-stopping bound on the latency percentile. At most "
                        "just below 1: a "
                        "confidence is a probability.")
                  .Build());
  r.push_back(Entry("sample_library_size", kCell, kLoad, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(1 << 20)
                  .DefaultText("64")
                  .Help("Pre-made input samples that load queries draw from (LoadGen's performance sample "
                        "count). At most 1048576 (2^20), so that the library fits in memory.")
                  .Build());
  r.push_back(Entry("input_residency", kCell, kLoad, ParamType::kEnum)
                  .Allowed({"host", "device"})
                  .DefaultText("host")
                  .Help("Where a load query's input starts: `host` (pinned memory, copied to the device per "
                        "query, as in a server) or `device` (pre-made there: pure compute latency).")
                  .Build());

  // The null runner's knobs: it busy-waits instead of computing, so the harness can be tested
  // and its overhead measured.
  r.push_back(Entry("step_ms", kCell, kNull, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(1.0))
                  .Min(0)
                  .Max(3600000)
                  .Estimate(EstimateHint::kStepMs)
                  .Help("Busy-wait per step. At most 3600000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("jitter_pct", kCell, kNull, ParamType::kNumber)
                  .Unit("%")
                  .Default(Num(0.0))
                  .Min(0)
                  .Max(1000)
                  .Help("Spread of the step time, as a percentage of step_ms. At most 1000, so that a typo "
                        "is caught here.")
                  .Build());
  r.push_back(Entry("jitter_dist", kCell, kNull, ParamType::kEnum)
                  .Allowed({"normal", "uniform", "lognormal"})
                  .Default(Str("normal"))
                  .Help("Distribution of the jitter.")
                  .Build());
  r.push_back(
      Entry("inject", kCell, kNull, ParamType::kEnum)
          .Allowed({"none",
                    "crash",
                    "hang",
                    "exit",
                    "garbage",
                    "leak",
                    "oom",
                    "sigterm_self",
                    "no_hello",
                    "wrong_protocol",
                    "hello_twice",
                    "steps_before_ready",
                    "ready_twice",
                    "unknown_frame",
                    "oversized_frame",
                    "bad_json",
                    "runner_stop",
                    "wrong_type",
                    "step_backwards",
                    "step_overlap",
                    "steps_after_done",
                    "done_twice",
                    "frame_after_error",
                    "exit_without_done",
                    "close_protocol",
                    "close_protocol_exit",
                    "close_commands",
                    "child_holds_pipe",
                    "setsid_child",
                    "stderr_flood",
                    "stdout_flood",
                    "step_flood",
                    "hang_after_stop",
                    "json_flood",
                    "drop_query",
                    "duplicate_query"})
          .Default(Str("none"))
          .Help("Failure to inject (at step inject_at_step where it happens during the steps): `crash` "
                "(a fatal signal), `hang` (stop stepping and answering), `exit` (exit with "
                "exit_code), `garbage` (bytes that are not protocol frames), `leak` (keep "
                "leak_bytes_per_step more memory every step from then on), `oom` (fail as "
                "out of memory); and every protocol fault of docs/protocol.md's fault table "
                "(`wrong_type` sends the field fault_field with the wrong JSON type; the faults "
                "of HELLO itself are given as `dlbench-null --inject NAME`); with load, `drop_query` and "
                "`duplicate_query` leave query inject_at_step out of its QUERIES frame or send it twice.")
          .Build());
  r.push_back(Entry("inject_at_step", kCell, kNull, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(20))
                  .Min(0)
                  .Max(10000000)
                  .Help("The step at which the injected failure happens. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(Entry("leak_bytes_per_step", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Default(Int(65536))
                  .Min(0)
                  .Max(1073741824)
                  .Help("Memory kept and touched per step with inject: leak. At most 1073741824 (1 GiB), so "
                        "that a typo does not exhaust the host's memory.")
                  .Build());
  r.push_back(Entry("memory_base_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model (docs/memory.md): a cell needs this plus "
                        "memory_per_sample_bytes per sample of its batch (and the per-token and per-pixel "
                        "terms), and ends `oom` before its first step when that exceeds memory_cap. Nothing "
                        "is allocated. At most 1099511627776 (1 TiB), like memory_cap.")
                  .Build());
  r.push_back(Entry("memory_per_sample_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each sample of the batch needs on top of "
                        "memory_base_bytes. At most 1099511627776 (1 TiB), like memory_cap.")
                  .Build());
  r.push_back(Entry("memory_per_token_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each token needs, times batch_size x "
                        "seq_len (seq_len: max is tested with it). At most 1099511627776 (1 TiB).")
                  .Build());
  r.push_back(Entry("memory_per_pixel_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each pixel needs, times batch_size x "
                        "image_size^2 (image_size: max is tested with it). At most 1099511627776 (1 TiB).")
                  .Build());
  r.push_back(Entry("inject_rank", kCell, kNull, ParamType::kInt)
                  .Min(0)
                  .Max(1023)
                  .DefaultText("every rank")
                  .Help("With inject and strategy: ddp, only this rank injects the fault; the others run "
                        "normally. At most 1023, the highest rank of world_size 1024.")
                  .Build());
  r.push_back(Entry("exit_code", kCell, kNull, ParamType::kInt)
                  .Default(Int(3))
                  .Min(1)
                  .Max(255)
                  .Help("Exit status with inject: exit.")
                  .Build());
  r.push_back(
      Entry("samples_per_step", kCell, kNull, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(4294967295)
          .DefaultFrom("batch_size")
          .DefaultText("= batch_size")
          .Help(
              "Samples the runner reports per step. At most 4294967295: the protocol carries it in 32 bits.")
          .Build());
  r.push_back(Entry("setup_ms", kCell, kNull, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(0.0))
                  .Min(0)
                  .Max(3600000)
                  .Estimate(EstimateHint::kSetupMs)
                  .Help("Time spent before READY, like building a model. At most 3600000 (an hour), so that "
                        "a wrong unit is caught here.")
                  .Build());
  r.push_back(
      Entry("warmup_steps", kCell, kNull, ParamType::kInt)  // names: a parameter, not the metric
          .Unit("steps")
          .Default(Int(0))
          .Min(0)
          .Max(10000000)
          .Estimate(EstimateHint::kWarmupSteps)
          .Help("That many first steps run slower, by warmup_factor. At most 10000000, like max_steps.")
          .Build());
  r.push_back(
      Entry("warmup_factor", kCell, kNull, ParamType::kNumber)
          .Default(Num(3.0))
          .Min(1)
          .Max(1000)
          .Estimate(EstimateHint::kWarmupFactor)
          .Help("Step time multiplier of the warm-up steps. At most 1000, so that a typo is caught here.")
          .Build());

  // Also the null runner's, with no default, so that cells which do not set them keep their keys.
  r.push_back(
      Entry("fault_field", kCell, kNull, ParamType::kEnum)
          .Allowed(
              {"HELLO.protocol",     "HELLO.pid",       "HELLO.runner",           "HELLO.framework",
               "HELLO.devices",      "READY.effective", "READY.samples_per_step", "READY.device_uuids",
               "READY.virtual_time", "MEMORY.label",    "MEMORY.bytes",           "EXTRAS.metrics",
               "EXTRAS.metric",      "EXTRAS.name",     "EXTRAS.value",           "EXTRAS.unit",
               "EXTRAS.info",        "ERROR.kind",      "ERROR.message",          "ERROR.requested_bytes",
               "DONE.reason",        "DONE.steps",      "HELLO.multi_cell"})
          .DefaultText("none")
          .Help("With inject: wrong_type, the protocol field sent with the wrong JSON type.")
          .Build());
  r.push_back(Entry("flood_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .DefaultText("83886080 (80 MiB)")
                  .Max(1073741824)
                  .Help("What inject: stderr_flood or stdout_flood writes. At most 1073741824 (1 GiB), so "
                        "that a typo does not fill the disk.")
                  .Build());
  r.push_back(Entry("service_us", kCell, kNull, ParamType::kNumber)
                  .Unit("us")
                  .Min(0, false)
                  .Max(3.6e9)
                  .DefaultText("1000")
                  .Help("With load: the simulated system's time to serve one batch, on the virtual clock "
                        "(plus service_per_sample_us per sample; at least 1 ns); a load cell always runs in "
                        "virtual time. "
                        "At most 3600000000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("service_per_sample_us", kCell, kNull, ParamType::kNumber)
                  .Unit("us")
                  .Min(0)
                  .Max(3.6e9)
                  .DefaultText("0")
                  .Help("With load: the simulated system's added service time per sample of a batch. At "
                        "most 3600000000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("virtual_time", kCell, kNull, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Report the drawn step times on a virtual clock (starting at READY) instead of "
                        "busy-waiting them: exact step times, a long cell simulated in milliseconds.")
                  .Build());
  r.push_back(
      Entry("virtual_speedup", kCell, kNull, ParamType::kNumber)
          .Min(0, false)
          .DefaultText("1000")
          .Max(1e9)
          .Help("With virtual_time, how much faster than real time the virtual clock may run "
                "(the runner sleeps to keep to it; it bounds the steps sent after STOP). At most 1e9.")
          .Build());
  r.push_back(
      Entry("bimodal_fraction", kCell, kNull, ParamType::kNumber)
          .Min(0)
          .Max(1)
          .DefaultText("0")
          .Help("Share of steps drawn from a second mode, bimodal_factor times step_ms. At most 1: a share.")
          .Build());
  r.push_back(Entry("bimodal_factor", kCell, kNull, ParamType::kNumber)
                  .Min(0)
                  .DefaultText("2")
                  .Max(1000)
                  .Help("Step time of the second mode, as a multiple of step_ms. At most 1000, so that a "
                        "typo is caught here.")
                  .Build());
  r.push_back(Entry("drift_pct_per_s", kCell, kNull, ParamType::kNumber)
                  .Unit("%/s")
                  .DefaultText("0")
                  .Min(-1000)
                  .Max(1000)
                  .Help("Linear drift of the step time: % of step_ms per second since the first step. At "
                        "most 1000 (and at least -1000) %/s, so that a typo is caught here.")
                  .Build());
  r.push_back(Entry("shift_at_step", kCell, kNull, ParamType::kInt)
                  .Unit("steps")
                  .Min(0)
                  .DefaultText("none")
                  .Max(10000000)
                  .Help("A level shift: from this step (0-based) on, step times are shift_factor times "
                        "longer. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(
      Entry("shift_factor", kCell, kNull, ParamType::kNumber)
          .Min(0)
          .DefaultText("1")
          .Max(1000)
          .Help("The level shift's step time multiplier. At most 1000, so that a typo is caught here.")
          .Build());

  // The torch runner's knobs. Size knobs have no default: absent means the model's standard
  // size, and the runner reports the effective value.
  r.push_back(Entry("image_size", kCell, kInput, ParamType::kInt)
                  .Unit("px")
                  .Min(1)
                  .Max(16384)
                  .Keywords({"max"})
                  .DefaultText(kModelSize)
                  .Help("Input height and width of vision models, or `max` to search for the largest that "
                        "runs without running out of memory (docs/memory.md). dlbench-null's memory model "
                        "reads it (memory_per_pixel_bytes). At most 16384, so that a typo is caught here "
                        "rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("width_mult", kCell, kTorch, ParamType::kNumber)
                  .Min(0, false)
                  .Max(64)
                  .DefaultText(kModelSize)
                  .Help("Channel width multiplier (MobileNet). At most 64, so that a typo is caught here "
                        "rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("base_width", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(65536)
                  .DefaultText(kModelSize)
                  .Help("Channels of the first stage (ResNet). At most 65536, so that a typo is caught here "
                        "rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("num_classes", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(1000000)
                  .DefaultText(kModelSize)
                  .Help("Output classes of classifiers and detectors. At most 1000000, so that a typo is "
                        "caught here rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("layers", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(10000)
                  .DefaultText(kModelSize)
                  .Help("Number of layers or blocks (transformer layers for BERT). At most 10000, so that a "
                        "typo is caught here rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("hidden_size", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(65536)
                  .DefaultText(kModelSize)
                  .Help("Hidden size of transformer models. At most 65536, so that a typo is caught here "
                        "rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("heads", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(1024)
                  .DefaultText(kModelSize)
                  .Help("Attention heads of transformer models. At most 1024, so that a typo is caught here "
                        "rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("seq_len", kCell, kInput, ParamType::kInt)
                  .Unit("tokens")
                  .Min(1)
                  .Max(1048576)
                  .Keywords({"max"})
                  .DefaultText(kModelSize)
                  .Help("Sequence length of transformer inputs, or `max` to search for the longest that runs "
                        "without running out of memory (docs/memory.md; bert_base takes at most 512: set "
                        "boundary_max). dlbench-null's memory model reads it (memory_per_token_bytes). At "
                        "most 1048576 (2^20) tokens, so that a typo is caught here rather than as an "
                        "out-of-memory cell.")
                  .Build());
  r.push_back(Entry("vocab_size", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(10000000)
                  .DefaultText(kModelSize)
                  .Help("Vocabulary size of transformer models. At most 10000000, so that a typo is caught "
                        "here rather than as an out-of-memory cell.")
                  .Build());
  r.push_back(Entry("memory_format", kCell, kTorch, ParamType::kEnum)
                  .Allowed({"auto", "contiguous", "channels_last"})
                  .Default(Str("auto"))
                  .Help("Tensor layout; `auto` lets the runner pick per model and device.")
                  .Build());
  r.push_back(Entry("optimizer_impl", kCell, kTorch, ParamType::kEnum)
                  .Allowed({"auto", "foreach", "per_param"})
                  .DefaultText("auto")
                  .Help("How training's optimizer runs: `foreach` multi-tensor kernels (torch.optim's "
                        "default on CUDA), `per_param` LibTorch's per-parameter loop (its default on "
                        "the CPU); `auto` picks as torch.optim does.")
                  .Build());
  r.push_back(Entry("cudnn_benchmark", kCell, kTorch, ParamType::kBool)
                  .Default(Value(true))
                  .Help("Let cuDNN autotune convolution algorithms (during warm-up).")
                  .Build());
  // No registry default (as optimizer_impl): cells stored before the key existed keep their keys.
  r.push_back(Entry("cuda_graph", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Inference on CUDA: capture the forward once into a CUDA graph after warm-up and "
                        "replay it for every step or query (one launch instead of one per operator). "
                        "Fixed shapes only: scenario infer with data: device, or a load scenario; the "
                        "post-processing (SSD's NMS) runs eagerly after the replay.")
                  .Build());
  r.push_back(Entry("deterministic", kCell, kTorch, ParamType::kBool)
                  .Default(Value(false))
                  .Help("Use deterministic algorithms only (slower; reproducible).")
                  .Build());
  r.push_back(Entry("threads", kCell, kTorch, ParamType::kInt)
                  .Min(1)
                  .Max(4096)
                  .DefaultText("the library's")
                  .Help("Intra-op CPU threads. At most 4096, more than any host has cores.")
                  .Build());
  r.push_back(Entry("model_path", kCell, kTorch, ParamType::kString)
                  .Help("TorchScript file to load, with model: torchscript.")
                  .Build());
  r.push_back(Entry("input_shapes", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kShapes)
                  .Help("Input shapes of a TorchScript model, `;` between inputs, `B` for the "
                        "batch size: `B,3,224,224;B,16`.")
                  .Build());
  r.push_back(Entry("input_dtypes", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kDtypes)
                  .Help("Input dtypes, one per input shape: `float32;int64`.")
                  .Build());
  r.push_back(Entry("lr", kCell, kTorch, ParamType::kNumber)
                  .Min(0, false)
                  .Max(1000)
                  .DefaultText(kModelSize)
                  .Help("Learning rate of the optimizer in train. At most 1000 (larger learning rates "
                        "diverge at once).")
                  .Build());
  // No registry default, so that cells stored before this key existed keep their keys.
  r.push_back(Entry("reference_samples", kCell, kTorch, ParamType::kInt)
                  .Min(0)
                  .Max(256)
                  .DefaultText("4")
                  .Help("Samples of the fixed, seeded evaluation set that an infer cell's model runs "
                        "after its measured steps, from weights of a fixed seed, so that each "
                        "precision's outputs can be compared with the fp32 cell of the same model "
                        "(docs/precisions.md); 0: none. At most 256 (a full-size model on a slow CPU "
                        "takes seconds per sample).")
                  .Build());
  // The input pipeline (runners/torch/data; docs/input-pipeline.md). No constant defaults: a
  // cell that names none of these keeps the key it had before they existed.
  r.push_back(Entry("data", kCell, kTorch, ParamType::kEnum)
                  .Allowed({"device", "host", "jpeg_dir", "tfrecord"})
                  .DefaultText("device")
                  .Help("Where each step's batch comes from: `device` the fixed batch already on the "
                        "device (the compute-only control); `host` the same synthetic tensors copied "
                        "from the host every step (isolates the copy); `jpeg_dir` JPEG files under "
                        "data_path; `tfrecord` TFRecord files of tf.train.Example matching data_path.")
                  .Build());
  r.push_back(Entry("data_path", kCell, kTorch, ParamType::kString)
                  .Help("With data: jpeg_dir, the folder (ImageFolder layout: one sub-folder per class, "
                        "searched recursively; labels are the sorted sub-folder names' indices); with "
                        "data: tfrecord, a glob of files (`/data/train-*`). Ignored by device and host.")
                  .Build());
  r.push_back(
      Entry("data_workers", kCell, kTorch, ParamType::kInt)
          .Min(1)
          .Max(256)
          .Keywords({"auto"})
          .DefaultText("auto")
          .Help("Decode threads of jpeg_dir and tfrecord; `auto` takes the cores this process "
                "may use, less one for the training loop, and the effective cell records it. At most 256 "
                "(each worker holds a batch; more threads than a host's cores only contend).")
          .Build());
  r.push_back(Entry("prefetch", kCell, kTorch, ParamType::kInt)
                  .Unit("batches")
                  .Min(1)
                  .Max(1024)
                  .DefaultText("2")
                  .Help("Finished batches the pipeline may hold ready ahead of the step (each worker "
                        "also holds the one it is making). At most 1024 (each is a whole batch in host "
                        "memory).")
                  .Build());
  r.push_back(Entry("pin_memory", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Host batches in page-locked memory, so the host-to-device copy is DMA (CUDA "
                        "only; on the CPU the cell is unsupported).")
                  .Build());
  r.push_back(Entry("async_copy", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Copy the next batch to the device on a side stream while the current step "
                        "computes (CUDA only; on the CPU the cell is unsupported).")
                  .Build());
  r.push_back(Entry("cache", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Keep decoded images in memory after the first pass (as tf.data's cache), up to "
                        "half the memory available when the cell starts.")
                  .Build());
  r.push_back(Entry("shuffle_buffer", kCell, kTorch, ParamType::kInt)
                  .Unit("samples")
                  .Min(0)
                  .Max(1e9)
                  .DefaultText("10000")
                  .Help("tf.data's shuffle buffer over the file order, reshuffled every epoch from the "
                        "cell's seed; 0 keeps the file order; at least the data set's size is a "
                        "uniform permutation. At most 1e9 (8 bytes of index per sample).")
                  .Build());
  r.push_back(Entry("skip_corrupt", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Count and report corrupt inputs (a JPEG that does not decode, a record with "
                        "a bad CRC or a missing key) and use the next good sample, instead of ending "
                        "the cell with an error naming the file and offset.")
                  .Build());
  // scenario: converge (docs/convergence.md). No constant defaults, so that every other cell keeps
  // its key; config/load_rules.h checks that these keys come only with scenario: converge and that
  // exactly one target is set.
  r.push_back(Entry("target_accuracy", kCell, kTorch, ParamType::kNumber)
                  .Min(0, false)
                  .Max(1)
                  .Help("With scenario: converge, the held-out accuracy (a fraction) that ends training; "
                        "exactly one of target_accuracy and target_loss. At most 1 (all correct).")
                  .Build());
  r.push_back(Entry("target_loss", kCell, kTorch, ParamType::kNumber)
                  .Min(0, false)
                  .Max(1000)
                  .Help("With scenario: converge, the held-out mean cross-entropy at or below which training "
                        "ends. At most 1000 (a ten-class model starts near 2.3).")
                  .Build());
  r.push_back(Entry("eval_every", kCell, kTorch, ParamType::kInt)
                  .Unit("steps")
                  .Min(1)
                  .Max(10000000)
                  .DefaultText("once per epoch")
                  .Help("With scenario: converge, training steps between evaluations of the held-out set "
                        "(each outside the timed steps). At most 10000000, the most steps a cell may send.")
                  .Build());
  r.push_back(Entry("max_epochs", kCell, kTorch, ParamType::kInt)
                  .Unit("epochs")
                  .Min(1)
                  .Max(100000)
                  .DefaultText("100")
                  .Help("With scenario: converge, the epochs after which a cell that has not reached its "
                        "target ends \"not reached\". At most 100000.")
                  .Build());
  r.push_back(Entry("max_train_time_s", kCell, kTorch, ParamType::kNumber)
                  .Unit("s")
                  .Min(0, false)
                  .Max(604800)
                  .DefaultText("3600")
                  .Help("With scenario: converge, the wall time (training and evaluations) after which a "
                        "cell that has not reached its target ends \"not reached\"; keep timeout_s above "
                        "it. At most 604800 (a week), like timeout_s.")
                  .Build());
  r.push_back(Entry("dataset_dir", kCell, kTorch, ParamType::kString)
                  .DefaultText("/usr/share/datasets/fashion-mnist")
                  .Help("With scenario: converge, the folder of Fashion-MNIST's four IDX files "
                        "(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-...), as Debian's "
                        "dataset-fashion-mnist installs them.")
                  .Build());
  r.push_back(Entry("train_samples", kCell, kTorch, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(60000)
                  .DefaultText("all 60000")
                  .Help("With scenario: converge, train on the first N training samples only (a documented "
                        "subset for quick runs). At most 60000, the training set's size.")
                  .Build());
  r.push_back(Entry("eval_samples", kCell, kTorch, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(10000)
                  .DefaultText("all 10000")
                  .Help("With scenario: converge, evaluate on the first N test samples only. At most 10000, "
                        "the test set's size.")
                  .Build());
  r.push_back(Entry("eval_precisions", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kPrecisions)
                  .DefaultText("none")
                  .Help("With scenario: converge, the precisions at which the trained model is evaluated "
                        "on the held-out set after training, outside the timed steps: "
                        "`eval_accuracy_<precision>` and its delta from fp32 (always evaluated). int8 is "
                        "the model quantized after training (static int8 convolutions calibrated on "
                        "training images, dynamic int8 Linear), run on the CPU (docs/precisions.md).")
                  .Build());
  r.push_back(Entry("min_agreement", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kPrecisionTolerances)
                  .DefaultText("none")
                  .Help("Per precision, the least agreement with the reference that an infer cell's "
                        "outputs on the fixed evaluation set may show: top-1 agreement and, for "
                        "detection models, the share of boxes matched at IoU >= 0.5. Against the fp32 "
                        "cell (show's precision table) and, for a CUDA cell, against the CPU cell of the "
                        "same parameters (CPU-GPU consistency); a figure below it is a warning naming "
                        "figure and tolerance. When the runner's own fp32 forward disagrees beyond it, "
                        "the runner names the layer most likely at fault (docs/precisions.md). Like "
                        "`bf16=0.99;int8=0.9`.")
                  .Build());
  r.push_back(Entry("max_abs_diff", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kPrecisionDiffTolerances)
                  .DefaultText("none")
                  .Help("Per precision, the largest absolute difference from the reference that any "
                        "output value of an infer cell on the fixed evaluation set may show; compared "
                        "and warned of as min_agreement is (a figure above it is a warning), and a "
                        "trigger of the runner's search for the layer most likely at fault "
                        "(docs/precisions.md). Like `bf16=0.05;int8=0.5`.")
                  .Build());
  r.push_back(Entry("max_mean_abs_diff", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kPrecisionDiffTolerances)
                  .DefaultText("none")
                  .Help("Per precision, the largest mean absolute difference from the reference over "
                        "an infer cell's output values on the fixed evaluation set; compared, warned of "
                        "and a trigger of the search for the layer at fault as max_abs_diff is "
                        "(docs/precisions.md). Like `bf16=0.01;int8=0.1`.")
                  .Build());
  r.push_back(Entry("pipeline_only", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Run the input pipeline (and the copy to the device) without the model: the "
                        "cell's samples_per_s is what the pipeline alone delivers.")
                  .Build());
  return r;
}

bool MatchesFormat(StringFormat format, const std::string& text) {
  switch (format) {
    case StringFormat::kAny:
      return true;
    case StringFormat::kDevice:
      return ParseDeviceName(text).has_value();
    case StringFormat::kShapes:
      return ParseShapes(text).has_value();
    case StringFormat::kDtypes:
      return ParseDtypes(text).has_value();
    case StringFormat::kBytes:
      return ParseByteSize(text).has_value();
    case StringFormat::kCudaAllocConf:
      return CudaAllocConfProblem(text).empty();
    case StringFormat::kPrecisions:
      return ParsePrecisionList(text).has_value();
    case StringFormat::kPrecisionTolerances:
      return ParsePrecisionTolerances(text).has_value();
    case StringFormat::kPrecisionDiffTolerances:
      return ParsePrecisionDiffTolerances(text).has_value();
  }
  return false;
}

// Shortest round-trip text of a bound or default: 1 -> "1", 0.5 -> "0.5".
std::string FormatBound(double value) {
  // Integral bounds as integers ("1048576", not the shorter "1.048576e+06").
  if (std::abs(value) < 1e15 && value == std::trunc(value)) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

// ">= 1", "between 1 and 255", "> 0 and < 1"; empty when unbounded.
std::string RangeText(const ParamSpec& spec) {
  if (spec.min && spec.max && spec.min->inclusive && spec.max->inclusive) {
    return "between " + FormatBound(spec.min->value) + " and " + FormatBound(spec.max->value);
  }
  std::vector<std::string> parts;
  if (spec.min) parts.push_back((spec.min->inclusive ? ">= " : "> ") + FormatBound(spec.min->value));
  if (spec.max) parts.push_back((spec.max->inclusive ? "<= " : "< ") + FormatBound(spec.max->value));
  return Join(parts, " and ");
}

std::string FormatText(StringFormat format) {
  switch (format) {
    case StringFormat::kAny:
      return "";
    case StringFormat::kDevice:
      return "cpu, cuda or cuda:N";
    case StringFormat::kShapes:
      return "shapes like B,3,224,224;B,16";
    case StringFormat::kDtypes:
      return "dtypes like float32;int64 (" + Join(KnownDtypes(), ", ") + ")";
    case StringFormat::kBytes:
      return "bytes > 0 and at most 1TiB, as an integer with an optional unit (B, KiB, MiB, GiB, TiB, KB, "
             "MB, GB, TB), like 16GiB";
    case StringFormat::kCudaAllocConf:
      return "PYTORCH_CUDA_ALLOC_CONF options name:value separated by commas, like "
             "expandable_segments:True,max_split_size_mb:128 (docs/memory.md)";
    case StringFormat::kPrecisions:
      return "precisions like fp32;bf16;int8, each at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") + ")";
    case StringFormat::kPrecisionTolerances:
      return "precision=number pairs like bf16=0.99;int8=0.9, each precision at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") +
             "), each number between 0 and 1";
    case StringFormat::kPrecisionDiffTolerances:
      return "precision=number pairs like bf16=0.05;int8=0.5, each precision at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") +
             "), each number between 0 and " + FormatBound(kMaxDiffTolerance);
  }
  return "";
}

// The "allowed" column of help and docs: range, enum values or format; "any" otherwise. `brief`
// (the terminal) leaves out the list of dtype names.
std::string AllowedText(const ParamSpec& spec, bool brief) {
  switch (spec.type) {
    case ParamType::kEnum:
      return Join(spec.allowed, ", ");
    case ParamType::kInt:
    case ParamType::kNumber: {
      std::string range = RangeText(spec);
      return (range.empty() ? "any" : range) +
             (spec.keywords.empty() ? "" : ", or " + Join(spec.keywords, ", "));
    }
    case ParamType::kBool:
      return "true, false";
    case ParamType::kString: {
      if (brief && spec.format == StringFormat::kDtypes) return "dtypes like float32;int64";
      std::string format = FormatText(spec.format);
      return format.empty() ? "any" : format;
    }
    case ParamType::kRunner:
      return "null, torch, {command: [argv...]}";
    case ParamType::kMapping:
    case ParamType::kMappingList:
      return "";
  }
  return "";
}

// Defaults as a reader writes them in YAML: strings unquoted (FormatValue quotes "null").
std::string DefaultText(const ParamSpec& spec) {
  if (spec.default_value) {
    return spec.default_value->is_string() ? spec.default_value->get<std::string>()
                                           : FormatValue(*spec.default_value);
  }
  if (!spec.default_text.empty()) return spec.default_text;
  return "none";
}

Status ValueError(const ParamSpec& spec, const std::string& got) {
  std::string hint;
  if (got == "max") {
    // `max` asks for a search; say which keys have one.
    std::vector<std::string> searchable;
    for (const ParamSpec& other : Registry()) {
      if (std::find(other.keywords.begin(), other.keywords.end(), "max") != other.keywords.end())
        searchable.push_back(other.name);
    }
    const std::string last = searchable.back();
    searchable.pop_back();
    hint = "; `max` (a search) is for " + Join(searchable, ", ") + " and " + last + " only";
  }
  return MakeError(ErrorKind::kInvalidInput,
                   "expected " + DescribeExpected(spec) + " (got '" + got + "')" + hint);
}

Status CheckRange(const ParamSpec& spec, double v, const std::string& got) {
  if (spec.min && (spec.min->inclusive ? v < spec.min->value : v <= spec.min->value)) {
    return ValueError(spec, got);
  }
  if (spec.max && (spec.max->inclusive ? v > spec.max->value : v >= spec.max->value)) {
    return ValueError(spec, got);
  }
  return Status::Ok();
}

std::optional<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

}  // namespace

const std::vector<ParamSpec>& Registry() {
  static const std::vector<ParamSpec> registry = BuildRegistry();
  return registry;
}

const std::vector<std::string>& KnownDtypes() {
  static const std::vector<std::string> dtypes = {"float32", "float16", "bfloat16", "float64", "int64",
                                                  "int32",   "int16",   "int8",     "uint8",   "bool"};
  return dtypes;
}

std::optional<DeviceName> ParseDeviceName(std::string_view text) {
  if (text == "cpu") return DeviceName{};
  if (text == "cuda") return DeviceName{true, 0};
  if (!StartsWith(text, "cuda:")) return std::nullopt;
  const std::optional<std::uint64_t> index = ParseUint(text.substr(5));
  if (!index || *index > static_cast<std::uint64_t>(kMaxCudaIndex)) return std::nullopt;
  return DeviceName{true, static_cast<int>(*index)};
}

std::optional<std::vector<std::vector<std::int64_t>>> ParseShapes(std::string_view text) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (const std::string& one : Split(text, ';')) {
    std::vector<std::int64_t> shape;
    for (const std::string& piece : Split(one, ',')) {
      const std::string dim = Trim(piece);
      if (dim == "B") {
        shape.push_back(kBatchDim);
        continue;
      }
      const std::optional<std::uint64_t> n = ParseUint(dim);
      if (!n || *n < 1 || *n > static_cast<std::uint64_t>(kMaxShapeDim)) return std::nullopt;
      shape.push_back(static_cast<std::int64_t>(*n));
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::optional<std::int64_t> ParseByteSize(std::string_view text) {
  const std::string t = Trim(text);
  std::size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  // 13 digits hold every value up to 1 TiB; more cannot be in range and could overflow below.
  if (digits == 0 || digits > 13) return std::nullopt;
  const std::optional<std::uint64_t> n = ParseUint(t.substr(0, digits));
  if (!n) return std::nullopt;
  const std::string unit = Trim(std::string_view(t).substr(digits));
  static constexpr std::pair<std::string_view, std::uint64_t> kUnits[] = {{"", 1},
                                                                          {"B", 1},
                                                                          {"KiB", 1ull << 10},
                                                                          {"MiB", 1ull << 20},
                                                                          {"GiB", 1ull << 30},
                                                                          {"TiB", 1ull << 40},
                                                                          {"KB", 1000},
                                                                          {"MB", 1000'000},
                                                                          {"GB", 1000'000'000},
                                                                          {"TB", 1000'000'000'000}};
  const auto* scale =
      std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return u.first == unit; });
  if (scale == std::end(kUnits)) return std::nullopt;
  // n < 10^13 and the bound is 2^40: n > bound / scale is exact and cannot overflow.
  const auto max = static_cast<std::uint64_t>(kMaxByteSize);
  if (*n == 0 || *n > max / scale->second) return std::nullopt;
  return static_cast<std::int64_t>(*n * scale->second);
}

std::optional<std::vector<std::string>> ParseDtypes(std::string_view text) {
  std::vector<std::string> dtypes;
  const std::vector<std::string>& known = KnownDtypes();
  for (const std::string& piece : Split(text, ';')) {
    std::string name = Trim(piece);
    if (std::find(known.begin(), known.end(), name) == known.end()) return std::nullopt;
    dtypes.push_back(std::move(name));
  }
  return dtypes;
}

std::optional<std::vector<std::string>> ParsePrecisionList(std::string_view text) {
  const std::vector<std::string>& known = FindParam("precision", ParamSection::kCell)->allowed;
  std::vector<std::string> names;
  for (const std::string& piece : Split(text, ';')) {
    std::string name = Trim(piece);
    if (std::find(known.begin(), known.end(), name) == known.end() ||
        std::find(names.begin(), names.end(), name) != names.end()) {
      return std::nullopt;
    }
    names.push_back(std::move(name));
  }
  if (names.empty()) return std::nullopt;
  return names;
}

namespace {

// `precision=number` pairs with each number in [0, max_value].
std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionBounds(std::string_view text,
                                                                                double max_value) {
  const std::vector<std::string>& known = FindParam("precision", ParamSection::kCell)->allowed;
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& piece : Split(text, ';')) {
    const std::size_t eq = piece.find('=');
    if (eq == std::string::npos) return std::nullopt;
    std::string name = Trim(piece.substr(0, eq));
    const std::string number = Trim(piece.substr(eq + 1));
    if (std::find(known.begin(), known.end(), name) == known.end() ||
        std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.first == name; })) {
      return std::nullopt;
    }
    double value = 0.0;
    const auto res = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || res.ec != std::errc() || res.ptr != number.data() + number.size() ||
        !(value >= 0.0 && value <= max_value)) {
      return std::nullopt;
    }
    out.emplace_back(std::move(name), value);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionTolerances(std::string_view text) {
  return ParsePrecisionBounds(text, 1.0);
}

std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionDiffTolerances(
    std::string_view text) {
  return ParsePrecisionBounds(text, kMaxDiffTolerance);
}

const ParamSpec* FindParam(std::string_view name, ParamSection section) {
  // An index, built once: planning looks parameters up for every parameter of every cell.
  static const auto* const index = [] {
    auto* map = new std::map<std::pair<ParamSection, std::string_view>, const ParamSpec*>();
    for (const ParamSpec& spec : Registry())
      map->emplace(std::make_pair(spec.section, std::string_view(spec.name)), &spec);
    return map;
  }();
  auto it = index->find(std::make_pair(section, name));
  return it == index->end() ? nullptr : it->second;
}

bool ScopeValidForRunner(Scope scope, const std::string& runner_name) {
  switch (scope) {
    case Scope::kCore:
      return true;
    case Scope::kNull:
      return runner_name == "null";
    case Scope::kTorch:
      return runner_name == "torch";
    case Scope::kLoad:
      // A command runner serves queries through the Python client (docs/python-client.md) or its own
      // code; its load keys are validated here like the built-in runners'.
      return runner_name == "null" || runner_name == "torch" || runner_name == "command";
    case Scope::kInputSize:
      return runner_name == "null" || runner_name == "torch";
  }
  return false;
}

std::vector<const ParamSpec*> CellParamsForRunner(const std::string& runner_name) {
  std::vector<const ParamSpec*> out;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kCell && ScopeValidForRunner(spec.scope, runner_name)) {
      out.push_back(&spec);
    }
  }
  return out;
}

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "string";
    case ParamType::kInt:
      return "int";
    case ParamType::kNumber:
      return "number";
    case ParamType::kBool:
      return "bool";
    case ParamType::kEnum:
      return "enum";
    case ParamType::kMapping:
      return "mapping";
    case ParamType::kMappingList:
      return "list of mappings";
    case ParamType::kRunner:
      return "runner";
  }
  return "?";
}

const char* ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kCore:
      return "core";
    case Scope::kNull:
      return "null";
    case Scope::kTorch:
      return "torch";
    case Scope::kLoad:
      return "null, torch or command";
    case Scope::kInputSize:
      return "null or torch";
  }
  return "?";
}

namespace {

bool IsKeyword(const ParamSpec& spec, const std::string& text) {
  return std::find(spec.keywords.begin(), spec.keywords.end(), text) != spec.keywords.end();
}

// " or max" for a number that also accepts words; empty otherwise.
std::string KeywordsText(const ParamSpec& spec) {
  return spec.keywords.empty() ? "" : " or " + Join(spec.keywords, ", ");
}

}  // namespace

std::string DescribeExpected(const ParamSpec& spec) {
  if (!spec.keywords.empty() && (spec.type == ParamType::kInt || spec.type == ParamType::kNumber)) {
    ParamSpec plain = spec;
    plain.keywords.clear();
    return DescribeExpected(plain) + KeywordsText(spec);
  }
  std::string range = RangeText(spec);
  switch (spec.type) {
    case ParamType::kString: {
      std::string format = FormatText(spec.format);
      return format.empty() ? "a string" : format;
    }
    case ParamType::kInt:
      return range.empty() ? "an integer" : "an integer " + range;
    case ParamType::kNumber:
      return range.empty() ? "a number" : "a number " + range;
    case ParamType::kBool:
      return "true or false";
    case ParamType::kEnum:
      return "one of " + Join(spec.allowed, ", ");
    case ParamType::kMapping:
      return "a mapping";
    case ParamType::kMappingList:
      return "a list of mappings";
    case ParamType::kRunner:
      return "null, torch or a mapping {command: [argv...]}";
  }
  return "?";
}

Result<Value> ParseParamText(const ParamSpec& spec, const std::string& text) {
  switch (spec.type) {
    case ParamType::kString:
    case ParamType::kEnum: {
      Value v(text);
      DLBENCH_RETURN_IF_ERROR(ValidateParamValue(spec, v));
      return v;
    }
    case ParamType::kInt: {
      if (IsKeyword(spec, text)) return Value(text);
      std::optional<std::int64_t> v = ParseInt(text);
      if (!v) return ValueError(spec, text).error();
      DLBENCH_RETURN_IF_ERROR(CheckRange(spec, static_cast<double>(*v), text));
      return Value(*v);
    }
    case ParamType::kNumber: {
      if (IsKeyword(spec, text)) return Value(text);
      std::optional<double> v = ParseNumber(text);
      if (!v) return ValueError(spec, text).error();
      DLBENCH_RETURN_IF_ERROR(CheckRange(spec, *v, text));
      return Value(*v);
    }
    case ParamType::kBool: {
      std::optional<bool> v = ParseBool(text);
      if (!v) return ValueError(spec, text).error();
      return Value(*v);
    }
    case ParamType::kMapping:
    case ParamType::kMappingList:
    case ParamType::kRunner:
      break;
  }
  return MakeError(ErrorKind::kInternal, spec.name + " is not a scalar parameter");
}

Status ValidateParamValue(const ParamSpec& spec, const Value& value) {
  const std::string got = value.is_string() ? value.get<std::string>() : FormatValue(value);
  switch (spec.type) {
    case ParamType::kString:
      if (!value.is_string() || !MatchesFormat(spec.format, value.get<std::string>())) {
        if (value.is_string() && spec.format == StringFormat::kCudaAllocConf) {
          return MakeError(ErrorKind::kInvalidInput, ValueError(spec, got).error().message + ": " +
                                                         CudaAllocConfProblem(value.get<std::string>()));
        }
        return ValueError(spec, got);
      }
      return Status::Ok();
    case ParamType::kEnum:
      if (!value.is_string() || std::find(spec.allowed.begin(), spec.allowed.end(),
                                          value.get<std::string>()) == spec.allowed.end()) {
        return ValueError(spec, got);
      }
      return Status::Ok();
    case ParamType::kInt:
      if (value.is_string() && IsKeyword(spec, value.get<std::string>())) return Status::Ok();
      if (!value.is_number_integer()) return ValueError(spec, got);
      if (value.is_number_unsigned() &&
          value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return ValueError(spec, got);
      }
      return CheckRange(spec, static_cast<double>(value.get<std::int64_t>()), got);
    case ParamType::kNumber:
      if (value.is_string() && IsKeyword(spec, value.get<std::string>())) return Status::Ok();
      if (!value.is_number() || !std::isfinite(value.get<double>())) return ValueError(spec, got);
      return CheckRange(spec, value.get<double>(), got);
    case ParamType::kBool:
      if (!value.is_boolean()) return ValueError(spec, got);
      return Status::Ok();
    case ParamType::kMapping:
    case ParamType::kMappingList:
    case ParamType::kRunner:
      break;
  }
  return MakeError(ErrorKind::kInternal, spec.name + " is not a scalar parameter");
}

std::string FormatValue(const Value& value) {
  if (!value.is_string()) return value.dump();
  const std::string& s = value.get<std::string>();
  // Quote what would otherwise be ambiguous in "name=value,name=value" or read as another type.
  bool quote = s.empty() || s.find_first_of(",=\"") != std::string::npos || s.front() == ' ' ||
               s.back() == ' ' || s == "null" || ParseBool(s) || ParseInt(s) || ParseNumber(s);
  return quote ? value.dump() : s;
}

std::optional<std::string> NearestKey(std::string_view key, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance: Levenshtein plus adjacent transpositions ("bacth_size").
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.size()][b.size()];
  };
  std::optional<std::string> best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : candidates) {
    std::size_t dist = distance(key, candidate);
    if (dist < best_distance) {
      best_distance = dist;
      best = candidate;
    }
  }
  if (!best || best_distance > 2 || 2 * best_distance >= key.size()) return std::nullopt;
  return best;
}

std::string RenderParamEntry(const ParamSpec& spec) {
  std::string where;
  switch (spec.section) {
    case ParamSection::kTopLevel:
      where = "a top-level key";
      break;
    case ParamSection::kMeasure:
      where = "a key under measure:";
      break;
    case ParamSection::kCell:
      where = std::string("a cell parameter (matrix:, include:, exclude:); runners: ") +
              (spec.scope == Scope::kCore ? "every runner" : ScopeName(spec.scope));
      break;
  }
  std::string type = ParamTypeName(spec.type);
  if (!spec.unit.empty()) type += " (" + spec.unit + ")";
  std::string out = spec.name + ": " + where + "\n";
  out += "  type:     " + type + "\n";
  out += "  default:  " + DefaultText(spec) +
         (spec.default_from.empty() ? "" : " (= " + spec.default_from + ")") + "\n";
  const std::string allowed = AllowedText(spec, /*brief=*/false);
  if (!allowed.empty()) out += "  allowed:  " + allowed + "\n";
  if (!spec.required_with.empty()) out += "  required: with runner: " + spec.required_with + "\n";
  // The help, wrapped at word boundaries to 100 columns under a two-space indent.
  constexpr std::size_t kWidth = 100;
  std::string line = " ";
  out += "\n";
  std::size_t at = 0;
  while (at < spec.help.size()) {
    std::size_t space = spec.help.find(' ', at);
    if (space == std::string::npos) space = spec.help.size();
    const std::string word = spec.help.substr(at, space - at);
    if (line.size() + 1 + word.size() > kWidth && line.size() > 1) {
      out += line + "\n";
      line = " ";
    }
    line += " " + word;
    at = space + 1;
  }
  if (line.size() > 1) out += line + "\n";
  return out;
}

std::string RenderParamHelp() {
  struct Row {
    std::string name, type, def, allowed, help;
  };
  auto type_text = [](const ParamSpec& spec) {
    std::string t = ParamTypeName(spec.type);
    if (!spec.unit.empty()) t += " (" + spec.unit + ")";
    return t;
  };
  auto first_sentence = [](const std::string& help) {
    auto dot = help.find(". ");
    return dot == std::string::npos ? help : help.substr(0, dot + 1);
  };
  // Columns are as wide as their longest entry up to a cap; a longer entry pushes its row out
  // rather than widening every row, and the meaning is cut to keep lines within kLineWidth.
  constexpr std::size_t kLineWidth = 120;
  auto render = [&](const std::string& title, const std::vector<const ParamSpec*>& specs) {
    std::vector<Row> rows;
    rows.push_back({"key", "type", "default", "allowed", "meaning"});
    for (const ParamSpec* spec : specs) {
      rows.push_back({spec->name, type_text(*spec), DefaultText(*spec), AllowedText(*spec, /*brief=*/true),
                      first_sentence(spec->help)});
    }
    std::size_t w[4] = {0, 0, 0, 0};
    for (const Row& row : rows) {
      w[0] = std::max(w[0], row.name.size());
      w[1] = std::max(w[1], row.type.size());
      if (row.def.size() <= 16) w[2] = std::max(w[2], row.def.size());
      if (row.allowed.size() <= 30) w[3] = std::max(w[3], row.allowed.size());
    }
    auto pad = [](const std::string& s, std::size_t width) {
      return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
    };
    std::string out = title + "\n";
    for (const Row& row : rows) {
      std::string line = "  " + pad(row.name, w[0]) + "  " + pad(row.type, w[1]) + "  " + pad(row.def, w[2]) +
                         "  " + pad(row.allowed, w[3]) + "  ";
      std::string help = row.help;
      if (line.size() + help.size() > kLineWidth) {
        std::size_t room = kLineWidth > line.size() + 3 ? kLineWidth - line.size() - 3 : 0;
        help = help.substr(0, room) + "...";
      }
      line += help;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  };
  auto select = [](ParamSection section, std::optional<Scope> scope) {
    std::vector<const ParamSpec*> out;
    for (const ParamSpec& spec : Registry()) {
      if (spec.section == section && (!scope || spec.scope == *scope)) out.push_back(&spec);
    }
    return out;
  };
  std::string out;
  out += render("Top-level keys:", select(ParamSection::kTopLevel, std::nullopt));
  out += "\n" + render("measure: keys:", select(ParamSection::kMeasure, std::nullopt));
  out += "\n" + render("Cell parameters, every runner (matrix axes; a scalar is one value):",
                       select(ParamSection::kCell, Scope::kCore));
  out += "\n" + render("Cell parameters, runner: null:", select(ParamSection::kCell, Scope::kNull));
  out += "\n" + render("Cell parameters, runner: torch:", select(ParamSection::kCell, Scope::kTorch));
  out += "\n" + render("Cell parameters, input sizes (runner: null or torch):",
                       select(ParamSection::kCell, Scope::kInputSize));
  out += "\n" + render("Cell parameters, inference under load (runner: null, torch or command):",
                       select(ParamSection::kCell, Scope::kLoad));
  out +=
      "\nA runner {command: [argv...]} takes the core parameters and the load keys, and passes any other key "
      "through unvalidated.\nFull reference: docs/config-reference.md\n";
  return out;
}

namespace {

std::string MarkdownTable(ParamSection section, std::optional<Scope> scope) {
  std::ostringstream out;
  out << "| Key | Type | Unit | Default | Allowed | Description |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const ParamSpec& spec : Registry()) {
    if (spec.section != section || (scope && spec.scope != *scope)) continue;
    std::string help = spec.help;
    if (!spec.required_with.empty()) help += " Required with runner " + spec.required_with + ".";
    out << RenderParamRowPrefix(spec) << " " << EscapeMarkdownCell(help) << " |\n";
  }
  return out.str();
}

// The cells of a Markdown table row, trimmed; a '|' escaped as "\|" stays inside its cell.
std::vector<std::string> TableCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  cells.push_back(Trim(cell));
  // The text before the first '|' and after the last one is not a cell.
  if (!cells.empty()) cells.erase(cells.begin());
  if (!cells.empty()) cells.pop_back();
  return cells;
}

// The prose of the reference. It lives here, beside the tables it introduces, so the whole file
// is generated and a stale copy fails config_test.
constexpr const char* kReferenceIntro = R"md(# Matrix file reference

<!-- Generated from src/config/registry.cc: do not edit by hand. Regenerate with
     build/bin/dlbench-config-reference > docs/config-reference.md -->

A matrix file is YAML that declares what `dlbench run` measures: which runner, which parameter
combinations (cells), how often and in which order, and the measurement policy. It is validated
completely before anything runs; every problem is reported, one per line, as

```
FILE:LINE:COL: error: KEY: what was expected (got X)
```

where KEY is the key's path (`batch_size`, `measure.min_steps`, `include[0].batch_size`), for
example `m.yaml:4:15: error: batch_size: expected an integer >= 1 (got '-4')` or
`m.yaml:3:3: error: unknown key 'batchsize' (did you mean 'batch_size'?)`. Unknown keys, duplicate
keys, wrong types, values outside the allowed set, an empty matrix, an axis with an empty list or
a repeated value, exclude entries naming something that is not an axis value, and YAML syntax
errors are all errors. `dlbench params` prints the same tables in compact form.

```yaml
name: resnet-batch-sweep
runner: torch
matrix:
  model: [resnet50, mobilenet_v2]
  batch_size: [1, 8, 32]
  precision: [fp32, bf16]
  device: cuda            # a scalar is an axis with one value
exclude:
  - model: mobilenet_v2
    precision: bf16
include:
  - model: resnet50       # 64 is not a batch_size of the axis, so this entry extends no
    batch_size: 64        # combination and becomes a cell of its own: it names every
    precision: bf16       # parameter that should differ from the defaults
    device: cuda
repetitions: 3
seed: 42
ordering: interleaved
measure:
  max_time_s: 30
  target_rel_ci: 0.01
```

## Top-level keys

)md";

constexpr const char* kReferenceMeasure = R"md(
## `measure:` keys

The measurement policy's settings (`MeasureSettings`). `min_steps <= max_steps` and
`min_time_s <= max_time_s` are checked.

)md";

constexpr const char* kReferenceCells = R"md(
## Cell parameters

A cell parameter may be a matrix axis (a list of values), a scalar (an axis with one value), or
a key of an include entry. Which parameters are valid depends on the runner: core parameters
always, null-runner parameters only with `runner: null`, torch-runner parameters only with
`runner: torch`, inference-under-load keys with `runner: null`, `runner: torch` and command
runners. A `runner: {command: [argv...]}` accepts the core and load parameters (validated) and
passes any other key to the program unvalidated, since dlbench cannot know its parameters.
Numbers accept integers (`step_ms: 2` is 2.0); integers do not accept fractions.
The inference-under-load keys (`load` to `input_residency`) apply only to cells with `load`, some
only to one scenario; every cell of the expanded matrix is checked and a key that does not apply
is an error at the key ([load.md](load.md), "Parameters"). Likewise the convergence keys
(`target_accuracy` to `eval_samples`) apply only with `scenario: converge`, which needs exactly one
of `target_accuracy` and `target_loss` and takes no `data` ([convergence.md](convergence.md)).

### Every runner (core)

)md";

constexpr const char* kReferenceNull = R"md(
### Null runner (`runner: null`)

The null runner does no work: it busy-waits `step_ms` per step, so dlbench's own overhead can be
measured and every failure path tested without a GPU. With `virtual_time: true` it busy-waits
nothing: it reports the drawn step times on a virtual clock that starts at READY, so step times
are exact and a long cell is simulated in milliseconds (the monitor analysis of such a cell is
skipped, with a note). The step time is `step_ms` times independent factors: the jitter
(`jitter_pct`, `jitter_dist`), a warm-up transient (`warmup_steps`, `warmup_factor`), a second mode
(`bimodal_fraction`, `bimodal_factor`), a linear drift (`drift_pct_per_s`) and a level shift
(`shift_at_step`, `shift_factor`); `runners/null/synthetic_steps.h` has the formula.
`inject` provokes one failure each, the rows of docs/protocol.md's fault table.

)md";

constexpr const char* kReferenceTorch = R"md(
### Torch runner (`runner: torch`)

Size parameters are optional: absent means the model's standard size, and the runner records the
effective value with the cell's results.

)md";

constexpr const char* kReferenceInputSize = R"md(
### Input sizes (`runner: null` or `runner: torch`)

The torch runner's models read these as their input's size; dlbench-null's memory model reads them
too (`memory_per_token_bytes`, `memory_per_pixel_bytes`), so that the boundary search over them
(`seq_len: max`, `image_size: max`; [memory.md](memory.md)) is tested with an exact answer.

)md";

constexpr const char* kReferenceLoad = R"md(
### Inference under load (`runner: null`, `runner: torch` or a command runner)

A cell with `load` measures queries instead of steps ([load.md](load.md)): dlbench-torch serves
them with the model, dlbench-null on its virtual clock with the service time of `service_us` and
`service_per_sample_us`, a command runner through the Python client's load driver
([python-client.md](python-client.md)) or its own. These keys are validated for a command runner
as for the built-in ones. The rules across these keys (which scenario each applies to) are checked
per cell.

)md";

constexpr const char* kReferenceOutro = R"md(
## How a matrix becomes cells

1. **Cartesian product** of the axes in file order, the last axis varying fastest:
   `a: [1, 2]`, `b: [x, y]` gives `{a: 1, b: x}`, `{a: 1, b: y}`, `{a: 2, b: x}`, `{a: 2, b: y}`.
2. **exclude**: a combination that matches every key of an exclude entry is dropped. Entries may
   name only axes, and only values those axes hold (anything else is a typo and an error).
3. **include**, with GitHub Actions' `strategy.matrix.include` semantics, applied after exclude,
   entry by entry in file order:
   - An entry's key/value pairs are added to every combination of the product that they can
     extend without overwriting an *original* (axis) value: every key of the entry that is an
     axis must equal the combination's value for that axis. Keys that are not axes are added, and
     a value added by an earlier include entry can be overwritten by a later one.
   - An entry that extends none of the product's combinations becomes a new combination by
     itself (with only its own keys; defaults fill the rest). New combinations are not extended
     by later entries.

   GitHub's own example: with `fruit: [apple, pear]`, `animal: [cat, dog]` and the include
   entries `{color: green}`, `{color: pink, animal: cat}`, `{fruit: apple, shape: circle}`,
   `{fruit: banana}`, `{fruit: banana, animal: cat}`, the cells are
   `{fruit: apple, animal: cat, color: pink, shape: circle}`,
   `{fruit: apple, animal: dog, color: green, shape: circle}`,
   `{fruit: pear, animal: cat, color: pink}`, `{fruit: pear, animal: dog, color: green}`,
   `{fruit: banana}` and `{fruit: banana, animal: cat}`.
4. **Defaults** from the tables above are filled in for every parameter of the runner's scope that
   has one and is not set (`samples_per_step` takes the cell's `batch_size`). Parameters without a
   default stay absent; the runner reports what it used. A cell that lacks a required parameter
   (`model` with `runner: torch`) is an error. Two combinations that end up with identical
   parameters are one cell (the first in plan order); use `repetitions` to run a cell again.
5. **Identity.** A cell's `key` is its parameters, defaults included, as `name=value` pairs sorted
   by name and joined by `,` (strings holding `,`, `=` or `"`, or that would read as a number or
   bool, are JSON-quoted). The key identifies the same cell across runs and machines. Its `id` in a
   run is `key#rN` for repetition N (0-based). Its `label` is short text for tables, in registry
   order: the model, every axis with several values, and any other parameter that varies across
   the plan where the cell's value is not the default (`resnet50 infer bs=32 bf16`,
   `inject=exit exit_code=7`). A plan of one cell is labelled by its non-default parameters.
6. **Repetitions**: every cell runs `repetitions` times, each in a fresh process.

## Seeds

Each cell and repetition gets its own seed, the same on every platform and run:

```
h    = FNV-1a-64(key)                      (offset 14695981039346656037, prime 1099511628211)
seed = SplitMix64(SplitMix64(matrix_seed XOR h) XOR repetition) AND (2^63 - 1)
```

where `SplitMix64(x)` is the SplitMix64 finaliser of `x + 0x9E3779B97F4A7C15` (multipliers
`0xBF58476D1CE4E5B9`, `0x94D049BB133111EB`, shifts 30, 27, 31). The top bit is cleared so the
seed fits a signed 64-bit database column. Changing the matrix seed changes every cell's seed;
adding a cell to the matrix changes no other cell's seed.

## Ordering

- `grouped` (default): plan order; the repetitions of a cell run back to back.
- `interleaved`: repetitions run in rounds (round r holds repetition r of every cell), and each
  round is shuffled with a Fisher-Yates shuffle driven by one SplitMix64 stream seeded with
  `order_seed` for the whole run: for i from n down to 2, swap positions i-1 and j, where j is the
  next draw modulo i after rejecting draws below 2^64 mod i (no platform RNG). Slow drift of the machine
  (heat, background load) then spreads over all cells instead of biasing the ones that ran last.
  The same `order_seed` gives the same order everywhere; a different one gives another order.
)md";

}  // namespace

std::string RenderParamRowPrefix(const ParamSpec& spec) {
  const std::string def = spec.default_value ? "`" + DefaultText(spec) + "`" : DefaultText(spec);
  return "| `" + spec.name + "` | " + ParamTypeName(spec.type) + " | " + spec.unit + " | " +
         EscapeMarkdownCell(def) + " | " + EscapeMarkdownCell(AllowedText(spec, /*brief=*/false)) + " |";
}

std::string CheckRunnerDocTable(const std::string& markdown, const std::string& runner) {
  const std::string marker = "<!-- registry-table: " + runner + " -->";
  std::istringstream in(markdown);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (Trim(line) == marker) {
      found = true;
      break;
    }
  }
  if (!found) return "no line '" + marker + "'\n";
  std::vector<std::string> rows;
  while (std::getline(in, line)) {
    if (Trim(line).empty() && rows.empty()) continue;
    if (!StartsWith(Trim(line), "|")) break;
    rows.push_back(line);
  }
  // rows[0] is the header, rows[1] the |---| line.
  const std::vector<const ParamSpec*> specs = CellParamsForRunner(runner);
  std::string problems;
  if (rows.size() < 2) return "no table after '" + marker + "'\n";
  const std::vector<std::string> header = TableCells(rows[0]);
  const std::vector<std::string> want_header = {"parameter", "type", "unit", "default", "allowed"};
  if (header.size() <= want_header.size() ||
      !std::equal(want_header.begin(), want_header.end(), header.begin())) {
    problems += "header: want '| " + Join(want_header, " | ") + " | <notes...> |', have '" + rows[0] + "'\n";
  }
  const std::size_t have = rows.size() - 2;
  for (std::size_t i = 0; i < std::max(have, specs.size()); ++i) {
    if (i >= specs.size()) {
      problems += "row " + std::to_string(i + 1) + ": not a parameter of runner " + runner + ": '" +
                  rows[i + 2] + "'\n";
      continue;
    }
    const std::string want = RenderParamRowPrefix(*specs[i]);
    if (i >= have) {
      problems += "row " + std::to_string(i + 1) + ": missing, want '" + want + " <notes> |'\n";
      continue;
    }
    const std::vector<std::string> want_cells = TableCells(want + " x |");
    const std::vector<std::string> have_cells = TableCells(rows[i + 2]);
    if (have_cells.size() < want_cells.size() ||
        !std::equal(want_cells.begin(), want_cells.end() - 1, have_cells.begin())) {
      problems +=
          "row " + std::to_string(i + 1) + ": want '" + want + " <notes> |', have '" + rows[i + 2] + "'\n";
    }
  }
  return problems;
}

std::string RenderConfigReference() {
  std::string out = kReferenceIntro;
  out += MarkdownTable(ParamSection::kTopLevel, std::nullopt);
  out += kReferenceMeasure;
  out += MarkdownTable(ParamSection::kMeasure, std::nullopt);
  out += kReferenceCells;
  out += MarkdownTable(ParamSection::kCell, Scope::kCore);
  out += kReferenceNull;
  out += MarkdownTable(ParamSection::kCell, Scope::kNull);
  out += kReferenceTorch;
  out += MarkdownTable(ParamSection::kCell, Scope::kTorch);
  out += kReferenceInputSize;
  out += MarkdownTable(ParamSection::kCell, Scope::kInputSize);
  out += kReferenceLoad;
  out += MarkdownTable(ParamSection::kCell, Scope::kLoad);
  out += kReferenceOutro;
  return out;
}

}  // namespace dlbench::config
