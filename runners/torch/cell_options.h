// What one torch cell asks for, read from CONFIGURE's params and checked before anything is built.
//
// This file has no LibTorch in it on purpose: the parsing and the "can this combination run here"
// rules are pure functions of the params and of a Capabilities value, so they are unit-tested in
// milliseconds, and the runner only has to turn an Error into the protocol's ERROR message.
// Parameter names, types, ranges and defaults are the config registry's (docs/torch-runner.md
// lists them; runner_params_test checks that this parser agrees with the registry).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "data/data_options.h"

namespace dlbench::torchrunner {

// kConverge trains a zoo model on a real dataset until a target quality (converge.h).
enum class Scenario { kTrain, kInfer, kConverge };
// Whether the scenario runs training steps (forward, backward, optimizer step): train and converge.
inline bool Trains(Scenario scenario) { return scenario != Scenario::kInfer; }
enum class Precision { kFp32, kTf32, kBf16, kFp16, kInt8 };
enum class DeviceKind { kCpu, kCuda };
enum class MemoryFormat { kAuto, kContiguous, kChannelsLast };

const char* ScenarioName(Scenario scenario);
const char* PrecisionName(Precision precision);
const char* MemoryFormatName(MemoryFormat format);

enum class OptimizerImpl { kAuto, kForeach, kPerParameter };

// strategy: ddp (docs/distributed.md). kOverlap: c10d's Reducer all-reduces gradient buckets as
// backward produces them; kSerial: the same buckets all-reduced after backward (no overlap);
// kComputeOnly: no gradient all-reduce, a barrier per step (the step without communication that
// exposed communication is measured against; the ranks' parameters drift apart).
enum class DdpMode { kOverlap, kSerial, kComputeOnly };
enum class DdpBackend { kAuto, kGloo, kNccl };
const char* DdpModeName(DdpMode mode);
const char* DdpBackendName(DdpBackend backend);

inline constexpr std::int64_t kDefaultBucketCapBytes = std::int64_t{25} << 20;  // PyTorch DDP's 25 MiB
inline constexpr std::int64_t kFirstBucketCapBytes = std::int64_t{1} << 20;     // and its first 1 MiB

struct DdpOptions {
  int world_size = 1;
  DdpMode mode = DdpMode::kOverlap;
  DdpBackend backend = DdpBackend::kAuto;  // resolved by the runner: nccl on cuda, gloo on cpu
  std::int64_t bucket_cap_bytes = kDefaultBucketCapBytes;
};

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;                 // CUDA ordinal; 0 for "cuda" and for the CPU
  std::string ToString() const;  // "cpu", "cuda:0"
};

// Element types a TorchScript model's declared inputs may have: one per name of the registry's
// config::KnownDtypes().
enum class InputDtype {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool
};
const char* InputDtypeName(InputDtype dtype);

// A model loaded from a file with declared inputs: "torchscript" (a user's scripted module) and
// "aoti" (an AOTInductor package, aoti_workload.h). Both take model_path, input_shapes and
// input_dtypes with one syntax.
struct TorchScriptSpec {
  std::string path;
  std::vector<std::vector<std::int64_t>> input_shapes;  // "B" already replaced by the batch size
  std::vector<InputDtype> input_dtypes;                 // one per input
};

