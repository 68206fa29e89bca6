#include "cell_options.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <utility>

namespace dlbench::torchrunner {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }
Error Unsupported(std::string message) { return MakeError(ErrorKind::kUnsupported, std::move(message)); }

std::string Trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t pos = s.find(sep, start);
    parts.push_back(Trim(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

// Strict decimal integer: the whole text, optional sign, digits.
std::optional<std::int64_t> ParseInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

Result<std::string> GetString(const nlohmann::json& params, const char* key, const std::string& fallback) {
  if (!params.contains(key) || params.at(key).is_null()) return fallback;
  const auto& v = params.at(key);
  if (!v.is_string()) return Invalid(fmt::format("parameter '{}' must be a string, got {}", key, v.dump()));
  return v.get<std::string>();
}

Result<std::optional<std::int64_t>> GetInt(const nlohmann::json& params, const char* key) {
  if (!params.contains(key) || params.at(key).is_null()) return std::optional<std::int64_t>();
  const auto& v = params.at(key);
  if (v.is_number_integer()) return std::optional<std::int64_t>(v.get<std::int64_t>());
  if (v.is_string()) {
    if (auto n = ParseInt(v.get<std::string>())) return std::optional<std::int64_t>(*n);
  }
  return Invalid(fmt::format("parameter '{}' must be an integer, got {}", key, v.dump()));
}

Result<std::optional<double>> GetDouble(const nlohmann::json& params, const char* key) {
  if (!params.contains(key) || params.at(key).is_null()) return std::optional<double>();
  const auto& v = params.at(key);
  if (v.is_number()) return std::optional<double>(v.get<double>());
  return Invalid(fmt::format("parameter '{}' must be a number, got {}", key, v.dump()));
}

Result<bool> GetBool(const nlohmann::json& params, const char* key, bool fallback) {
  if (!params.contains(key) || params.at(key).is_null()) return fallback;
  const auto& v = params.at(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return Invalid(fmt::format("parameter '{}' must be true or false, got {}", key, v.dump()));
}

Result<DeviceSpec> ParseDevice(const std::string& text) {
  DeviceSpec d;
  if (text == "cpu") return d;
  if (text == "cuda") {
    d.kind = DeviceKind::kCuda;
    return d;
  }
  if (text.rfind("cuda:", 0) == 0) {
    const auto index = ParseInt(text.substr(5));
    if (index && *index >= 0 && *index < 1024) {
      d.kind = DeviceKind::kCuda;
      d.index = static_cast<int>(*index);
      return d;
    }
  }
  return Invalid(fmt::format("parameter 'device' must be cpu, cuda or cuda:N, got '{}'", text));
}

Result<Precision> ParsePrecision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "tf32") return Precision::kTf32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") return Precision::kFp16;
  if (text == "int8") return Precision::kInt8;
  return Invalid(
      fmt::format("parameter 'precision' must be one of fp32, tf32, bf16, fp16, int8, got '{}'", text));
}

Result<MemoryFormat> ParseMemoryFormat(const std::string& text) {
  if (text == "auto") return MemoryFormat::kAuto;
  if (text == "contiguous") return MemoryFormat::kContiguous;
  if (text == "channels_last") return MemoryFormat::kChannelsLast;
  return Invalid(
      fmt::format("parameter 'memory_format' must be auto, contiguous or channels_last, got '{}'", text));
}

}  // namespace

const char* ScenarioName(Scenario scenario) { return scenario == Scenario::kTrain ? "train" : "infer"; }

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kInt8:
      return "int8";
  }
  return "fp32";
}

const char* MemoryFormatName(MemoryFormat format) {
  switch (format) {
    case MemoryFormat::kAuto:
      return "auto";
    case MemoryFormat::kContiguous:
      return "contiguous";
    case MemoryFormat::kChannelsLast:
      return "channels_last";
  }
  return "auto";
}

const char* InputDtypeName(InputDtype dtype) {
  switch (dtype) {
    case InputDtype::kFloat32:
      return "float32";
    case InputDtype::kFloat16:
      return "float16";
    case InputDtype::kBFloat16:
      return "bfloat16";
    case InputDtype::kInt64:
      return "int64";
    case InputDtype::kInt32:
      return "int32";
    case InputDtype::kBool:
      return "bool";
  }
  return "float32";
}

