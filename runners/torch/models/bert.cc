// BERT-Base: word + position + token-type embeddings, post-LayerNorm transformer encoder, tanh
// pooler on the first token, and a classification head (sequence classification).
#include <torch/version.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/dynamic_int8.h"
#include "models/layers.h"

namespace dlbench::torchrunner::models {
namespace {

constexpr int64_t kMaxPositions = 512;  // BERT's position table
constexpr double kLayerNormEps = 1e-12;
constexpr double kDropout = 0.1;
constexpr double kInitStd = 0.02;  // BERT's initializer_range

struct BertSizes {
  int64_t layers, hidden, heads, intermediate, seq_len, vocab, num_classes;
};

class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const BertSizes& sizes)
      : heads_(sizes.heads),
        head_dim_(sizes.hidden / sizes.heads),
        query_(register_module("query", torch::nn::Linear(sizes.hidden, sizes.hidden))),
        key_(register_module("key", torch::nn::Linear(sizes.hidden, sizes.hidden))),
        value_(register_module("value", torch::nn::Linear(sizes.hidden, sizes.hidden))),
        attention_out_(register_module("attention_out", torch::nn::Linear(sizes.hidden, sizes.hidden))),
        attention_norm_(register_module(
            "attention_norm",
            torch::nn::LayerNorm(torch::nn::LayerNormOptions({sizes.hidden}).eps(kLayerNormEps)))),
        intermediate_(register_module("intermediate", torch::nn::Linear(sizes.hidden, sizes.intermediate))),
        output_(register_module("output", torch::nn::Linear(sizes.intermediate, sizes.hidden))),
        output_norm_(register_module(
            "output_norm",
            torch::nn::LayerNorm(torch::nn::LayerNormOptions({sizes.hidden}).eps(kLayerNormEps)))),
        dropout_(register_module("dropout", torch::nn::Dropout(kDropout))) {}

  // `x` [N, L, hidden]; `mask_bias` [N, 1, 1, L] additive (0 for tokens, a large negative for
  // padding), in x's dtype.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_bias) {
    const int64_t n = x.size(0), length = x.size(1);
    auto split_heads = [&](const torch::Tensor& t) {
      return t.view({n, length, heads_, head_dim_}).transpose(1, 2);
    };
    torch::Tensor q, k, v;
    if (int8_[kQuery].packed() == nullptr && int8_[kKey].packed() == nullptr &&
        int8_[kValue].packed() == nullptr) {
      // One product over the three weights stacked ([3 hidden, hidden]) instead of three: under
      // autocast `x` is fp32 (a LayerNorm's output) and every Linear casts its input, so three
      // projections cast it three times. On an H100 (torch 2.11, bs64 seq128 bf16, weights stacked
      // once) that took 0.42 ms of casts and 0.05 ms of GEMM off a 5.42 ms step (docs/benchmarks.md,
      // "BERT-base against Hugging Face"). The parameters stay three Linear layers, so checkpoints,
      // weight hashes and int8 packing see what they saw; the price is stacking them here, a 7 MB
      // copy a layer.
      torch::Tensor qkv = torch::linear(x, torch::cat({query_->weight, key_->weight, value_->weight}),
                                        torch::cat({query_->bias, key_->bias, value_->bias}));
      // [N, L, 3 hidden] -> [3, N, heads, L, head_dim]: views, as split_heads' are.
      qkv = qkv.view({n, length, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4});
      q = qkv[0];
      k = qkv[1];
      v = qkv[2];
    } else {
      q = split_heads(int8_[kQuery].Forward(query_, x));
      k = split_heads(int8_[kKey].Forward(key_, x));
      v = split_heads(int8_[kValue].Forward(value_, x));
    }
    // Under autocast the projections are fp16/bf16 while the LayerNorm output (and so the
    // mask) stays fp32; the fused kernel requires matching dtypes.
    const torch::Tensor bias = mask_bias.to(q.scalar_type());
#if TORCH_VERSION_MAJOR >= 2
    // LibTorch 2.x picks a fused kernel (flash / memory-efficient) where it can: what a current
    // deployment runs. The math and the FLOP count are those of the explicit path below.
    torch::Tensor context = at::scaled_dot_product_attention(q, k, v, bias, is_training() ? kDropout : 0.0);
#else
    torch::Tensor scores =
        torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim_)) + bias;
    torch::Tensor context = torch::matmul(dropout_->forward(torch::softmax(scores, -1)), v);
