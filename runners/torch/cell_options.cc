#include "cell_options.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "config/registry.h"
#include "config/runner_params.h"

namespace dlbench::torchrunner {
namespace {

using config::RunnerParams;

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }
Error Unsupported(std::string message) { return MakeError(ErrorKind::kUnsupported, std::move(message)); }

// Enum parameters map their registry names to this runner's enums. A name the registry allows
// and the table lacks is a drift that tests/e2e/runner_params_test.cc catches; it is reported
// as invalid rather than mistaken for a default.
template <class E, std::size_t N>
Result<E> FromName(const std::pair<const char*, E> (&names)[N], const char* param, const std::string& text) {
  for (const auto& [name, value] : names) {
    if (text == name) return value;
  }
  return Invalid(fmt::format("parameter '{}': '{}' is not implemented by this runner", param, text));
}

template <class E, std::size_t N>
const char* NameOf(const std::pair<const char*, E> (&names)[N], E value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return names[0].first;
}

constexpr std::pair<const char*, Scenario> kScenarios[] = {
    {"train", Scenario::kTrain}, {"infer", Scenario::kInfer}, {"converge", Scenario::kConverge}};
constexpr std::pair<const char*, Precision> kPrecisions[] = {{"fp32", Precision::kFp32},
                                                             {"tf32", Precision::kTf32},
                                                             {"bf16", Precision::kBf16},
                                                             {"fp16", Precision::kFp16},
                                                             {"int8", Precision::kInt8}};
constexpr std::pair<const char*, MemoryFormat> kMemoryFormats[] = {
    {"auto", MemoryFormat::kAuto},
    {"contiguous", MemoryFormat::kContiguous},
    {"channels_last", MemoryFormat::kChannelsLast}};
constexpr std::pair<const char*, OptimizerImpl> kOptimizerImpls[] = {
    {"auto", OptimizerImpl::kAuto},
    {"foreach", OptimizerImpl::kForeach},
    {"per_param", OptimizerImpl::kPerParameter}};
constexpr std::pair<const char*, DdpMode> kDdpModes[] = {
    {"overlap", DdpMode::kOverlap}, {"serial", DdpMode::kSerial}, {"compute_only", DdpMode::kComputeOnly}};
constexpr std::pair<const char*, DdpBackend> kDdpBackends[] = {
    {"auto", DdpBackend::kAuto}, {"gloo", DdpBackend::kGloo}, {"nccl", DdpBackend::kNccl}};
constexpr std::pair<const char*, InputDtype> kInputDtypes[] = {
    {"float32", InputDtype::kFloat32}, {"float16", InputDtype::kFloat16}, {"bfloat16", InputDtype::kBFloat16},
    {"float64", InputDtype::kFloat64}, {"int64", InputDtype::kInt64},     {"int32", InputDtype::kInt32},
    {"int16", InputDtype::kInt16},     {"int8", InputDtype::kInt8},       {"uint8", InputDtype::kUInt8},
    {"bool", InputDtype::kBool}};

}  // namespace

const char* ScenarioName(Scenario scenario) { return NameOf(kScenarios, scenario); }
const char* PrecisionName(Precision precision) { return NameOf(kPrecisions, precision); }
const char* MemoryFormatName(MemoryFormat format) { return NameOf(kMemoryFormats, format); }
const char* InputDtypeName(InputDtype dtype) { return NameOf(kInputDtypes, dtype); }
const char* DdpModeName(DdpMode mode) { return NameOf(kDdpModes, mode); }
const char* DdpBackendName(DdpBackend backend) { return NameOf(kDdpBackends, backend); }

