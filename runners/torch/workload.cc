#include "workload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <torch/script.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "aoti_sidecar.h"
#include "aoti_workload.h"
#include "models/zoo.h"

namespace dlbench::torchrunner {
namespace {

void ParametersToMemoryFormat(const std::vector<torch::Tensor>& params, torch::MemoryFormat format) {
  if (format != torch::MemoryFormat::ChannelsLast) return;
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params) {
    if (p.dim() == 4) {
      // set_data keeps the parameter's identity (the optimizer and the module hold it).
      torch::Tensor mutable_p = p;
      mutable_p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
}

class ZooWorkload final : public Workload {
 public:
  explicit ZooWorkload(std::shared_ptr<ZooModel> model) : model_(std::move(model)) {}

  std::string name() const override { return model_->name(); }
  bool is_convolutional() const override { return model_->is_convolutional(); }

  void Prepare(const TorchCell& cell, torch::Device device, torch::MemoryFormat format,
               std::uint64_t seed) override {
    model_->to(device);
    ParametersToMemoryFormat(model_->parameters(), format);
    batch_ = model_->MakeBatch(cell.batch_size, device, seed);
    for (torch::Tensor& input : batch_.inputs) input = ToMemoryFormat(input, format);
  }
  void SetTraining(bool training) override { model_->train(training); }
  std::vector<torch::Tensor> Forward() override { return model_->Forward(batch_); }
  std::vector<ForwardStage> ForwardStages() override { return model_->ForwardStages(batch_); }
  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs) override {
    return model_->Loss(outputs, batch_);
  }
  torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) override {
    return model_->PostProcess(outputs);
  }
  std::optional<double> ForwardFlopsPerSample() const override { return model_->ForwardFlopsPerSample(); }
  nlohmann::json EffectiveOptions() const override { return model_->EffectiveOptions(); }
  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    return model_->MakeOptimizer(lr);
  }
  std::string OptimizerName() const override {
    return "model default (SGD momentum 0.9 for CNNs, AdamW for BERT)";
  }
  std::vector<torch::Tensor> FeedTensors() override {
    std::vector<torch::Tensor> tensors = batch_.inputs;
    if (batch_.target.defined()) tensors.push_back(batch_.target);
    return tensors;
  }
  std::optional<std::int64_t> NumClasses() const override {
    const nlohmann::json options = model_->EffectiveOptions();
    if (!batch_.target.defined() || batch_.target.dim() != 1 || !options.contains("num_classes")) {
      return std::nullopt;
    }
    return options.at("num_classes").get<std::int64_t>();
  }
  std::vector<torch::Tensor> Parameters() const override { return model_->parameters(); }
  std::vector<torch::Tensor> Buffers() const override { return model_->buffers(); }
  std::vector<torch::Tensor> MakeInputs(std::int64_t samples, torch::Device device,
                                        std::uint64_t seed) override {
    return model_->MakeBatch(samples, device, seed).inputs;
  }
  std::vector<torch::Tensor> ForwardInputs(const std::vector<torch::Tensor>& inputs) override {
    Batch batch;
    batch.inputs = inputs;
    return model_->Forward(batch);
  }
  void QuantizeDynamicInt8() override {
    if (!model_->SupportsDynamicInt8()) {
      throw UnsupportedError("precision int8: " + model_->name() +
                             " has no dynamic int8 form; bert_base has");
    }
    model_->QuantizeDynamicInt8();
  }
  void QuantizeCalibratedInt8(const torch::Tensor& calibration_images) override {
    if (!model_->SupportsCalibratedInt8()) {
      throw UnsupportedError("int8 evaluation: " + model_->name() +
                             " has no calibrated int8 form; fashion_cnn and fashion_cnn_bn have");
    }
    model_->QuantizeCalibratedInt8(calibration_images);
  }
  std::optional<WeightBytes> DeployedWeightBytes() const override { return model_->DeployedWeightBytes(); }
  nlohmann::json QuantizedInModel() const override { return nullptr; }
  std::optional<std::int64_t> ModelFileBytes() const override { return std::nullopt; }

 private:
  std::shared_ptr<ZooModel> model_;
  Batch batch_;
};