#endif
    context = context.transpose(1, 2).reshape({n, length, heads_ * head_dim_});
    torch::Tensor h = attention_norm_->forward(
        x + dropout_->forward(int8_[kAttentionOut].Forward(attention_out_, context)));
    torch::Tensor ffn =
        int8_[kOutput].Forward(output_, torch::gelu(int8_[kIntermediate].Forward(intermediate_, h)));
    return output_norm_->forward(h + dropout_->forward(ffn));
  }

  void QuantizeDynamicInt8() {
    const std::array<const torch::nn::Linear*, kProjections> linears = {
        &query_, &key_, &value_, &attention_out_, &intermediate_, &output_};
    for (std::size_t i = 0; i < linears.size(); ++i) int8_[i].Quantize(*linears[i]);
  }

  // Adds the packed layers' bytes (none before QuantizeDynamicInt8).
  void AddPackedBytes(WeightBytes& out) const {
    for (const Int8Slot& slot : int8_) {
      if (const DynamicInt8Linear* packed = slot.packed()) {
        out.linear += packed->weight_bytes();
        out.total += packed->weight_bytes() + packed->bias_bytes();
      }
    }
  }

 private:
  int64_t heads_, head_dim_;
  torch::nn::Linear query_, key_, value_, attention_out_;
  torch::nn::LayerNorm attention_norm_;
  torch::nn::Linear intermediate_, output_;
  torch::nn::LayerNorm output_norm_;
  torch::nn::Dropout dropout_;
  enum Projection : std::size_t { kQuery, kKey, kValue, kAttentionOut, kIntermediate, kOutput, kProjections };
  std::array<Int8Slot, kProjections> int8_;
};
TORCH_MODULE(EncoderLayer);