std::string DeviceSpec::ToString() const {
  return kind == DeviceKind::kCpu ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Result<std::vector<std::vector<std::int64_t>>> ParseInputShapes(const std::string& text,
                                                                std::int64_t batch_size) {
  std::vector<std::vector<std::int64_t>> shapes;
  if (Trim(text).empty())
    return Invalid("parameter 'input_shapes' is empty; write e.g. \"B,3,224,224;B,16\"");
  for (const std::string& one : Split(text, ';')) {
    std::vector<std::int64_t> shape;
    for (const std::string& dim : Split(one, ',')) {
      if (dim == "B") {
        shape.push_back(batch_size);
        continue;
      }
      const auto n = ParseInt(dim);
      if (!n || *n <= 0) {
        return Invalid(
            fmt::format("parameter 'input_shapes': '{}' in '{}' is not a positive integer or B", dim, one));
      }
      shape.push_back(*n);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

Result<std::vector<InputDtype>> ParseInputDtypes(const std::string& text) {
  std::vector<InputDtype> dtypes;
  for (const std::string& name : Split(text, ';')) {
    if (name == "float32" || name == "float")
      dtypes.push_back(InputDtype::kFloat32);
    else if (name == "float16" || name == "half")
      dtypes.push_back(InputDtype::kFloat16);
    else if (name == "bfloat16")
      dtypes.push_back(InputDtype::kBFloat16);
    else if (name == "int64" || name == "long")
      dtypes.push_back(InputDtype::kInt64);
    else if (name == "int32" || name == "int")
      dtypes.push_back(InputDtype::kInt32);
    else if (name == "bool")
      dtypes.push_back(InputDtype::kBool);
    else {
      return Invalid(
          fmt::format("parameter 'input_dtypes': unknown dtype '{}' (use float32, float16, bfloat16, "
                      "int64, int32 or bool)",
                      name));
    }
  }
  return dtypes;
}

Result<TorchCell> ParseTorchCell(const nlohmann::json& params) {
  if (!params.is_object()) return Invalid("CONFIGURE params must be an object");
  TorchCell cell;
  cell.params = params;

  auto model = GetString(params, "model", "");
  if (!model.ok()) return model.error();
  if (model->empty()) return Invalid("parameter 'model' is required");
  cell.model = *model;

  auto scenario = GetString(params, "scenario", "train");
  if (!scenario.ok()) return scenario.error();
  if (*scenario == "train")
    cell.scenario = Scenario::kTrain;
  else if (*scenario == "infer")
    cell.scenario = Scenario::kInfer;
  else
    return Invalid(fmt::format("parameter 'scenario' must be train or infer, got '{}'", *scenario));

  auto batch = GetInt(params, "batch_size");
  if (!batch.ok()) return batch.error();
  if (batch->has_value()) {
    if (**batch <= 0) return Invalid(fmt::format("parameter 'batch_size' must be positive, got {}", **batch));
    cell.batch_size = **batch;
  }

  auto device = GetString(params, "device", "cpu");
  if (!device.ok()) return device.error();
  auto spec = ParseDevice(*device);
  if (!spec.ok()) return spec.error();
  cell.device = *spec;

  auto precision = GetString(params, "precision", "fp32");
  if (!precision.ok()) return precision.error();
  auto p = ParsePrecision(*precision);
  if (!p.ok()) return p.error();
  cell.precision = *p;

  auto format = GetString(params, "memory_format", "auto");
  if (!format.ok()) return format.error();
  auto f = ParseMemoryFormat(*format);
  if (!f.ok()) return f.error();
  cell.memory_format = *f;

  auto impl = GetString(params, "optimizer_impl", "auto");
  if (!impl.ok()) return impl.error();
  if (*impl == "auto")
    cell.optimizer_impl = OptimizerImpl::kAuto;
  else if (*impl == "foreach")
    cell.optimizer_impl = OptimizerImpl::kForeach;
  else if (*impl == "per_param")
    cell.optimizer_impl = OptimizerImpl::kPerParameter;
  else
    return Invalid(
        fmt::format("parameter 'optimizer_impl' must be auto, foreach or per_param, got '{}'", *impl));

  auto bench = GetBool(params, "cudnn_benchmark", true);
  if (!bench.ok()) return bench.error();
  cell.cudnn_benchmark = *bench;
  auto det = GetBool(params, "deterministic", false);
  if (!det.ok()) return det.error();
  cell.deterministic = *det;

  auto threads = GetInt(params, "threads");
  if (!threads.ok()) return threads.error();
  if (threads->has_value()) {
    if (**threads <= 0 || **threads > 4096) {
      return Invalid(fmt::format("parameter 'threads' must be between 1 and 4096, got {}", **threads));
    }
    cell.threads = static_cast<int>(**threads);
  }

  auto lr = GetDouble(params, "lr");
  if (!lr.ok()) return lr.error();
  if (lr->has_value() && !(**lr > 0.0))
    return Invalid(fmt::format("parameter 'lr' must be positive, got {}", **lr));
  cell.lr = *lr;

  auto strategy = GetString(params, "strategy", "none");
  if (!strategy.ok()) return strategy.error();
  if (*strategy == "ddp") return Unsupported("unsupported: ddp is not implemented in this runner yet");
  if (*strategy != "none")
    return Invalid(fmt::format("parameter 'strategy' must be none or ddp, got '{}'", *strategy));
  auto world = GetInt(params, "world_size");
  if (!world.ok()) return world.error();
  if (world->has_value() && **world != 1) {
    return Invalid(
        fmt::format("parameter 'world_size' is {} but strategy is none; a single process has "
                    "world_size 1",
                    **world));
  }

  if (cell.model == kTorchScriptModel) {
    TorchScriptSpec ts;
    auto path = GetString(params, "model_path", "");
    if (!path.ok()) return path.error();
    if (path->empty())
      return Invalid("model 'torchscript' needs parameter 'model_path' (a file saved by torch.jit.save)");
    ts.path = *path;
    auto shapes_text = GetString(params, "input_shapes", "");
    if (!shapes_text.ok()) return shapes_text.error();
    if (shapes_text->empty()) {
      return Invalid(
          "model 'torchscript' needs parameter 'input_shapes', e.g. \"B,3,224,224\" (B = batch size)");
    }
    auto shapes = ParseInputShapes(*shapes_text, cell.batch_size);
    if (!shapes.ok()) return shapes.error();
    ts.input_shapes = std::move(*shapes);
    auto dtypes_text = GetString(params, "input_dtypes", "");
    if (!dtypes_text.ok()) return dtypes_text.error();
    if (dtypes_text->empty()) {
      ts.input_dtypes.assign(ts.input_shapes.size(), InputDtype::kFloat32);
    } else {
      auto dtypes = ParseInputDtypes(*dtypes_text);
      if (!dtypes.ok()) return dtypes.error();
      ts.input_dtypes = std::move(*dtypes);
    }
    if (ts.input_dtypes.size() != ts.input_shapes.size()) {
      return Invalid(
          fmt::format("parameters 'input_shapes' and 'input_dtypes' declare {} and {} inputs; they must "
                      "match",
                      ts.input_shapes.size(), ts.input_dtypes.size()));
    }
    cell.torchscript = std::move(ts);
  }
  auto data = ParseDataOptions(params);
  if (!data.ok()) return data.error();
  cell.data = std::move(*data);
  return cell;
}

Status CheckSupported(const TorchCell& cell, const Capabilities& caps) {
  const bool cuda = cell.device.kind == DeviceKind::kCuda;
  DLBENCH_RETURN_IF_ERROR(CheckDataSupported(cell.data, cuda));
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
  switch (cell.precision) {
    case Precision::kInt8:
      return Unsupported(
          "unsupported: int8 is not implemented in this runner yet (docs/torch-runner.md says what "
          "would be needed); use fp32, tf32, bf16 or fp16");
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
      if (!cuda && cell.scenario == Scenario::kTrain) {
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
