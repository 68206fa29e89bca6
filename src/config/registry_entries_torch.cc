// The registry's table, part 5 (registry_entries.h): the torch runner's keys: model sizes and
// knobs (`image_size` to `reference_samples`), the input pipeline (`data` to `skip_corrupt`),
// scenario: converge (`target_accuracy` to `eval_precisions`), the precision comparison's
// tolerances (`min_agreement`, `max_abs_diff`, `max_mean_abs_diff`) and `pipeline_only`.
#include <vector>

#include "config/registry.h"
#include "config/registry_entries.h"

namespace dlbench::config::internal {

void AppendTorchEntries(std::vector<ParamSpec>& r) {
  constexpr const char* kModelSize = "model's standard";

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
  // No registry default: a cell without it keeps the library's limit, and its key is unchanged.
  r.push_back(Entry("cudnn_benchmark_limit", kCell, kTorch, ParamType::kInt)
                  .Min(0)
                  .Max(1000)
                  .DefaultText("the library's (10 in PyTorch)")
                  .Help("With cudnn_benchmark: how many of cuDNN's candidate algorithms autotuning times "
                        "per convolution (torch.backends.cudnn.benchmark_limit; 0: every one). Fewer "
                        "makes the first step shorter, and may pick a slower kernel; the effective cell "
                        "records the limit that applied. At most 1000, far more than cuDNN offers for one "
                        "convolution.")
                  .Build());
  // No registry default (as optimizer_impl): cells stored before the key existed keep their keys.
  r.push_back(Entry("cuda_graph", kCell, kTorch, ParamType::kBool)
                  .DefaultText("false")
                  .Help("On CUDA: capture the work of a step once into a CUDA graph after warm-up and "
                        "replay it for every step or query (one launch instead of one per operator). "
                        "Inference: the forward (scenario infer, or a load scenario; the post-processing, "
                        "SSD's NMS, runs eagerly after the replay). Training: the whole step, forward, "
                        "backward and optimizer (bf16, fp32 or tf32; not fp16's loss scaling, ddp or "
                        "converge). Fixed shapes only: data: device.")
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
                  .Help("File to load: a TorchScript file with model: torchscript, an AOTInductor .pt2 "
                        "package with model: aoti (its sidecar `<model_path>.json` is read when present).")
                  .Build());
  r.push_back(Entry("input_shapes", kCell, kTorch, ParamType::kString)
                  .Format(StringFormat::kShapes)
                  .Help("Input shapes of a TorchScript model or AOTInductor package, `;` between inputs, "
                        "`B` for the batch size: `B,3,224,224;B,16`.")
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
}

}  // namespace dlbench::config::internal