class BertBase : public ZooModel {
 public:
  explicit BertBase(const BertSizes& sizes) : sizes_(sizes) {
    word_embeddings_ = register_module("word_embeddings", torch::nn::Embedding(sizes.vocab, sizes.hidden));
    position_embeddings_ =
        register_module("position_embeddings", torch::nn::Embedding(kMaxPositions, sizes.hidden));
    token_type_embeddings_ = register_module("token_type_embeddings", torch::nn::Embedding(2, sizes.hidden));
    embedding_norm_ =
        register_module("embedding_norm",
                        torch::nn::LayerNorm(torch::nn::LayerNormOptions({sizes.hidden}).eps(kLayerNormEps)));
    dropout_ = register_module("dropout", torch::nn::Dropout(kDropout));
    layers_ = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < sizes.layers; ++i) layers_->push_back(EncoderLayer(sizes));
    pooler_ = register_module("pooler", torch::nn::Linear(sizes.hidden, sizes.hidden));
    classifier_ = register_module("classifier", torch::nn::Linear(sizes.hidden, sizes.num_classes));
    // BERT's initialisation (normal 0.02, zero biases, unit LayerNorm): training from it is
    // stable at the standard learning rates, which the default kaiming init is not for
    // embeddings.
    torch::NoGradGuard no_grad;
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* linear = module->as<torch::nn::Linear>()) {
        linear->weight.normal_(0.0, kInitStd);
        linear->bias.zero_();
      } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
        embedding->weight.normal_(0.0, kInitStd);
      }
    }
  }

  std::string name() const override { return "bert_base"; }
  bool is_convolutional() const override { return false; }

  Batch MakeBatch(int64_t batch_size, torch::Device device, uint64_t seed) const override {
    if (batch_size <= 0) {
      throw std::invalid_argument("bert_base: batch_size must be positive, got " +
                                  std::to_string(batch_size));
    }
    // See ImageClassifier::MakeBatch: a private CPU generator, then a move to the device.
    auto generator = at::detail::createCPUGenerator(seed);
    Batch batch;
    batch.inputs.push_back(
        torch::randint(sizes_.vocab, {batch_size, sizes_.seq_len}, generator, torch::kLong).to(device));
    // No padding: every position is a token, so the work done is the work counted.
    batch.inputs.push_back(torch::ones({batch_size, sizes_.seq_len}, torch::kLong).to(device));
    batch.target = torch::randint(sizes_.num_classes, {batch_size}, generator, torch::kLong).to(device);
    return batch;
  }

  std::vector<torch::Tensor> Forward(const Batch& batch) override {
    const torch::Tensor& ids = batch.inputs.at(0);
    const torch::Tensor& mask = batch.inputs.at(1);
    if (ids.dim() != 2 || ids.size(1) > kMaxPositions || !mask.sizes().equals(ids.sizes())) {
      throw std::invalid_argument(
          "bert_base: expects token ids and attention mask of the same shape [N, L] with L <= " +
          std::to_string(kMaxPositions));
    }
    torch::Tensor x = Embed(ids);
    const torch::Tensor mask_bias = MaskBias(mask, x.scalar_type());
    for (const auto& layer : *layers_) {
      x = layer->as<EncoderLayer>()->forward(x, mask_bias);
    }
    return {Classify(Pool(x))};
  }

  // Forward's own steps, one stage each: embeddings, every encoder layer, pooler, classifier.
  std::vector<ForwardStage> ForwardStages(const Batch& batch) override {
    const torch::Tensor& ids = batch.inputs.at(0);
    const torch::Tensor& mask = batch.inputs.at(1);
    // The mask bias takes the embeddings' output dtype, as in Forward; each chain has its own.
    auto mask_bias = std::make_shared<torch::Tensor>();
    std::vector<ForwardStage> stages;
    stages.push_back({"embeddings", [this, &ids, &mask, mask_bias](const torch::Tensor& /*previous*/) {
                        torch::Tensor x = Embed(ids);
                        *mask_bias = MaskBias(mask, x.scalar_type());
                        return x;
                      }});
    for (std::size_t i = 0; i < layers_->size(); ++i) {
      auto layer = (*layers_)[i]->as<EncoderLayer>();
      stages.push_back({"layers." + std::to_string(i), [layer, mask_bias](const torch::Tensor& previous) {
                          return layer->forward(previous, *mask_bias);
                        }});
    }
    stages.push_back({"pooler", [this](const torch::Tensor& previous) { return Pool(previous); }});
    stages.push_back({"classifier", [this](const torch::Tensor& previous) { return Classify(previous); }});
    return stages;
  }

  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(outputs.at(0), batch.target);
  }

  double ForwardFlopsPerSample() const override {
    const double l = static_cast<double>(sizes_.seq_len);
    const double h = static_cast<double>(sizes_.hidden);
    const double per_layer = 4.0 * l * h * h                       // Q, K, V and output projections
                             + 2.0 * l * l * h                     // Q K^T and probabilities x V
                             + 2.0 * l * h * sizes_.intermediate;  // the feed-forward pair
    const double macs = sizes_.layers * per_layer + h * h + h * sizes_.num_classes;
    return 2.0 * macs;
  }

  nlohmann::json EffectiveOptions() const override {
    return {{"layers", sizes_.layers},
            {"hidden_size", sizes_.hidden},
            {"heads", sizes_.heads},
            {"intermediate_size", sizes_.intermediate},
            {"seq_len", sizes_.seq_len},
            {"vocab_size", sizes_.vocab},
            {"num_classes", sizes_.num_classes},
            {"max_positions", kMaxPositions}};
  }

  std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(std::optional<double> lr) override {
    return std::make_unique<torch::optim::AdamW>(parameters(), torch::optim::AdamWOptions(lr.value_or(1e-4)));
  }

  // Every nn.Linear, as quantize_dynamic's default spec: the encoder's projections, the pooler
  // and the classifier. Embeddings and LayerNorms stay fp32.
  bool SupportsDynamicInt8() const override { return true; }
  void QuantizeDynamicInt8() override {
    for (const auto& layer : *layers_) layer->as<EncoderLayer>()->QuantizeDynamicInt8();
    pooler_int8_.Quantize(pooler_);
    classifier_int8_.Quantize(classifier_);
  }

 protected:
  WeightBytes PackedWeightBytes() const override {
    WeightBytes out;
    for (const auto& layer : *layers_) layer->as<EncoderLayer>()->AddPackedBytes(out);
    for (const Int8Slot* slot : {&pooler_int8_, &classifier_int8_}) {
      if (const DynamicInt8Linear* packed = slot->packed()) {
        out.linear += packed->weight_bytes();
        out.total += packed->weight_bytes() + packed->bias_bytes();
      }
    }
    return out;
  }

 private:
  torch::Tensor Embed(const torch::Tensor& ids) {
    const int64_t length = ids.size(1);
    torch::Tensor positions = torch::arange(length, ids.options()).unsqueeze(0);
    torch::Tensor x = word_embeddings_->forward(ids) + position_embeddings_->forward(positions) +
                      token_type_embeddings_->forward(torch::zeros_like(ids));
    return dropout_->forward(embedding_norm_->forward(x));
  }
  // -1e4 rather than the dtype's lowest value: it stays finite in fp16 and bf16, and exp() of it
  // is 0 in every precision.
  static torch::Tensor MaskBias(const torch::Tensor& mask, torch::ScalarType dtype) {
    return ((1.0 - mask.to(dtype)) * -1e4).unsqueeze(1).unsqueeze(2);
  }
  torch::Tensor Pool(const torch::Tensor& x) {
    return torch::tanh(pooler_int8_.Forward(pooler_, x.select(1, 0)));
  }
  torch::Tensor Classify(const torch::Tensor& pooled) {
    return classifier_int8_.Forward(classifier_, dropout_->forward(pooled));
  }

  BertSizes sizes_;
  torch::nn::Embedding word_embeddings_{nullptr}, position_embeddings_{nullptr},
      token_type_embeddings_{nullptr};
  torch::nn::LayerNorm embedding_norm_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  torch::nn::Linear pooler_{nullptr}, classifier_{nullptr};
  Int8Slot pooler_int8_, classifier_int8_;
};

}  // namespace

std::shared_ptr<ZooModel> MakeBertBase(const ModelOptions& options) {
  BertSizes sizes;
  sizes.layers = options.layers.value_or(12);
  sizes.hidden = options.hidden_size.value_or(768);
  sizes.heads = options.heads.value_or(12);
  sizes.intermediate = 4 * sizes.hidden;
  sizes.seq_len = options.seq_len.value_or(128);
  sizes.vocab = options.vocab_size.value_or(30522);
  sizes.num_classes = options.num_classes.value_or(2);
  if (sizes.hidden % sizes.heads != 0) {
    throw std::invalid_argument("bert_base: hidden_size " + std::to_string(sizes.hidden) +
                                " is not divisible by heads " + std::to_string(sizes.heads));
  }
  if (sizes.seq_len > kMaxPositions) {
    throw std::invalid_argument("bert_base: seq_len " + std::to_string(sizes.seq_len) + " exceeds the " +
                                std::to_string(kMaxPositions) + " position embeddings");
  }
  return std::make_shared<BertBase>(sizes);
}

}  // namespace dlbench::torchrunner::models