torch::ScalarType ToScalarType(InputDtype dtype) {
  switch (dtype) {
    case InputDtype::kFloat32:
      return torch::kFloat;
    case InputDtype::kFloat16:
      return torch::kHalf;
    case InputDtype::kBFloat16:
      return torch::kBFloat16;
    case InputDtype::kFloat64:
      return torch::kDouble;
    case InputDtype::kInt64:
      return torch::kLong;
    case InputDtype::kInt32:
      return torch::kInt;
    case InputDtype::kInt16:
      return torch::kShort;
    case InputDtype::kInt8:
      return torch::kChar;
    case InputDtype::kUInt8:
      return torch::kByte;
    case InputDtype::kBool:
      return torch::kBool;
  }
  return torch::kFloat;
}

std::vector<torch::Tensor> OutputTensors(const c10::IValue& out) {
  if (out.isTensor()) return {out.toTensor()};
  std::vector<torch::Tensor> tensors;
  if (out.isTuple()) {
    for (const c10::IValue& v : out.toTupleRef().elements()) {
      if (v.isTensor()) tensors.push_back(v.toTensor());
    }
  } else if (out.isTensorList()) {
    for (const torch::Tensor& t : out.toTensorVector()) tensors.push_back(t);
  } else if (out.isList()) {
    for (const c10::IValue& v : out.toListRef()) {
      if (v.isTensor()) tensors.push_back(v.toTensor());
    }
  }
  if (tensors.empty()) {
    throw std::invalid_argument(
        fmt::format("the TorchScript model's forward returned {}, not tensors", out.tagKind()));
  }
  return tensors;
}

// The quantized content of a scripted module: the packed parameters of quantized layers (objects of
// the torch.classes.quantized custom classes: Conv2dPackedParamsBase, LinearPackedParamsBase, ...),
// by class, and the quantized tensors among its attributes. null when there is neither.
nlohmann::json FindQuantized(const torch::jit::Module& module) {
  constexpr std::string_view kQuantizedClasses = "torch.classes.quantized.";
  std::map<std::string, std::int64_t> packed;
  std::int64_t packed_total = 0, tensors = 0;
  for (const auto& attribute : module.named_attributes(/*recurse=*/true)) {
    const c10::IValue& v = attribute.value;
    if (v.isTensor() && v.toTensor().is_quantized()) ++tensors;
    if (!v.isObject()) continue;
    const std::string type = v.type()->str();
    const std::size_t at = type.find(kQuantizedClasses);
    if (at == std::string::npos) continue;
    ++packed[type.substr(at + kQuantizedClasses.size())];
    ++packed_total;
  }
  if (packed_total == 0 && tensors == 0) return nullptr;
  return {{"packed_layers", packed}, {"packed_layers_total", packed_total}, {"quantized_tensors", tensors}};
}

// A user's scripted module with declared inputs. Training needs forward to return the loss.
class TorchScriptWorkload final : public Workload {
 public:
  // A jit::Module is a handle to the scripted object: copying it shares the object.
  TorchScriptWorkload(const TorchScriptSpec& spec, const torch::jit::Module& module, std::int64_t file_bytes)
      : spec_(spec), module_(module), quantized_(FindQuantized(module_)), file_bytes_(file_bytes) {}

  std::string name() const override { return kTorchScriptModel; }
  bool is_convolutional() const override { return false; }