namespace {

// strategy, world_size and the ddp keys: what each needs of the others.
Result<std::optional<DdpOptions>> ParseDdp(const RunnerParams& p, Scenario scenario) {
  const bool ddp = p.Text("strategy").value() == "ddp";
  const std::int64_t world = p.Int("world_size").value();
  if (!ddp) {
    if (world != 1) {
      return Invalid(fmt::format(
          "parameter 'world_size' is {} but strategy is none; a single process has world_size 1", world));
    }
    for (const char* key : {"ddp_mode", "backend", "bucket_cap_bytes"}) {
      if (p.Given(key)) return Invalid(fmt::format("parameter '{}' applies with strategy: ddp only", key));
    }
    return std::optional<DdpOptions>();
  }
  if (scenario != Scenario::kTrain) {
    return Invalid(
        "strategy ddp trains data-parallel: it needs scenario train (infer has no gradients to "
        "all-reduce; converge trains in one process)");
  }
  DdpOptions d;
  d.world_size = static_cast<int>(world);
  auto mode = FromName(kDdpModes, "ddp_mode", p.Text("ddp_mode").value_or("overlap"));
  if (!mode.ok()) return mode.error();
  d.mode = *mode;
  auto backend = FromName(kDdpBackends, "backend", p.Text("backend").value_or("auto"));
  if (!backend.ok()) return backend.error();
  d.backend = *backend;
  d.bucket_cap_bytes = p.Int("bucket_cap_bytes").value_or(kDefaultBucketCapBytes);
  return std::optional<DdpOptions>(d);
}

}  // namespace

