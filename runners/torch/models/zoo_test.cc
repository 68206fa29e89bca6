// Tests of the model zoo on tiny variants (each runs in seconds on a 2-core CPU) plus the FLOP
// counts and parameter counts of the standard sizes against published values.
#include "models/zoo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/layers.h"

namespace dlbench::torchrunner {
namespace {

using ::testing::HasSubstr;

// Tiny variants of every model: the same code as the standard sizes, small enough for CI.
struct TinyCase {
  std::string model;
  nlohmann::json params;
  int64_t batch_size;
  double lr;
};

void PrintTo(const TinyCase& c, std::ostream* os) { *os << c.model << " " << c.params.dump(); }

std::vector<TinyCase> TinyCases() {
  return {
      {"resnet50", {{"image_size", 32}, {"base_width", 8}, {"num_classes", 10}}, 4, 0.05},
      {"mobilenet_v2", {{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 10}}, 8, 0.02},
      {"bert_base",
       {{"layers", 2},
        {"hidden_size", 32},
        {"heads", 4},
        {"seq_len", 16},
        {"vocab_size", 100},
        {"num_classes", 3}},
       8,
       5e-3},
      {"ssd_mobilenet", {{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 5}}, 2, 0.01},
      // fashion_cnn itself is not here: its dropout (0.4) on a fixed batch of 8 makes ten steps'
      // losses bounce (1.59 to 1.93 after falling from 2.27), so "the last below 0.8 x the first"
      // does not hold; ConvergeE2E trains it to 0.7 on Fashion-MNIST instead.
      {"fashion_cnn_bn", {{"base_width", 4}, {"hidden_size", 16}, {"num_classes", 10}}, 8, 0.05},
  };
}

std::shared_ptr<ZooModel> Build(const TinyCase& c, uint64_t seed) {
  torch::manual_seed(seed);
  return MakeModel(c.model, ModelOptions::FromParams(c.params));
}

class TinyModelTest : public ::testing::TestWithParam<TinyCase> {};

TEST_P(TinyModelTest, OutputsHaveTheDocumentedShapes) {
  const TinyCase& c = GetParam();
  auto model = Build(c, 1);
  model->eval();
  Batch batch = model->MakeBatch(c.batch_size, torch::kCPU, 7);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> outputs = model->Forward(batch);
  const int64_t classes = c.params.at("num_classes").get<int64_t>();
  if (c.model == "ssd_mobilenet") {
    ASSERT_EQ(outputs.size(), 2u);
    const int64_t anchors = model->EffectiveOptions().at("anchors").get<int64_t>();
    EXPECT_EQ(outputs[0].sizes(), (std::vector<int64_t>{c.batch_size, anchors, classes}));
    EXPECT_EQ(outputs[1].sizes(), (std::vector<int64_t>{c.batch_size, anchors, 4}));
    EXPECT_EQ(batch.target.sizes(), (std::vector<int64_t>{c.batch_size, anchors, 5}));
  } else {
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].sizes(), (std::vector<int64_t>{c.batch_size, classes}));
    EXPECT_TRUE(model->PostProcess(outputs).equal(outputs[0]));
  }
  EXPECT_TRUE(torch::isfinite(outputs[0]).all().item<bool>());
  EXPECT_GT(model->ForwardFlopsPerSample(), 0.0);
  EXPECT_EQ(model->name(), c.model);
}

TEST_P(TinyModelTest, TrainingOnTheFixedBatchLowersTheLoss) {
  const TinyCase& c = GetParam();
  auto model = Build(c, 2);
  model->train();
  Batch batch = model->MakeBatch(c.batch_size, torch::kCPU, 3);
  auto optimizer = model->MakeOptimizer(c.lr);
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    optimizer->zero_grad();
    torch::Tensor loss = model->Loss(model->Forward(batch), batch);
    ASSERT_EQ(loss.dim(), 0);
    loss.backward();
    optimizer->step();
    losses.push_back(loss.item<double>());
  }
  // The last loss is well below the first: backward and the optimizer really ran.
  EXPECT_LT(losses.back(), 0.8 * losses.front()) << "losses: " << torch::tensor(losses);
}

