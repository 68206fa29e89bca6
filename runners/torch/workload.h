// What the scenarios drive: a model, its fixed synthetic batch and its optimizer, on one device.
// Three kinds: the built-in zoo (models/zoo.h), a user's TorchScript file and an AOTInductor
// package (aoti_workload.h, inference only). The scenario code in torch_runner.cc sees only this
// interface, so every kind trains and infers through one loop.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cell_options.h"
#include "failure.h"
#include "models/zoo.h"

namespace dlbench::torchrunner {

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Whether channels_last applies (memory_format auto picks it for these on CUDA).
  virtual bool is_convolutional() const = 0;
  // Moves the weights to `device` in `format` and builds the fixed input batch there from
  // `seed`. Called once, before any step. May throw what MakeWorkload throws, once the inputs
  // show a problem (a TorchScript forward that rejects the declared inputs).
  virtual void Prepare(const TorchCell& cell, torch::Device device, torch::MemoryFormat format,
                       std::uint64_t seed) = 0;
  // Training (dropout, batch-norm statistics) or evaluation behaviour.
  virtual void SetTraining(bool training) = 0;
  // Forward on the fixed batch.
  virtual std::vector<torch::Tensor> Forward() = 0;
  // Forward on the fixed batch as a chain of named stages (ZooModel::ForwardStages); empty when
  // the model's forward is not written as one. Valid while the workload lives.
  virtual std::vector<ForwardStage> ForwardStages() = 0;
  // Scalar training loss from Forward's outputs.
  virtual torch::Tensor Loss(const std::vector<torch::Tensor>& outputs) = 0;
  // The inference post-processing that belongs to latency (SSD's decoding and NMS).
  virtual torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) = 0;
  // Forward FLOPs per sample when known (zoo models count theirs; TorchScript: unknown).
  virtual std::optional<double> ForwardFlopsPerSample() const = 0;
  virtual nlohmann::json EffectiveOptions() const = 0;
  virtual std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) = 0;
  // Inference under load (load_scenario.h): `samples` synthetic samples from `seed` on `device`,
  // each input with the sample on dimension 0, and the forward of such inputs (any number of
  // samples). Throws UnsupportedError for a workload whose batch dimension is not known
  // (TorchScript: its declared shapes have the batch size already substituted).
  virtual std::vector<torch::Tensor> MakeInputs(std::int64_t samples, torch::Device device,
                                                std::uint64_t seed) = 0;
  virtual std::vector<torch::Tensor> ForwardInputs(const std::vector<torch::Tensor>& inputs) = 0;
  // A one-line description of the optimizer MakeOptimizer builds, for the effective cell.
  virtual std::string OptimizerName() const = 0;
  // The tensors every step reads as its input, after Prepare: the inputs in forward order, then
  // the training target when the model has one. A data source other than `device` refills them in
  // place before each step (data/feeder.h), so they share storage with what Forward reads.
  virtual std::vector<torch::Tensor> FeedTensors() = 0;
  // The class count when the target is one class index per sample; nullopt otherwise.
  virtual std::optional<std::int64_t> NumClasses() const = 0;
  // The model's parameters and buffers, in the module's order (ddp all-reduces the parameters'
  // gradients and starts every rank from rank 0's parameters and buffers).
  virtual std::vector<torch::Tensor> Parameters() const = 0;
  virtual std::vector<torch::Tensor> Buffers() const = 0;
  // precision int8: the workload's dynamic int8 form (ZooModel::QuantizeDynamicInt8), after
  // Prepare on the CPU. Throws UnsupportedError where there is none.
  virtual void QuantizeDynamicInt8() = 0;
  // Converge's evaluation at int8 (converge.h): the calibrated static int8 form
  // (ZooModel::QuantizeCalibratedInt8), after Prepare on the CPU. Throws UnsupportedError where
  // there is none.
  virtual void QuantizeCalibratedInt8(const torch::Tensor& calibration_images) = 0;
  // The weights as held now (after QuantizeDynamicInt8: packed); nullopt where not counted (a
  // TorchScript module, whose Linear layers are not known by type here).
  virtual std::optional<WeightBytes> DeployedWeightBytes() const = 0;
  // What the loaded model holds quantized already (a TorchScript file saved after quantization):
  // {"packed_layers": {class: count}, "packed_layers_total": n, "quantized_tensors": m}; null when
  // it holds nothing quantized (every zoo model as built).
  virtual nlohmann::json QuantizedInModel() const = 0;
  // The size of the file the model was loaded from (a TorchScript model); nullopt for the zoo.
  virtual std::optional<std::int64_t> ModelFileBytes() const = 0;
};

// Builds the workload the cell names. Throws std::invalid_argument for a bad model name, bad
// model options or an unusable TorchScript file/inputs (the runner reports these as invalid);
// throws UnsupportedError for a valid request this workload cannot do (a TorchScript model
// whose forward does not return a scalar loss, asked to train).
std::unique_ptr<Workload> MakeWorkload(const TorchCell& cell);

// Every model name the runner accepts: the zoo's, "torchscript" and "aoti".
std::vector<std::string> KnownModelNames();

// The inputs a model loaded from a file declares (torchscript, aoti), contiguous on `device`:
// floating inputs from a normal distribution, integer ones from {0, 1}, drawn on the CPU from a
// generator seeded with `seed` alone.
std::vector<torch::Tensor> MakeDeclaredInputs(const TorchScriptSpec& spec, torch::Device device,
                                              std::uint64_t seed);

// The declared inputs in words, for error messages: "float32 8x3x224x224, int64 8x16".
std::string DescribeDeclaredInputs(const TorchScriptSpec& spec);

// Converts a 4-D floating tensor to channels_last (a no-op for other tensors).
torch::Tensor ToMemoryFormat(const torch::Tensor& t, torch::MemoryFormat format);

}  // namespace dlbench::torchrunner