std::string DeviceSpec::ToString() const {
  return kind == DeviceKind::kCpu ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Result<std::vector<std::vector<std::int64_t>>> ParseInputShapes(const std::string& text,
                                                                std::int64_t batch_size) {
  std::optional<std::vector<std::vector<std::int64_t>>> shapes = config::ParseShapes(text);
  if (!shapes) {
    return Invalid(fmt::format(
        "parameter 'input_shapes': expected {} (got '{}')",
        config::DescribeExpected(*config::FindParam("input_shapes", config::ParamSection::kCell)), text));
  }
  for (auto& shape : *shapes) {
    for (std::int64_t& dim : shape) {
      if (dim == config::kBatchDim) dim = batch_size;
    }
  }
  return *std::move(shapes);
}

Result<std::vector<InputDtype>> ParseInputDtypes(const std::string& text) {
  std::optional<std::vector<std::string>> names = config::ParseDtypes(text);
  if (!names) {
    return Invalid(fmt::format(
        "parameter 'input_dtypes': expected {} (got '{}')",
        config::DescribeExpected(*config::FindParam("input_dtypes", config::ParamSection::kCell)), text));
  }
  std::vector<InputDtype> dtypes;
  for (const std::string& name : *names) {
    auto dtype = FromName(kInputDtypes, "input_dtypes", name);
    if (!dtype.ok()) return dtype.error();
    dtypes.push_back(*dtype);
  }
  return dtypes;
}

namespace {

// model_path, input_shapes and input_dtypes of a model loaded from a file (torchscript, aoti).
// `file` says what model_path must name.
Result<TorchScriptSpec> ParseFileModel(const RunnerParams& p, const std::string& model, const char* file,
                                       std::int64_t batch_size) {
  TorchScriptSpec spec;
  spec.path = p.Text("model_path").value_or("");
  if (spec.path.empty())
    return Invalid(fmt::format("model '{}' needs parameter 'model_path' ({})", model, file));
  const std::string shapes_text = p.Text("input_shapes").value_or("");
  if (shapes_text.empty()) {
    return Invalid(fmt::format(
        "model '{}' needs parameter 'input_shapes', e.g. \"B,3,224,224\" (B = batch size)", model));
  }
  auto shapes = ParseInputShapes(shapes_text, batch_size);
  if (!shapes.ok()) return shapes.error();
  spec.input_shapes = std::move(*shapes);
  if (auto dtypes_text = p.Text("input_dtypes")) {
    auto dtypes = ParseInputDtypes(*dtypes_text);
    if (!dtypes.ok()) return dtypes.error();
    spec.input_dtypes = std::move(*dtypes);
  } else {
    spec.input_dtypes.assign(spec.input_shapes.size(), InputDtype::kFloat32);
  }
  if (spec.input_dtypes.size() != spec.input_shapes.size()) {
    return Invalid(
        fmt::format("parameters 'input_shapes' and 'input_dtypes' declare {} and {} inputs; they must "
                    "match",
                    spec.input_shapes.size(), spec.input_dtypes.size()));
  }
  return spec;
}

}  // namespace

Result<TorchCell> ParseTorchCell(const nlohmann::json& params) {
  // Types, ranges, allowed values, formats and defaults: the registry's (config::RunnerParams).
  Result<RunnerParams> parsed = RunnerParams::Parse(params, "torch");
  if (!parsed.ok()) return parsed.error();
  const RunnerParams& p = *parsed;
  TorchCell cell;
  cell.params = params;
  cell.model = p.Text("model").value();

  auto scenario = FromName(kScenarios, "scenario", p.Text("scenario").value());
  if (!scenario.ok()) return scenario.error();
  cell.scenario = *scenario;
  cell.batch_size = p.Int("batch_size").value();

  const std::optional<config::DeviceName> device = config::ParseDeviceName(p.Text("device").value());
  DLBENCH_CHECK(device.has_value(), "the registry validated the device");
  cell.device.kind = device->cuda ? DeviceKind::kCuda : DeviceKind::kCpu;
  cell.device.index = device->index;

  auto precision = FromName(kPrecisions, "precision", p.Text("precision").value());
  if (!precision.ok()) return precision.error();
  cell.precision = *precision;
  auto format = FromName(kMemoryFormats, "memory_format", p.Text("memory_format").value());
  if (!format.ok()) return format.error();
  cell.memory_format = *format;
  // No registry default, so that cells stored before the parameter existed keep their keys;
  // absent is "auto" (the registry's documented default text).
  auto impl = FromName(kOptimizerImpls, "optimizer_impl", p.Text("optimizer_impl").value_or("auto"));
  if (!impl.ok()) return impl.error();
  cell.optimizer_impl = *impl;

  cell.cudnn_benchmark = p.Bool("cudnn_benchmark").value();
  if (auto limit = p.Int("cudnn_benchmark_limit"))
    cell.cudnn_benchmark_limit = static_cast<int>(*limit);  // 0..1000
  cell.cuda_graph = p.Bool("cuda_graph").value_or(false);   // no registry default: see optimizer_impl
  cell.deterministic = p.Bool("deterministic").value();
  if (auto threads = p.Int("threads")) cell.threads = static_cast<int>(*threads);  // 1..4096
  cell.lr = p.Number("lr");
  if (auto n = p.Int("reference_samples")) cell.reference_samples = static_cast<int>(*n);  // 0..256
  struct ToleranceKey {
    const char* key;
    std::optional<std::vector<std::pair<std::string, double>>> (*parse)(std::string_view);
    std::optional<double> TorchCell::*field;
  };
  for (const ToleranceKey& t :
       {ToleranceKey{"min_agreement", config::ParsePrecisionTolerances, &TorchCell::min_agreement},
        ToleranceKey{"max_abs_diff", config::ParsePrecisionDiffTolerances, &TorchCell::max_abs_diff},
        ToleranceKey{"max_mean_abs_diff", config::ParsePrecisionDiffTolerances,
                     &TorchCell::max_mean_abs_diff}}) {
    auto text = p.Text(t.key);
    if (!text) continue;
    if (cell.scenario != Scenario::kInfer) {
      return Invalid(fmt::format(
          "parameter '{}' applies with scenario: infer, whose evaluation outputs it checks", t.key));
    }
    const auto tolerances = t.parse(*text);
    DLBENCH_CHECK(tolerances.has_value(), "the registry validated the tolerance");
    for (const auto& [name, tolerance] : *tolerances) {
      if (name == PrecisionName(cell.precision)) cell.*t.field = tolerance;
    }
  }
  if (auto text = p.Text("eval_precisions")) {
    if (cell.scenario != Scenario::kConverge) {
      return Invalid(
          "parameter 'eval_precisions' applies with scenario: converge (the trained model's held-out "
          "accuracy per precision); an infer cell compares its outputs with the fp32 cell's instead");
    }
    const std::optional<std::vector<std::string>> names = config::ParsePrecisionList(*text);
    DLBENCH_CHECK(names.has_value(), "the registry validated eval_precisions");
    // fp32 is the reference of every delta: evaluated first, listed or not.
    cell.eval_precisions.push_back(Precision::kFp32);
    for (const std::string& name : *names) {
      auto precision = FromName(kPrecisions, "eval_precisions", name);
      if (!precision.ok()) return precision.error();
      if (*precision != Precision::kFp32) cell.eval_precisions.push_back(*precision);
    }
  }

  // Support and cross-parameter rules: what the registry cannot say about one value alone.
  auto ddp = ParseDdp(p, cell.scenario);
  if (!ddp.ok()) return ddp.error();
  cell.ddp = *ddp;

  if (cell.model == kTorchScriptModel) {
    auto spec = ParseFileModel(p, cell.model, "a file saved by torch.jit.save", cell.batch_size);
    if (!spec.ok()) return spec.error();
    cell.torchscript = std::move(*spec);
  } else if (cell.model == kAotiModel) {
    auto spec = ParseFileModel(
        p, cell.model,
        "a .pt2 package from torch._inductor.aoti_compile_and_package: bench/gpu/aoti_package.py",
        cell.batch_size);
    if (!spec.ok()) return spec.error();
    cell.aoti = std::move(*spec);
  }
  auto data = ParseDataOptions(p);
  if (!data.ok()) return data.error();
  cell.data = std::move(*data);
  return cell;
}

Status CheckEvalPrecision(Precision precision, const TorchCell& cell, const Capabilities& caps) {
  const bool cuda = cell.device.kind == DeviceKind::kCuda;
  switch (precision) {
    case Precision::kFp32:
    case Precision::kInt8:  // the trained model's int8 form runs on the CPU (converge.h)
      return Status::Ok();
    case Precision::kTf32:
      if (!cuda || (caps.compute_major && *caps.compute_major < 8)) {
        return Unsupported(
            "unsupported: eval_precisions tf32 is a CUDA matrix-unit mode (compute capability 8.0 or newer); "
            "leave it out of eval_precisions on this device");
      }
      return Status::Ok();
    case Precision::kBf16:
      if (cuda && caps.compute_major && *caps.compute_major < 8) {
        return Unsupported(fmt::format(
            "unsupported: eval_precisions bf16 needs compute capability 8.0 or newer; {} has {}.x",
            cell.device.ToString(), *caps.compute_major));
      }
      return Status::Ok();
    case Precision::kFp16:
      if (!cuda && caps.torch_major < 2) {
        return Unsupported(
            "unsupported: eval_precisions fp16 on cpu needs LibTorch 2.x (1.13's cpu autocast is bf16 "
            "only); use bf16 on cpu");
      }
      return Status::Ok();
  }
  return Status::Ok();
}

namespace {

// model: aoti's rules (aoti_workload.h): a package is a compiled inference graph at one precision.
Status CheckAotiSupported(const TorchCell& cell, const Capabilities& caps) {
  if (!caps.aoti_built) {
    return Unsupported(
        "unsupported: model aoti needs the AOTInductor package loader (LibTorch 2.6+, "
        "torch::inductor::AOTIModelPackageLoader), which this dlbench-torch was built without (the GPU "
        "build has it: scripts/build-gpu.sh; or run the model eagerly by name, or as model torchscript)");
  }
  if (cell.ddp) {
    return Unsupported(
        "unsupported: model aoti with strategy ddp: an AOTInductor package has no gradients to all-reduce; "
        "use strategy none and scenario infer");
  }
  if (cell.scenario != Scenario::kInfer) {
    return Unsupported(
        fmt::format("unsupported: model aoti with scenario {}: AOTInductor packages hold an inference graph: "
                    "no backward; use scenario infer",
                    ScenarioName(cell.scenario)));
  }
  if (cell.cuda_graph) {
    return Unsupported(
        "unsupported: model aoti with cuda_graph: the package's compiled runner makes its own launches, "
        "which this runner does not capture; use cuda_graph false");
  }
  if (cell.precision == Precision::kInt8) {
    return Unsupported(
        "unsupported: model aoti with precision int8: a package runs at the precision it was compiled at "
        "(bench/gpu/aoti_package.py makes fp32 and bf16 ones); int8 needs a TorchScript model quantized "
        "offline, run as model torchscript on the cpu");
  }
  if (cell.memory_format == MemoryFormat::kChannelsLast) {
    return Unsupported(
        "unsupported: model aoti with memory_format channels_last: a package's inputs must have the strides "
        "it was exported with (contiguous here); use memory_format auto or contiguous");
  }
  return Status::Ok();
}

}  // namespace

Status CheckSupported(const TorchCell& cell, const Capabilities& caps) {
  const bool cuda = cell.device.kind == DeviceKind::kCuda;
  if (cell.aoti) DLBENCH_RETURN_IF_ERROR(CheckAotiSupported(cell, caps));
  DLBENCH_RETURN_IF_ERROR(CheckDataSupported(cell.data, cuda));
  if (cell.ddp) {
    if (cell.ddp->backend == DdpBackend::kNccl && !cuda) {
      return Unsupported(
          "unsupported: backend nccl all-reduces CUDA tensors: it needs device cuda (use "
          "backend gloo or auto on cpu)");
    }
    const bool nccl =
        cell.ddp->backend == DdpBackend::kNccl || (cell.ddp->backend == DdpBackend::kAuto && cuda);
    if (nccl && !caps.nccl_built) {
      return Unsupported(
          "unsupported: backend nccl, but this dlbench-torch was built without c10d's NCCL "
          "process group (the GPU build has it: scripts/build-gpu.sh; or use backend gloo)");
    }
    if (cell.torchscript) {
      return Unsupported(
          "unsupported: strategy ddp trains zoo models; a TorchScript model is not wired to "
          "the Reducer yet");
    }
    if (cell.precision == Precision::kFp16) {
      return Unsupported(
          "unsupported: fp16 ddp (the loss scaler's skip decision would have to agree across "
          "ranks); use bf16 or fp32");
    }
    if (cell.data.source != DataSource::kDevice) {
      return Unsupported(
          fmt::format("unsupported: strategy ddp with data: {} (each rank would need its own "
                      "shard of the input); use data: device",
                      DataSourceName(cell.data.source)));
    }
  }
  if (cuda) {
    if (!caps.cuda_built) {
      return Unsupported(
          fmt::format("unsupported: device {} requested but this LibTorch was built without CUDA "
                      "(use device cpu, or the GPU build: scripts/build-gpu.sh)",
                      cell.device.ToString()));
    }
    if (caps.cuda_device_count <= cell.device.index) {
      return Unsupported(fmt::format("unsupported: device {} requested but {} CUDA device(s) are visible",
                                     cell.device.ToString(), caps.cuda_device_count));
    }
  }
  if (cell.cuda_graph) {
    if (!cuda) {
      return Unsupported(
          "unsupported: cuda_graph replays a captured CUDA graph: it needs device cuda (on cpu leave "
          "cuda_graph false)");
    }
    if (cell.scenario != Scenario::kInfer && cell.scenario != Scenario::kTrain) {
      return Unsupported(fmt::format(
          "unsupported: cuda_graph with scenario {}: infer, load scenarios and train steps are captured "
          "here (a converge cell's evaluations and checkpoints are not); use cuda_graph false",
          ScenarioName(cell.scenario)));
    }
    if (cell.scenario == Scenario::kTrain && cell.precision == Precision::kFp16) {
      return Unsupported(
          "unsupported: cuda_graph with precision fp16 training: the loss scaler reads its found-inf flag "
          "on the host every step, which a CUDA graph cannot; use bf16 (no loss scaling) or cuda_graph "
          "false");
    }
    if (cell.scenario == Scenario::kTrain && cell.ddp) {
      return Unsupported(
          "unsupported: cuda_graph with strategy ddp: the gradients' all-reduce is not captured here; use "
          "cuda_graph false");
    }
    if (cell.data.source != DataSource::kDevice) {
      return Unsupported(fmt::format(
          "unsupported: cuda_graph with data: {}: a replay reads fixed device buffers, which the input "
          "pipeline's copies would have to fill on the graph's stream; use data: device",
          DataSourceName(cell.data.source)));
    }
  }
  for (const Precision p : cell.eval_precisions) DLBENCH_RETURN_IF_ERROR(CheckEvalPrecision(p, cell, caps));
  switch (cell.precision) {
    // Dynamic int8 Linear layers (models/dynamic_int8.h), or a TorchScript file quantized offline:
    // the CPU's quantized engines only.
    case Precision::kInt8:
      if (cell.model != kDynamicInt8Model && cell.model != kTorchScriptModel) {
        return Unsupported(
            fmt::format("unsupported: precision int8 of {}: only bert_base has a dynamic int8 form here "
                        "(its Linear layers); int8 CNNs need a TorchScript model quantized offline "
                        "(scripts/quantize_cnn.py), run as model torchscript at precision int8",
                        cell.model));
      }
      if (cuda) {
        return Unsupported(fmt::format(
            "unsupported: precision int8 on {}: {} runs on the CPU's quantized engines only (int8 on "
            "CUDA needs TensorRT, which this runner does not use); use device cpu for int8, or bf16/fp16 "
            "on CUDA",
            cell.device.ToString(),
            cell.model == kTorchScriptModel ? "a TorchScript model quantized offline"
                                            : "dynamic int8 Linear"));
      }
      if (cell.scenario != Scenario::kInfer) {
        return Unsupported(
            fmt::format("unsupported: precision int8 with scenario {}: int8 is an inference deployment; use "
                        "scenario infer (train in fp32 or bf16)",
                        ScenarioName(cell.scenario)));
      }
      break;
    case Precision::kTf32:
      if (!cuda) {
        return Unsupported(
            "unsupported: tf32 is a CUDA matrix-unit mode (Ampere and newer); on cpu use fp32 or bf16");
      }
      if (caps.compute_major && *caps.compute_major < 8) {
        return Unsupported(fmt::format("unsupported: tf32 needs compute capability 8.0 or newer; {} has {}.x",
                                       cell.device.ToString(), *caps.compute_major));
      }
      break;
    case Precision::kBf16:
      if (cuda && caps.compute_major && *caps.compute_major < 8) {
        return Unsupported(fmt::format("unsupported: bf16 needs compute capability 8.0 or newer; {} has {}.x",
                                       cell.device.ToString(), *caps.compute_major));
      }
      break;
    case Precision::kFp16:
      if (!cuda && caps.torch_major < 2) {
        return Unsupported(
            "unsupported: fp16 autocast on cpu needs LibTorch 2.x (1.13's cpu autocast is bf16 only); "
            "use bf16 on cpu");
      }
      if (!cuda && Trains(cell.scenario)) {
        return Unsupported(
            "unsupported: fp16 training on cpu (loss scaling runs on CUDA only in this runner); use "
            "bf16 on cpu");
      }
      break;
    case Precision::kFp32:
      break;
  }
  return Status::Ok();
}

}  // namespace dlbench::torchrunner