TEST_P(TinyModelTest, TheSameSeedGivesTheSameOutputs) {
  const TinyCase& c = GetParam();
  torch::NoGradGuard no_grad;
  auto run = [&](uint64_t weight_seed, uint64_t data_seed) {
    auto model = Build(c, weight_seed);
    model->eval();
    return model->Forward(model->MakeBatch(c.batch_size, torch::kCPU, data_seed)).at(0);
  };
  torch::Tensor first = run(11, 5);
  EXPECT_TRUE(first.equal(run(11, 5)));
  EXPECT_FALSE(first.equal(run(12, 5)));
  EXPECT_FALSE(first.equal(run(11, 6)));
}

INSTANTIATE_TEST_SUITE_P(Zoo, TinyModelTest, ::testing::ValuesIn(TinyCases()),
                         [](const auto& info) { return info.param.model; });

TEST(ModelOptionsTest, ReadsSizeKeysAndIgnoresOthers) {
  ModelOptions options = ModelOptions::FromParams({{"model", "resnet50"},
                                                   {"batch_size", 8},
                                                   {"image_size", 128},
                                                   {"width_mult", 0.5},
                                                   {"seq_len", nullptr}});
  EXPECT_EQ(options.image_size, 128);
  EXPECT_EQ(options.width_mult, 0.5);
  EXPECT_FALSE(options.seq_len.has_value());
  EXPECT_FALSE(options.num_classes.has_value());
  EXPECT_EQ(ModelOptions::FromParams({{"width_mult", 2}}).width_mult, 2.0);
}

TEST(ModelOptionsTest, RejectsBadValuesNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"image_size", "224"}}, "'image_size' must be an integer"},
      {{{"layers", 2.5}}, "'layers' must be an integer"},
      {{{"heads", 0}}, "'heads' must be positive"},
      {{{"seq_len", -8}}, "'seq_len' must be positive"},
      {{{"width_mult", "wide"}}, "'width_mult' must be a number"},
      {{{"width_mult", 0.0}}, "'width_mult' must be a positive"},
      {nlohmann::json::array(), "must be a JSON object"},
  };
  for (const auto& [params, message] : cases) {
    try {
      ModelOptions::FromParams(params);
      ADD_FAILURE() << "accepted " << params.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(message)) << params.dump();
    }
  }
}

// convnet.py's network at its own sizes: 3,274,634 parameters (conv1 832, conv2 51,264, dense
// 3,212,288, logits 10,250), and the forward multiply-adds counted by hand: conv1 28*28*32*25 =
// 627,200; conv2 14*14*64*32*25 = 10,035,200; dense 3136*1024 = 3,211,264; logits 10,240.
TEST(MakeModelTest, FashionCnnIsTheReferenceNetwork) {
  auto model = MakeModel("fashion_cnn", {});
  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  EXPECT_EQ(parameters, 3274634);
  EXPECT_DOUBLE_EQ(model->ForwardFlopsPerSample(), 2.0 * (627200 + 10035200 + 3211264 + 10240));
  auto bn = MakeModel("fashion_cnn_bn", {});
  int64_t bn_parameters = 0;
  for (const auto& p : bn->parameters()) bn_parameters += p.numel();
  EXPECT_EQ(bn_parameters, parameters + 2 * 32 + 2 * 64);
  const auto optimizer = model->MakeOptimizer(std::nullopt);
  auto* sgd = dynamic_cast<torch::optim::SGD*>(optimizer.get());
  ASSERT_NE(sgd, nullptr);
  const auto& options = static_cast<const torch::optim::SGDOptions&>(sgd->param_groups().at(0).options());
  EXPECT_DOUBLE_EQ(options.lr(), 0.001);
  EXPECT_DOUBLE_EQ(options.momentum(), 0.0);
}

TEST(MakeModelTest, RejectsUnknownNamesListingTheKnownOnes) {
  try {
    MakeModel("resnet51", {});
    FAIL() << "accepted an unknown model";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown model 'resnet51'"));
    for (const auto& known : KnownModels()) EXPECT_THAT(e.what(), HasSubstr(known));
  }
}

