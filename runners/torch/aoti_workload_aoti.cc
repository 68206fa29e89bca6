// aoti_workload.h with LibTorch's AOTIModelPackageLoader (LibTorch 2.6+; written against 2.11's
// header, docs/torch-runner.md "AOTInductor packages").
#include <fmt/format.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <string>
#include <utility>
#include <vector>

#include "aoti_workload.h"
#include "failure.h"

namespace dlbench::torchrunner {
namespace {

using torch::inductor::AOTIModelPackageLoader;

// The metadata key the package's device type is recorded under ("cuda", "cpu").
constexpr char kAotiDeviceKey[] = "AOTI_DEVICE_KEY";

class AotiWorkload final : public Workload {
 public:
  AotiWorkload(const TorchScriptSpec& spec, std::unique_ptr<AOTIModelPackageLoader> loader,
               nlohmann::json metadata, std::int64_t file_bytes, nlohmann::json package)
      : spec_(spec),
        loader_(std::move(loader)),
        metadata_(std::move(metadata)),
        file_bytes_(file_bytes),
        package_(std::move(package)) {}

  std::string name() const override { return kAotiModel; }
  // memory_format auto resolves to contiguous: the package's inputs keep their exported strides.
  bool is_convolutional() const override { return false; }

  void Prepare(const TorchCell& /*cell*/, torch::Device device, torch::MemoryFormat /*format*/,
               std::uint64_t seed) override {
    inputs_ = MakeDeclaredInputs(spec_, device, seed);
    // One probe run: a package that rejects the declared inputs fails here, as an invalid cell,
    // not in the middle of the measured loop.
    try {
      c10::InferenceMode inference;
      (void)loader_->run(inputs_);
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::Error& e) {
      if (IsOutOfMemoryMessage(e.what_without_backtrace())) throw;
      throw std::invalid_argument(fmt::format("the AOTInductor package rejected the declared inputs ({}): {}",
                                              DescribeInputs(), e.what_without_backtrace()));
    } catch (const std::runtime_error& e) {
      if (IsOutOfMemoryMessage(e.what())) throw;
      throw std::invalid_argument(fmt::format("the AOTInductor package rejected the declared inputs ({}): {}",
                                              DescribeInputs(), e.what()));
    }
  }
  // A package is compiled in evaluation mode; infer is the only scenario (CheckSupported).
  void SetTraining(bool /*training*/) override {}
  std::vector<torch::Tensor> Forward() override { return loader_->run(inputs_); }
  std::vector<ForwardStage> ForwardStages() override { return {}; }
  torch::Tensor Loss(const std::vector<torch::Tensor>& /*outputs*/) override {
    throw UnsupportedError("unsupported: an AOTInductor package has no backward; use scenario infer");
  }
  torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) override { return outputs.at(0); }
  std::optional<double> ForwardFlopsPerSample() const override { return std::nullopt; }
  nlohmann::json EffectiveOptions() const override {
    nlohmann::json inputs = nlohmann::json::array();
    for (std::size_t i = 0; i < spec_.input_shapes.size(); ++i) {
      inputs.push_back({{"shape", spec_.input_shapes[i]},
                        {"dtype", InputDtypeName(spec_.input_dtypes[i])},
                        {"memory_format", "contiguous"}});
    }
    return {{"model_path", spec_.path},
            {"inputs", inputs},
            {"file_bytes", file_bytes_},
            {"metadata", metadata_},
            {"package", package_},
            {"loader", "torch::inductor::AOTIModelPackageLoader, one runner, the current stream"}};
  }
  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> /*lr*/) override {
    throw UnsupportedError(
        "unsupported: an AOTInductor package has no parameters to train; use scenario infer");
  }
  std::string OptimizerName() const override { return "none (an AOTInductor package is inference only)"; }
  std::vector<torch::Tensor> FeedTensors() override { return inputs_; }
  std::optional<std::int64_t> NumClasses() const override { return std::nullopt; }
  // The weights are the package's constants, held by its runner, not tensors the runner sees.
  std::vector<torch::Tensor> Parameters() const override { return {}; }
  std::vector<torch::Tensor> Buffers() const override { return {}; }
  std::vector<torch::Tensor> MakeInputs(std::int64_t, torch::Device, std::uint64_t) override {
    throw UnsupportedError(
        "unsupported: load scenarios need a zoo model; an AOTInductor package's input_shapes do not say "
        "which "
        "dimension is the batch");
  }
  std::vector<torch::Tensor> ForwardInputs(const std::vector<torch::Tensor>&) override {
    throw UnsupportedError("unsupported: load scenarios need a zoo model");
  }
  void QuantizeDynamicInt8() override {
    throw UnsupportedError("unsupported: an AOTInductor package runs at the precision it was compiled at");
  }
  void QuantizeCalibratedInt8(const torch::Tensor&) override {
    throw UnsupportedError("unsupported: int8 evaluation of an AOTInductor package");
  }
  std::optional<WeightBytes> DeployedWeightBytes() const override { return std::nullopt; }
  nlohmann::json QuantizedInModel() const override { return nullptr; }
  std::optional<std::int64_t> ModelFileBytes() const override { return file_bytes_; }

 private:
  std::string DescribeInputs() const { return DescribeDeclaredInputs(spec_); }

  TorchScriptSpec spec_;
  std::unique_ptr<AOTIModelPackageLoader> loader_;
  nlohmann::json metadata_;  // get_metadata(), at load
  std::int64_t file_bytes_ = 0;
  nlohmann::json package_;  // the sidecar's, or null
  std::vector<torch::Tensor> inputs_;
};

}  // namespace

bool AotiBuilt() { return true; }

std::unique_ptr<Workload> MakeAotiWorkload(const TorchScriptSpec& spec, torch::Device device,
                                           std::int64_t file_bytes, nlohmann::json package) {
  const c10::DeviceIndex device_index = device.is_cuda() ? device.index() : c10::DeviceIndex{-1};
  std::unique_ptr<AOTIModelPackageLoader> loader;
  nlohmann::json metadata = nlohmann::json::object();
  try {
    loader = std::make_unique<AOTIModelPackageLoader>(spec.path, "model", /*run_single_threaded=*/false,
                                                      /*num_runners=*/1, device_index);
    for (const auto& [key, value] : loader->get_metadata()) metadata[key] = value;
  } catch (const c10::Error& e) {
    throw std::invalid_argument(
        fmt::format("cannot load AOTInductor package '{}': {}", spec.path, e.what_without_backtrace()));
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(fmt::format("cannot load AOTInductor package '{}': {}", spec.path, e.what()));
  }
  // A package holds kernels for one device type; the loader would fail later, or less clearly.
  const std::string device_type = c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  if (const auto it = metadata.find(kAotiDeviceKey); it != metadata.end() && *it != device_type) {
    throw std::invalid_argument(
        fmt::format("AOTInductor package '{}' was compiled for {} (its {}); this cell's "
                    "device is {}; set device: {} or package it for {}",
                    spec.path, it->get<std::string>(), kAotiDeviceKey, device.str(), it->get<std::string>(),
                    device_type));
  }
  return std::make_unique<AotiWorkload>(spec, std::move(loader), std::move(metadata), file_bytes,
                                        std::move(package));
}

}  // namespace dlbench::torchrunner