  void Prepare(const TorchCell& cell, torch::Device device, torch::MemoryFormat format,
               std::uint64_t seed) override {
    module_.to(device);
    ParametersToMemoryFormat(Parameters(), format);
    inputs_.clear();
    for (const torch::Tensor& t : MakeDeclaredInputs(spec_, device, seed)) {
      inputs_.emplace_back(ToMemoryFormat(t, format));
    }
    // One probe forward: a model that rejects the declared inputs fails here, as an invalid
    // cell, not as an internal error in the middle of the measured loop.
    std::vector<torch::Tensor> outputs;
    try {
      torch::NoGradGuard no_grad;
      outputs = OutputTensors(module_.forward(inputs_));
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::Error& e) {
      // Running out of memory is the cell's outcome, not a fault of the declared inputs.
      if (IsOutOfMemoryMessage(e.what_without_backtrace())) throw;
      throw std::invalid_argument(fmt::format("the TorchScript model rejected the declared inputs ({}): {}",
                                              DescribeInputs(), e.what_without_backtrace()));
    } catch (const std::runtime_error& e) {
      // The TorchScript interpreter rethrows an op's failure as a plain std::runtime_error that
      // carries the script's traceback.
      if (IsOutOfMemoryMessage(e.what())) throw;
      throw std::invalid_argument(fmt::format("the TorchScript model rejected the declared inputs ({}): {}",
                                              DescribeInputs(), e.what()));
    }
    if (Trains(cell.scenario) &&
        !(outputs.size() == 1 && outputs[0].dim() == 0 && c10::isFloatingType(outputs[0].scalar_type()))) {
      throw UnsupportedError(
          "unsupported: training a TorchScript model needs its forward to return the loss as one floating "
          "scalar tensor; this one returns " +
          std::to_string(outputs.size()) + " tensor(s) of shape " +
          fmt::format("{}", fmt::join(outputs[0].sizes().vec(), "x")) + "; use scenario infer");
    }
    if (Trains(cell.scenario) && Parameters().empty()) {
      throw UnsupportedError(
          "unsupported: the TorchScript model has no parameters to train; use scenario infer");
    }
  }

  void SetTraining(bool training) override { module_.train(training); }
  std::vector<torch::Tensor> Forward() override { return OutputTensors(module_.forward(inputs_)); }
  // A scripted module's forward is opaque here.
  std::vector<ForwardStage> ForwardStages() override { return {}; }
  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs) override { return outputs.at(0); }
  torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) override { return outputs.at(0); }
  std::optional<double> ForwardFlopsPerSample() const override { return std::nullopt; }
  nlohmann::json EffectiveOptions() const override {
    nlohmann::json inputs = nlohmann::json::array();
    for (std::size_t i = 0; i < spec_.input_shapes.size(); ++i) {
      inputs.push_back({{"shape", spec_.input_shapes[i]}, {"dtype", InputDtypeName(spec_.input_dtypes[i])}});
    }
    nlohmann::json options = {{"model_path", spec_.path}, {"inputs", inputs}, {"file_bytes", file_bytes_}};
    if (!quantized_.is_null()) options["quantized"] = quantized_;
    return options;
  }
  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    return std::make_unique<torch::optim::SGD>(Parameters(),
                                               torch::optim::SGDOptions(lr.value_or(0.01)).momentum(0.9));
  }
  std::string OptimizerName() const override { return "SGD momentum 0.9 (lr 0.01 unless lr is set)"; }
  std::vector<torch::Tensor> FeedTensors() override {
    std::vector<torch::Tensor> tensors;
    for (const c10::IValue& v : inputs_) tensors.push_back(v.toTensor());
    return tensors;
  }
  std::optional<std::int64_t> NumClasses() const override { return std::nullopt; }
  std::vector<torch::Tensor> Buffers() const override {
    std::vector<torch::Tensor> buffers;
    for (const torch::Tensor& b : module_.buffers()) buffers.push_back(b);
    return buffers;
  }
  std::vector<torch::Tensor> MakeInputs(std::int64_t, torch::Device, std::uint64_t) override {
    throw UnsupportedError(
        "unsupported: load scenarios need a zoo model; a TorchScript model's input_shapes do not say which "
        "dimension is the batch");
  }
  std::vector<torch::Tensor> ForwardInputs(const std::vector<torch::Tensor>&) override {
    throw UnsupportedError("unsupported: load scenarios need a zoo model");
  }

  std::vector<torch::Tensor> Parameters() const override {
    std::vector<torch::Tensor> params;
    for (const torch::Tensor& p : module_.parameters()) params.push_back(p);
    return params;
  }
  void QuantizeDynamicInt8() override {
    throw UnsupportedError(
        "unsupported: the runner does not quantize a TorchScript model; quantize it offline "
        "(scripts/quantize_cnn.py) and run the saved int8 model at precision int8");
  }
  void QuantizeCalibratedInt8(const torch::Tensor&) override {
    throw UnsupportedError("unsupported: int8 evaluation of a TorchScript model");
  }
  std::optional<WeightBytes> DeployedWeightBytes() const override { return std::nullopt; }
  nlohmann::json QuantizedInModel() const override { return quantized_; }
  std::optional<std::int64_t> ModelFileBytes() const override { return file_bytes_; }

 private:
  std::string DescribeInputs() const { return DescribeDeclaredInputs(spec_); }

  TorchScriptSpec spec_;
  torch::jit::Module module_;
  nlohmann::json quantized_;  // FindQuantized's, at load
  std::int64_t file_bytes_ = 0;
  std::vector<c10::IValue> inputs_;
};

}  // namespace