TEST(MakeModelTest, RejectsInvalidSizeCombinations) {
  const std::vector<std::tuple<std::string, nlohmann::json, std::string>> cases = {
      {"bert_base", {{"hidden_size", 30}, {"heads", 4}, {"layers", 1}}, "not divisible by heads"},
      {"bert_base", {{"seq_len", 1024}, {"layers", 1}}, "exceeds the 512 position embeddings"},
      {"resnet50", {{"image_size", 16}}, "image_size 16 is too small"},
      {"mobilenet_v2", {{"image_size", 31}}, "use at least 32"},
      {"ssd_mobilenet", {{"num_classes", 1}}, "at least 2"},
  };
  for (const auto& entry : cases) {
    const auto& [model, params, message] = entry;
    EXPECT_THAT([&entry] { MakeModel(std::get<0>(entry), ModelOptions::FromParams(std::get<1>(entry))); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(message)))
        << model << " " << params.dump();
  }
}

TEST(MakeModelTest, BatchesRejectNonPositiveSizes) {
  auto model = MakeModel("mobilenet_v2", ModelOptions::FromParams({{"width_mult", 0.25}}));
  EXPECT_THROW(model->MakeBatch(0, torch::kCPU, 1), std::invalid_argument);
}

int64_t ParameterCount(const ZooModel& model) {
  int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  return count;
}

// Standard sizes against published figures. FLOPs: torchvision's model cards give "GFLOPS" that
// are multiply-adds (ResNet-50 4.089, MobileNetV2 0.301 at 224); our count covers only conv and
// linear layers (and attention matmuls), so it sits slightly below counters that add pooling,
// hence a 2% tolerance. BERT-Base at sequence 128: 12 layers x (4 L h^2 + 2 L^2 h + 8 L h^2) =
// 11.17 G multiply-adds (Kaplan et al.'s 2N per token plus attention; published estimates are
// "about 11 GMACs / 22 GFLOPs"), checked to 2% as well. Parameter counts are exact: torchvision
// (25,557,032 and 3,504,872) and Hugging Face's bert-base-uncased with a 2-class head
// (109,482,240 + 1,538).
TEST(StandardSizesTest, FlopsAndParametersMatchPublishedValues) {
  struct Expected {
    std::string model;
    double gmacs;
    int64_t parameters;
  };
  for (const Expected& e : std::vector<Expected>{{"resnet50", 4.089, 25'557'032},
                                                 {"mobilenet_v2", 0.301, 3'504'872},
                                                 {"bert_base", 11.17, 109'483'778}}) {
    auto model = MakeModel(e.model, {});
    EXPECT_NEAR(model->ForwardFlopsPerSample() / 2e9, e.gmacs, 0.02 * e.gmacs) << e.model;
    EXPECT_EQ(ParameterCount(*model), e.parameters) << e.model;
  }
}

// The SSDLite-MobileNetV2 of the MobileNetV2 paper (Table 6) costs 0.8 G multiply-adds at
// 300x300. torchvision-style heads and extras differ in detail from the paper's, so 15%.
TEST(StandardSizesTest, SsdLiteFlopsNearThePaper) {
  ModelOptions options;
  options.image_size = 300;
  auto model = MakeModel("ssd_mobilenet", options);
  EXPECT_NEAR(model->ForwardFlopsPerSample() / 2e9, 0.8, 0.15 * 0.8);
}

TEST(StandardSizesTest, FlopsScaleWithTheLayersBuilt) {
  ModelOptions small, large;
  small.image_size = 224;
  large.image_size = 448;
  // Convolutions scale with the pixel count; only the final linear layer does not.
  const double ratio = MakeModel("resnet50", large)->ForwardFlopsPerSample() /
                       MakeModel("resnet50", small)->ForwardFlopsPerSample();
  EXPECT_NEAR(ratio, 4.0, 0.01);
}

