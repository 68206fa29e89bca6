// The registry's table, part 2 (registry_entries.h): the cell parameters every runner understands
// (model, scenario, batch_size), the boundary search's keys (boundary_min to boundary_probe_steps),
// memory_cap, cuda_alloc_conf, host_allocator, device, precision, strategy, world_size, and the ddp
// keys (ddp_mode, backend, bucket_cap_bytes, allreduce_bytes).
#include <vector>

#include "config/host_allocator.h"
#include "config/registry.h"
#include "config/registry_entries.h"

namespace dlbench::config::internal {

void AppendCellEntries(std::vector<ParamSpec>& r) {
  // Cell parameters every runner understands.
  r.push_back(Entry("model", kCell, kCore, ParamType::kString)
                  .RequiredWith("torch")
                  .Label("=")
                  .Help("The model to run: a name from the torch runner's model zoo, "
                        "`torchscript` with model_path, `aoti` (an AOTInductor package, infer only) with "
                        "model_path, or `allreduce` (strategy: ddp: each step one all-reduce of "
                        "allreduce_bytes, nothing else). Other runners record it.")
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
                        "probes, each a fresh runner process unless boundary_probe_process: shared "
                        "(doubling, bisection and boundary_guide's guesses together; `dlbench plan` "
                        "states the most it will run). At most 64: doubling from 1 to 2^20 and "
                        "bisecting to the exact batch take 40.")
                  .Build());
  r.push_back(Entry("boundary_resolution", kCell, kCore, ParamType::kNumber)
                  .Min(0)
                  .Max(0.5)
                  .DefaultText("0")
                  .Help("KEY: max: bisection stops once the smallest failing value minus the largest "
                        "fitting one is at most this fraction of the fitting one (at least 1): 0.02 finds "
                        "a value within 2% below the boundary in fewer probes; the cell is the fitting "
                        "value and its search ends `resolved`, the bracket stated. 0 (the default): "
                        "bisect until the two are adjacent. At most 0.5.")
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
  r.push_back(Entry("boundary_probe_process", kCell, kCore, ParamType::kEnum)
                  .Allowed({"fresh", "shared"})
                  .DefaultText("fresh")
                  .Help("KEY: max: `fresh` runs each probe in a runner process of its own; `shared` lets "
                        "probes that fit, and the measured run, go on in one process, and one after an "
                        "`oom` the runner says left it usable (CUDA's caching allocator; not a CPU cap). "
                        "Each probe records its process; docs/memory.md says how the answers can differ.")
                  .Build());
  r.push_back(Entry("boundary_guide", kCell, kCore, ParamType::kEnum)
                  .Allowed({"none", "peak_memory"})
                  .DefaultText("none")
                  .Help("KEY: max with memory_cap: `peak_memory` probes where the line through the fitting "
                        "probes' peak memory meets the cap (then each side of it) instead of doubling and "
                        "bisecting; the answer is bisection's, in fewer probes when memory is near affine "
                        "in the value. Adds at most 5 probes to the bound plan states.")
                  .Build());
  r.push_back(
      Entry("boundary_seed", kCell, kCore, ParamType::kEnum)
          .Allowed({"none", "other_caps"})
          .DefaultText("none")
          .Help("KEY: max with memory_cap and boundary_guide: peak_memory: `other_caps` starts the "
                "guide from the fitting probes of this cell's newest search stored under another "
                "memory_cap of the same matrix (this store, any run): the first probe is where "
                "their line meets this cap, not boundary_min. The seeds only aim the probes; the "
                "answer is proven by this search's own. Adds at most 1 probe to the bound plan states.")
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
}

}  // namespace dlbench::config::internal
