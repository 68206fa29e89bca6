// The model zoo of the LibTorch runner: the reference workloads of the mission (ResNet-50,
// MobileNetV2, BERT-Base, SSDLite-MobileNetV2) built with the C++ frontend from seeded random
// weights (speed needs no trained weights, and nothing is downloaded). Every size is a parameter
// so tests on a small CPU run small variants of exactly the code that runs at standard size.
// docs/models.md describes each model, its options, the FLOP convention and the synthetic data.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::torchrunner {

// Size options; absent fields mean the model's standard size. Parsed from the cell params
// (names as in the matrix: image_size, width_mult, base_width, num_classes, layers, hidden_size,
// heads, seq_len, vocab_size). A model ignores the options that do not apply to it (a matrix
// crossing models with seq_len must not fail its CNN cells); EffectiveOptions() records what
// was built.
struct ModelOptions {
  std::optional<int64_t> image_size, base_width, num_classes, layers, hidden_size, heads, seq_len, vocab_size;
  std::optional<double> width_mult;
  // Reads the size keys of `params` and ignores every other key (model, batch_size, ...). A
  // JSON null counts as absent. Throws std::invalid_argument naming the key when a value has the
  // wrong type (integers must be JSON integers) or is not positive.
  static ModelOptions FromParams(const nlohmann::json& params);
};

// A synthetic batch, resident on one device: inputs in forward order, and the training target.
struct Batch {
  std::vector<torch::Tensor> inputs;
  torch::Tensor target;  // class ids (N) for classification; for SSD, per-anchor targets as the model defines
};

// Bytes of a model's weights as it holds them (parameters and buffers at their dtype; packed
// int8 layers at 1 byte per weight element plus their quantization parameters, their fp32
// biases at 4 bytes).
struct WeightBytes {
  std::int64_t total = 0;   // every parameter and buffer
  std::int64_t linear = 0;  // the Linear layers' weight matrices only (no biases)
};

// One stage of a model's forward as a chain (ZooModel::ForwardStages): its module path
// ("layers.1") and what it does to the previous stage's output (the first stage gets an undefined
// tensor and reads the batch it was made for).
struct ForwardStage {
  std::string path;
  std::function<torch::Tensor(const torch::Tensor& previous)> run;
};

// A built model. Weights are drawn from torch's global generator when MakeModel runs, so the
// caller seeds it first (torch::manual_seed) for reproducible weights.
class ZooModel : public torch::nn::Module {
 public:
  virtual ~ZooModel() = default;
  virtual std::string name() const = 0;       // "resnet50"
  virtual bool is_convolutional() const = 0;  // channels_last applies
  // A fixed synthetic batch from `seed` (images ~N(0,1); token ids uniform in the vocabulary;
  // random class targets). Deterministic for a seed on a given device type.
  virtual Batch MakeBatch(int64_t batch_size, torch::Device device, uint64_t seed) const = 0;
  // The raw forward outputs (classification: logits [N, classes]; SSD: {class logits
  // [N, anchors, classes], box regressions [N, anchors, 4]}).
  virtual std::vector<torch::Tensor> Forward(const Batch& batch) = 0;
  // Training loss (scalar) from Forward's outputs.
  virtual torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const Batch& batch) = 0;
  // Inference post-processing that belongs to latency (SSD: anchor decoding + per-class NMS,
  // returning per image a [K, 6] tensor (x1, y1, x2, y2, score, class) concatenated with a
  // leading image index, i.e. [total_K, 7]); identity (outputs[0]) for other models.
  virtual torch::Tensor PostProcess(const std::vector<torch::Tensor>& outputs) { return outputs.at(0); }
  // The forward on `batch` as a chain of named stages whose last output is Forward's first
  // (layer_fault.h: where a precision's error grows); empty for a model whose forward is not
  // written as one (bert_base, resnet50, mobilenet_v2 and ssd_mobilenet have one). The stages hold the model
  // and the batch by reference: use them while both live.
  virtual std::vector<ForwardStage> ForwardStages(const Batch& /*batch*/) { return {}; }
  // Forward FLOPs per sample (multiply-add = 2 FLOPs), counted from the layer shapes actually
  // built (so small variants are right too). Counted: convolutions, linear layers and the
  // attention matmuls; not counted: normalisation, activations, pooling, softmax, residual adds,
  // embedding lookups, SSD post-processing. A training step is taken as 3x forward (backward
  // computes the gradients of both inputs and weights, each costing about one forward).
  virtual double ForwardFlopsPerSample() const = 0;
  // Effective sizes for the record: {"image_size": 224, "num_classes": 1000, ...}.
  virtual nlohmann::json EffectiveOptions() const = 0;
  // The optimizer the issue names: SGD with momentum 0.9 for the CNNs (lr 0.1 or lr option),
  // AdamW for BERT (lr 1e-4 or lr option).
  virtual std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) = 0;
  // Dynamic int8 (precision int8, inference on the CPU): every Linear layer packed as
  // models/dynamic_int8.h's DynamicInt8Linear, its fp32 weights freed. Models without it say so
  // in SupportsDynamicInt8 and throw std::logic_error from QuantizeDynamicInt8. Call after the
  // model is on the CPU, once.
  virtual bool SupportsDynamicInt8() const { return false; }
  virtual void QuantizeDynamicInt8();
  // Post-training static int8 (converge's evaluation at int8, docs/precisions.md): convolutions
  // static int8 (models/static_int8.h: BatchNorm folded, per-channel qint8 weights, activation
  // ranges observed on `calibration_images`), Linear layers dynamic int8 (DynamicInt8Linear); the
  // fp32 weights freed. Models without it say so in SupportsCalibratedInt8 and throw
  // std::logic_error from QuantizeCalibratedInt8. Call on the CPU, in eval mode, once.
  virtual bool SupportsCalibratedInt8() const { return false; }
  virtual void QuantizeCalibratedInt8(const torch::Tensor& calibration_images);
  // The weights as held now (after QuantizeDynamicInt8: the packed sizes).
  WeightBytes DeployedWeightBytes() const;

 protected:
  // Bytes of the packed int8 layers (QuantizeDynamicInt8's models override): their weights and
  // their biases, which the module's emptied parameters no longer count.
  virtual WeightBytes PackedWeightBytes() const { return {}; }
};

// "resnet50" | "mobilenet_v2" | "bert_base" | "ssd_mobilenet"; throws std::invalid_argument
// naming the known models for anything else, or for an invalid size combination (e.g. hidden_size
// not divisible by heads, image_size too small for the network's strides).
std::shared_ptr<ZooModel> MakeModel(const std::string& name, const ModelOptions& options);
std::vector<std::string> KnownModels();

}  // namespace dlbench::torchrunner