TEST(SsdTest, Ssd320HasTorchvisionsAnchors) {
  auto model = MakeModel("ssd_mobilenet", {});
  nlohmann::json effective = model->EffectiveOptions();
  // 6 boxes at every location of the 20, 10, 5, 3, 2 and 1 grids.
  EXPECT_EQ(effective.at("anchors"), 6 * (400 + 100 + 25 + 9 + 4 + 1));
  EXPECT_EQ(effective.at("image_size"), 320);
  EXPECT_EQ(effective.at("num_classes"), 91);

  // First location of the 20x20 map: centre (8, 8); scale 0.2 -> 64 px square; the extra scale
  // sqrt(0.2 * 0.35) * 320; aspect 2: 0.2 * sqrt(2) wide, 0.2 / sqrt(2) high.
  torch::Tensor boxes = models::SsdDefaultBoxes({{20, 20}, {10, 10}}, 320);
  EXPECT_EQ(boxes.size(0), 6 * (400 + 100));
  EXPECT_TRUE(torch::allclose(boxes[0], torch::tensor({-24.0f, -24.0f, 40.0f, 40.0f})));
  const float extra = 0.5f * std::sqrt(0.2f * 0.95f) * 320.0f;  // two maps: scales 0.2, 0.95, 1
  EXPECT_TRUE(torch::allclose(boxes[1], torch::tensor({8 - extra, 8 - extra, 8 + extra, 8 + extra})));
  const float half_w = 0.5f * 0.2f * std::sqrt(2.0f) * 320.0f;
  const float half_h = 0.5f * 0.2f / std::sqrt(2.0f) * 320.0f;
  EXPECT_TRUE(torch::allclose(boxes[2], torch::tensor({8 - half_w, 8 - half_h, 8 + half_w, 8 + half_h})));
}

TEST(SsdTest, PostProcessReturnsValidSortedDetections) {
  torch::manual_seed(4);
  auto model =
      MakeModel("ssd_mobilenet",
                ModelOptions::FromParams({{"image_size", 64}, {"width_mult", 0.25}, {"num_classes", 4}}));
  model->eval();
  torch::NoGradGuard no_grad;
  Batch batch = model->MakeBatch(3, torch::kCPU, 9);
  torch::Tensor detections = model->PostProcess(model->Forward(batch));
  ASSERT_EQ(detections.dim(), 2);
  ASSERT_EQ(detections.size(1), 7);
  ASSERT_GT(detections.size(0), 0);
  torch::Tensor image = detections.select(1, 0);
  EXPECT_TRUE(((image >= 0) & (image < 3)).all().item<bool>());
  EXPECT_TRUE((detections.select(1, 1) <= detections.select(1, 3)).all().item<bool>());
  EXPECT_TRUE((detections.select(1, 2) <= detections.select(1, 4)).all().item<bool>());
  EXPECT_TRUE(((detections.narrow(1, 1, 4) >= 0) & (detections.narrow(1, 1, 4) <= 64)).all().item<bool>());
  torch::Tensor scores = detections.select(1, 5);
  EXPECT_TRUE((scores > 0.001).all().item<bool>());
  torch::Tensor labels = detections.select(1, 6);
  EXPECT_TRUE(((labels >= 1) & (labels <= 3)).all().item<bool>());
  for (int64_t i = 0; i < 3; ++i) {
    torch::Tensor mine = scores.masked_select(image == i);
    EXPECT_LE(mine.size(0), 300);
    if (mine.size(0) > 1) {
      EXPECT_TRUE((mine.slice(0, 0, -1) >= mine.slice(0, 1)).all().item<bool>()) << i;
    }
  }
  // Surviving boxes of one class in one image never overlap above the NMS threshold.
  torch::Tensor same =
      detections.masked_select(((image == 0) & (labels == 1)).unsqueeze(1)).view({-1, 7}).narrow(1, 1, 4);
  if (same.size(0) > 1) {
    torch::Tensor keep =
        models::GroupedGreedyNms(same.unsqueeze(0), torch::ones({1, same.size(0)}, torch::kBool), 0.55);
    EXPECT_TRUE(keep.all().item<bool>());
  }
}