std::vector<torch::Tensor> MakeDeclaredInputs(const TorchScriptSpec& spec, torch::Device device,
                                              std::uint64_t seed) {
  // Random inputs from their own generator, so the batch depends on the seed alone. Integer
  // inputs are drawn from {0, 1}: any index-like input (token ids, class ids) is then valid.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<torch::Tensor> inputs;
  for (std::size_t i = 0; i < spec.input_shapes.size(); ++i) {
    const torch::ScalarType dtype = ToScalarType(spec.input_dtypes[i]);
    torch::Tensor t;
    if (c10::isFloatingType(dtype)) {
      t = at::randn(spec.input_shapes[i], gen, torch::TensorOptions().dtype(torch::kFloat)).to(dtype);
    } else {
      t = at::randint(0, 2, spec.input_shapes[i], gen, torch::TensorOptions().dtype(torch::kLong)).to(dtype);
    }
    inputs.push_back(t.to(device));
  }
  return inputs;
}

std::string DescribeDeclaredInputs(const TorchScriptSpec& spec) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < spec.input_shapes.size(); ++i) {
    parts.push_back(
        fmt::format("{} {}", InputDtypeName(spec.input_dtypes[i]), fmt::join(spec.input_shapes[i], "x")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

torch::Tensor ToMemoryFormat(const torch::Tensor& t, torch::MemoryFormat format) {
  if (format == torch::MemoryFormat::ChannelsLast && t.dim() == 4 && c10::isFloatingType(t.scalar_type())) {
    return t.contiguous(torch::MemoryFormat::ChannelsLast);
  }
  return t;
}

std::vector<std::string> KnownModelNames() {
  std::vector<std::string> names = KnownModels();
  names.emplace_back(kTorchScriptModel);
  names.emplace_back(kAotiModel);
  return names;
}

std::unique_ptr<Workload> MakeWorkload(const TorchCell& cell) {
  if (cell.aoti) {
    const std::string& path = cell.aoti->path;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      throw std::invalid_argument(fmt::format("model_path '{}' does not exist", path));
    }
    // The sidecar is checked before the package is loaded (extracting and loading takes seconds).
    auto sidecar = ReadAotiSidecar(path);
    if (!sidecar.ok()) throw std::invalid_argument(sidecar.error().message);
    nlohmann::json package = nullptr;
    if (*sidecar) {
      const Status matches = CheckAotiCell(**sidecar, cell);
      if (!matches.ok()) throw std::invalid_argument(matches.error().message);
      package = (*sidecar)->package;
    }
    const torch::Device device =
        cell.device.kind == DeviceKind::kCuda
            ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cell.device.index))
            : torch::Device(torch::kCPU);
    return MakeAotiWorkload(*cell.aoti, device, static_cast<std::int64_t>(st.st_size), std::move(package));
  }
  if (cell.torchscript) {
    const std::string& path = cell.torchscript->path;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      throw std::invalid_argument(fmt::format("model_path '{}' does not exist", path));
    }
    try {
      return std::make_unique<TorchScriptWorkload>(*cell.torchscript, torch::jit::load(path),
                                                   static_cast<std::int64_t>(st.st_size));
    } catch (const c10::Error& e) {
      throw std::invalid_argument(
          fmt::format("cannot load TorchScript model '{}': {}", path, e.what_without_backtrace()));
    }
  }
  const ModelOptions options = ModelOptions::FromParams(cell.params);
  const std::vector<std::string> known = KnownModels();
  if (std::find(known.begin(), known.end(), cell.model) == known.end()) {
    throw std::invalid_argument(
        fmt::format("unknown model '{}'; known models: {}", cell.model, fmt::join(KnownModelNames(), ", ")));
  }
  return std::make_unique<ZooWorkload>(MakeModel(cell.model, options));
}

}  // namespace dlbench::torchrunner
