// bert_base against the implementation it replaced: the encoder used to project the queries, keys
// and values with three Linear products; it now makes one over the stacked weights (issue 21). The
// reference below is the previous forward written out from the model's own named parameters, so
// the two share weights and inputs and differ only in how the projections are computed.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <string>

#include "models/zoo.h"

namespace dlbench::torchrunner {
namespace {

constexpr int64_t kLayers = 2, kHidden = 64, kHeads = 4, kSeqLen = 24, kVocab = 200, kClasses = 3;
constexpr int64_t kBatch = 5;

class Params {
 public:
  explicit Params(const ZooModel& model) {
    for (const auto& item : model.named_parameters()) params_.insert(item.key(), item.value());
  }
  const torch::Tensor& operator()(const std::string& name) const { return params_[name]; }
  torch::Tensor Linear(const std::string& name, const torch::Tensor& x) const {
    return torch::linear(x, (*this)(name + ".weight"), (*this)(name + ".bias"));
  }
  torch::Tensor Norm(const std::string& name, const torch::Tensor& x) const {
    return torch::layer_norm(x, {x.size(-1)}, (*this)(name + ".weight"), (*this)(name + ".bias"), 1e-12);
  }

 private:
  torch::OrderedDict<std::string, torch::Tensor> params_;
};

// The eval-mode forward as it was before the projections were stacked (dropout is the identity).
torch::Tensor PreviousForward(const Params& p, const torch::Tensor& ids, const torch::Tensor& mask) {
  const int64_t n = ids.size(0), length = ids.size(1), head_dim = kHidden / kHeads;
  torch::Tensor positions = torch::arange(length, ids.options()).unsqueeze(0);
  torch::Tensor x = torch::embedding(p("word_embeddings.weight"), ids) +
                    torch::embedding(p("position_embeddings.weight"), positions) +
                    torch::embedding(p("token_type_embeddings.weight"), torch::zeros_like(ids));
  x = p.Norm("embedding_norm", x);
  const torch::Tensor bias = ((1.0 - mask.to(x.scalar_type())) * -1e4).unsqueeze(1).unsqueeze(2);
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    auto split = [&](const torch::Tensor& t) {
      return t.view({n, length, kHeads, head_dim}).transpose(1, 2);
    };
    torch::Tensor q = split(p.Linear(l + "query", x));
    torch::Tensor k = split(p.Linear(l + "key", x));
    torch::Tensor v = split(p.Linear(l + "value", x));
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim)) +
                           bias.to(q.scalar_type());
    torch::Tensor context = torch::matmul(torch::softmax(scores, -1), v);
    context = context.transpose(1, 2).reshape({n, length, kHidden});
    torch::Tensor h = p.Norm(l + "attention_norm", x + p.Linear(l + "attention_out", context));
    x = p.Norm(l + "output_norm", h + p.Linear(l + "output", torch::gelu(p.Linear(l + "intermediate", h))));
  }
  return p.Linear("classifier", torch::tanh(p.Linear("pooler", x.select(1, 0))));
}

std::shared_ptr<ZooModel> TinyBert() {
  torch::manual_seed(11);
  ModelOptions options = ModelOptions::FromParams({{"layers", kLayers},
                                                   {"hidden_size", kHidden},
                                                   {"heads", kHeads},
                                                   {"seq_len", kSeqLen},
                                                   {"vocab_size", kVocab},
                                                   {"num_classes", kClasses}});
  auto model = MakeModel("bert_base", options);
  model->eval();
  return model;
}

// fp32 on the CPU. The stacked product sums the same 64 terms per output as each of the three
// did; the tolerance covers a GEMM that blocks a wider matrix differently. Padding in one
// sequence makes the mask matter.
TEST(BertStackedProjectionsTest, OutputsEqualThePreviousImplementation) {
  auto model = TinyBert();
  Batch batch = model->MakeBatch(kBatch, torch::kCPU, 3);
  batch.inputs[1].index_put_({1, torch::indexing::Slice(kSeqLen / 2)}, 0);
  torch::NoGradGuard no_grad;
  const torch::Tensor now = model->Forward(batch).at(0);
  const torch::Tensor before = PreviousForward(Params(*model), batch.inputs[0], batch.inputs[1]);
  ASSERT_EQ(now.sizes(), before.sizes());
  EXPECT_GT(before.abs().max().item<double>(), 1e-3) << "logits too small for the comparison to mean much";
  EXPECT_LE((now - before).abs().max().item<double>(), 1e-5);
  // The padded sequence's logits differ from the unpadded computation, so the mask was applied.
  Batch unpadded = batch;
  unpadded.inputs[1] = torch::ones_like(batch.inputs[1]);
  EXPECT_GT((model->Forward(unpadded).at(0)[1] - now[1]).abs().max().item<double>(), 1e-4);
}

// Training goes through the stacked weights too: each of the three Linear layers gets the
// gradient that the three separate products gave it.
TEST(BertStackedProjectionsTest, GradientsReachTheThreeProjectionsAsBefore) {
  auto model = TinyBert();
  Batch batch = model->MakeBatch(kBatch, torch::kCPU, 4);
  Params params(*model);
  const torch::Tensor& wq = params("layers.0.query.weight");
  const torch::Tensor& wv = params("layers.1.value.weight");
  model->Forward(batch).at(0).square().sum().backward();
  const torch::Tensor gq = wq.grad().clone(), gv = wv.grad().clone();
  model->zero_grad();
  PreviousForward(params, batch.inputs[0], batch.inputs[1]).square().sum().backward();
  ASSERT_TRUE(gq.defined() && gv.defined());
  EXPECT_GT(gq.abs().max().item<double>(), 0.0);
  EXPECT_TRUE(torch::allclose(gq, wq.grad(), 1e-4, 1e-7));
  EXPECT_TRUE(torch::allclose(gv, wv.grad(), 1e-4, 1e-7));
}

}  // namespace
}  // namespace dlbench::torchrunner