// The per-image selection SsdSelectDetections replaced (one image at a time, as torchvision's
// postprocess_detections): the reference its batched form must reproduce.
torch::Tensor PerImageDetections(const torch::Tensor& logits, const torch::Tensor& boxes,
                                 const models::DetectionSettings& settings) {
  const int64_t candidates = std::min(settings.topk_candidates, logits.size(1));
  const int64_t classes = logits.size(2) - 1;
  torch::Tensor labels =
      torch::arange(1, classes + 1, logits.options()).unsqueeze(1).expand({classes, candidates});
  std::vector<torch::Tensor> detections;
  for (int64_t image = 0; image < logits.size(0); ++image) {
    torch::Tensor scores = torch::softmax(logits[image], -1).narrow(1, 1, classes);
    auto [top_scores, top_anchors] = scores.topk(candidates, 0);
    top_scores = top_scores.t();
    torch::Tensor class_boxes =
        boxes[image].index_select(0, top_anchors.t().reshape({-1})).view({classes, candidates, 4});
    torch::Tensor keep =
        models::GroupedGreedyNms(class_boxes, top_scores > settings.score_thresh, settings.nms_thresh);
    torch::Tensor kept_scores = top_scores.masked_select(keep);
    torch::Tensor kept_boxes = class_boxes.masked_select(keep.unsqueeze(2)).view({-1, 4});
    torch::Tensor kept_labels = labels.masked_select(keep);
    const int64_t count = std::min(settings.detections_per_image, kept_scores.size(0));
    torch::Tensor order = std::get<1>(kept_scores.topk(count));
    detections.push_back(
        torch::cat({torch::full({count, 1}, static_cast<double>(image), logits.options()),
                    kept_boxes.index_select(0, order), kept_scores.index_select(0, order).unsqueeze(1),
                    kept_labels.index_select(0, order).unsqueeze(1)},
                   1));
  }
  return torch::cat(detections, 0);
}

TEST(SsdTest, BatchedSelectionEqualsThePerImageOneForEveryChunkSize) {
  // 5 images, 200 anchors, 6 classes + background, boxes in a 64-pixel image clustered so that
  // NMS suppresses in chains. Image 3 has a background logit so large that no score passes the
  // threshold: it yields no rows, in the middle of a chunk. Float logits: no equal scores, so
  // the order is defined and the results must be equal to the bit.
  torch::manual_seed(11);
  const int64_t n = 5, anchors = 200, k = 7;
  torch::Tensor logits = torch::randn({n, anchors, k}) * 3;
  logits.select(0, 3).select(1, 0).fill_(40.0);
  torch::Tensor centre = torch::rand({n, anchors, 2}) * 24 + 20;
  torch::Tensor half = torch::rand({n, anchors, 2}) * 10 + 4;
  torch::Tensor boxes = torch::cat({centre - half, centre + half}, 2).clamp(0, 64);
  for (const int64_t topk : {int64_t{300}, int64_t{50}}) {
    for (const int64_t detections : {int64_t{300}, int64_t{20}}) {
      models::DetectionSettings settings{0.001, 0.55, topk, detections, 1};
      torch::Tensor expected = PerImageDetections(logits, boxes, settings);
      ASSERT_GT(expected.size(0), 0);
      EXPECT_EQ(expected.select(1, 0).eq(3).sum().item<int64_t>(), 0);
      for (const int64_t chunk : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{16}}) {
        settings.images_per_chunk = chunk;
        torch::Tensor got = models::SsdSelectDetections(logits, boxes, settings);
        EXPECT_TRUE(got.equal(expected))
            << "topk " << topk << " detections " << detections << " chunk " << chunk << ": " << got.sizes()
            << " rows against " << expected.sizes();
      }
    }
  }
  // Bad shapes are refused, not read out of bounds.
  EXPECT_THROW(models::SsdSelectDetections(logits, boxes.narrow(1, 0, 10), {}), c10::Error);
  models::DetectionSettings zero_chunk;
  zero_chunk.images_per_chunk = 0;
  EXPECT_THROW(models::SsdSelectDetections(logits, boxes, zero_chunk), c10::Error);
}