// The requested cell after parsing. Fields the user left out keep their documented defaults;
// "auto" choices stay kAuto here and are resolved by the runner, which reports what it chose.
struct TorchCell {
  std::string model;
  Scenario scenario = Scenario::kTrain;
  std::int64_t batch_size = 1;
  DeviceSpec device;
  Precision precision = Precision::kFp32;
  MemoryFormat memory_format = MemoryFormat::kAuto;
  bool cudnn_benchmark = true;
  // torch.backends.cudnn.benchmark_limit for this cell; unset keeps the library's.
  std::optional<int> cudnn_benchmark_limit;
  bool deterministic = false;
  // Inference on CUDA replays the forward captured into a CUDA graph (cuda_graph.h).
  bool cuda_graph = false;
  // Training's optimizer: "auto" (kForeach on CUDA, kPerParameter on the CPU: torch.optim's own
  // default choice), "foreach" (multi-tensor kernels) or "per_param" (LibTorch's C++ optimizer).
  OptimizerImpl optimizer_impl = OptimizerImpl::kAuto;
  std::optional<int> threads;  // intra-op threads; absent: LibTorch's default
  std::optional<double> lr;
  // Infer cells: samples of the fixed evaluation set run after the measured loop
  // (reference_eval.h); 0: none.
  int reference_samples = 4;
  // min_agreement's tolerance for this cell's precision (docs/precisions.md): the least top-1
  // agreement (and, for detection, box match share) with fp32 before the evaluation names the
  // layer most likely at fault; absent when the key is not set or names another precision.
  std::optional<double> min_agreement;
  // max_abs_diff's and max_mean_abs_diff's bounds for this cell's precision: the largest absolute
  // difference of any output value, and the largest mean absolute difference, from fp32 before
  // the evaluation names the layer most likely at fault; absent as min_agreement is.
  std::optional<double> max_abs_diff;
  std::optional<double> max_mean_abs_diff;
  // Whether any of the three tolerances applies to this cell's precision.
  bool has_tolerance() const {
    return min_agreement.has_value() || max_abs_diff.has_value() || max_mean_abs_diff.has_value();
  }
  // scenario converge: the precisions the trained model is evaluated at on the held-out set after
  // training (converge.h), fp32 first and always; empty when eval_precisions is not set.
  std::vector<Precision> eval_precisions;
  std::optional<TorchScriptSpec> torchscript;  // set exactly when model == "torchscript"
  std::optional<TorchScriptSpec> aoti;         // set exactly when model == "aoti"
  DataOptions data;                            // where each step's batch comes from
  std::optional<DdpOptions> ddp;               // set exactly when strategy is ddp
  nlohmann::json params;                       // the params as received (model options live here)
};

inline constexpr char kTorchScriptModel[] = "torchscript";
// An AOTInductor package (.pt2, torch._inductor.aoti_compile_and_package): inference only, at the
// precision it was compiled at (aoti_workload.h, docs/torch-runner.md).
inline constexpr char kAotiModel[] = "aoti";
// The zoo model that has a dynamic int8 form (precision int8). A TorchScript model runs at int8
// when its file holds quantized layers (quantized offline: scripts/quantize_cnn.py).
inline constexpr char kDynamicInt8Model[] = "bert_base";

// Reads CONFIGURE's params, validated against the config registry (config::RunnerParams: types,
// ranges, allowed values, formats, defaults). kInvalidInput names the parameter and what it
// accepts; kUnsupported for valid requests this runner does not implement (ddp of a TorchScript
// model, fp16 ddp).
Result<TorchCell> ParseTorchCell(const nlohmann::json& params);

// "B,3,224,224;B,16" with B = batch size -> {{batch,3,224,224},{batch,16}} (the registry's
// shapes format: config::ParseShapes).
Result<std::vector<std::vector<std::int64_t>>> ParseInputShapes(const std::string& text,
                                                                std::int64_t batch_size);
// "float32;int64" -> {kFloat32, kInt64}: the registry's dtype names (config::KnownDtypes).
Result<std::vector<InputDtype>> ParseInputDtypes(const std::string& text);

// What this process's LibTorch and machine can do; filled by the runner from LibTorch at run time.
struct Capabilities {
  int torch_major = 1;
  bool cuda_built = false;           // LibTorch was built with CUDA
  int cuda_device_count = 0;         // devices visible now
  std::optional<int> compute_major;  // of the requested CUDA device, when there is one
  bool nccl_built = false;           // c10d's ProcessGroupNCCL is compiled into this runner
  bool aoti_built = false;           // the AOTInductor package loader is compiled in (LibTorch 2.6+)
};

// Whether a converge cell's trained model can be evaluated at `precision` here (eval_precisions):
// int8 always (it is evaluated on the CPU, whatever device trained); tf32 on CUDA of compute
// capability 8.0 or newer; bf16 where the cell could run bf16; fp16 on CUDA, or on the CPU with
// LibTorch 2.x. kUnsupported naming what would work.
Status CheckEvalPrecision(Precision precision, const TorchCell& cell, const Capabilities& caps);

// Whether the cell can run here, before any model is built. kUnsupported with a message that
// says what is missing and what would work (e.g. "tf32 is a CUDA matrix-unit mode ...").
Status CheckSupported(const TorchCell& cell, const Capabilities& caps);

}  // namespace dlbench::torchrunner