TEST(NmsTest, ALongSuppressionChainSettlesExactly) {
  // 10x10 boxes sliding one pixel at a time: a box overlaps the next two above the threshold (IoU
  // 90/110 and 80/120) and the third below it (70/130), so greedy NMS keeps every third, a chain that needs
  // many rounds of the fixed point (more than one test interval), against the answer by hand.
  const int64_t t = 23;
  torch::Tensor x = torch::arange(t, torch::kFloat);
  torch::Tensor group = torch::stack({x, torch::zeros({t}), x + 10, torch::full({t}, 10.0f)}, 1);
  torch::Tensor keep = models::GroupedGreedyNms(group.unsqueeze(0), torch::ones({1, t}, torch::kBool), 0.55);
  torch::Tensor expected = (torch::arange(t) % 3 == 0).unsqueeze(0);
  EXPECT_TRUE(keep.equal(expected)) << keep;
}

TEST(SeededNormalImagesTest, SameSeedSameImagesAnyThreadCountAndABatchIsAPrefix) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const torch::Tensor one_thread = models::SeededNormalImages(5, 3, 8, 8, 42);
  at::set_num_threads(std::max(2, threads));
  const torch::Tensor many = models::SeededNormalImages(5, 3, 8, 8, 42);
  at::set_num_threads(threads);
  EXPECT_EQ(one_thread.sizes(), (std::vector<int64_t>{5, 3, 8, 8}));
  EXPECT_EQ(one_thread.scalar_type(), torch::kFloat);
  EXPECT_TRUE(one_thread.equal(many));
  {
    // Under InferenceMode (as an infer cell's preparation may be): the same images.
    c10::InferenceMode inference;
    EXPECT_TRUE(models::SeededNormalImages(5, 3, 8, 8, 42).equal(many));
  }
  // A smaller batch is the first samples of a larger one; another seed gives other images, and
  // no two samples of a batch are the same.
  EXPECT_TRUE(models::SeededNormalImages(3, 3, 8, 8, 42).equal(many.narrow(0, 0, 3)));
  EXPECT_FALSE(models::SeededNormalImages(5, 3, 8, 8, 43).equal(many));
  for (int64_t i = 1; i < 5; ++i) EXPECT_FALSE(many[i].equal(many[0])) << i;
  // Standard normal: over 64 x 3 x 32 x 32 = 196,608 values (fixed by the seed) the mean is
  // within 0.01 of 0 and the standard deviation within 0.01 of 1.
  const torch::Tensor big = models::SeededNormalImages(64, 3, 32, 32, 7).to(torch::kDouble);
  EXPECT_NEAR(big.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(big.std().item<double>(), 1.0, 0.01);
}

TEST(NmsTest, SuppressesOverlapsGreedilyPerGroup) {
  // Sorted by score. A; B overlaps A (IoU 81/119 = 0.68): removed. C overlaps B (IoU 0.68) but
  // not A (IoU 64/136 = 0.47): kept, because B was removed first (greedy, not "any overlap
  // with a higher score"). D is far away: kept. E overlaps D fully but is below the score
  // threshold (invalid): neither kept nor suppressing.
  torch::Tensor group = torch::tensor({{0.0f, 0.0f, 10.0f, 10.0f},
                                       {1.0f, 1.0f, 11.0f, 11.0f},
                                       {2.0f, 2.0f, 12.0f, 12.0f},
                                       {50.0f, 50.0f, 60.0f, 60.0f},
                                       {50.0f, 50.0f, 60.0f, 60.0f}});
  torch::Tensor boxes = torch::stack({group, group});
  torch::Tensor valid = torch::tensor({1, 1, 1, 1, 0}).to(torch::kBool);
  // The second group drops A from the candidates: B is then kept and suppresses C.
  torch::Tensor valid2 = torch::tensor({0, 1, 1, 1, 0}).to(torch::kBool);
  torch::Tensor keep = models::GroupedGreedyNms(boxes, torch::stack({valid, valid2}), 0.55);
  EXPECT_TRUE(keep.equal(torch::tensor({{1, 0, 1, 1, 0}, {0, 1, 0, 1, 0}}).to(torch::kBool))) << keep;
  // At a threshold above every IoU nothing is suppressed.
  EXPECT_TRUE(
      models::GroupedGreedyNms(boxes, torch::stack({valid, valid}), 0.9).equal(torch::stack({valid, valid})));
}

}  // namespace
}  // namespace dlbench::torchrunner
