#include "converge.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>

#include "common/clock.h"
#include "config/runner_params.h"
#include "idx/idx.h"
#include "models/dynamic_int8.h"
#include "precision.h"
#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::torchrunner {
namespace {

constexpr std::int64_t kImageSide = 28;
constexpr int kClasses = 10;
constexpr std::int64_t kEvalChunk = 1000;  // evaluation batch: bounded activation memory

using record::series::kEvalAccuracy;
using record::series::kEvalLoss;
using record::series::kTrainLoss;
using record::series::kTrainLr;

nlohmann::json Metric(std::string_view name, double value) {
  return {{"name", name}, {"value", value}, {"unit", record::MetricUnit(name)}};
}

// The first `limit` samples of an IDX image set as float [N, 1, 28, 28] in [0, 1] and int64 labels.
std::pair<torch::Tensor, torch::Tensor> LoadSet(const std::string& dir, const std::string& prefix,
                                                std::optional<std::int64_t> limit, torch::Device device) {
  const std::string images = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  auto set = idx::ReadLabelledImages(images, labels, kClasses);
  if (!set.ok()) throw std::invalid_argument("dataset: " + set.error().message);
  if (set->rows != kImageSide || set->cols != kImageSide) {
    throw std::invalid_argument(fmt::format("dataset: {}: images are {} x {}; Fashion-MNIST's are 28 x 28",
                                            images, set->rows, set->cols));
  }
  const std::int64_t count = static_cast<std::int64_t>(set->count);
  const std::int64_t n = std::min(count, limit.value_or(count));
  torch::Tensor x = torch::from_blob(set->pixels.data(), {count, 1, kImageSide, kImageSide}, torch::kUInt8)
                        .narrow(0, 0, n)
                        .to(torch::kFloat)
                        .div_(255.0);
  torch::Tensor y =
      torch::from_blob(set->labels.data(), {count}, torch::kUInt8).narrow(0, 0, n).to(torch::kLong);
  return {x.to(device), y.to(device)};
}

}  // namespace

std::string ConvergeOptions::TargetText() const {
  return target_accuracy ? fmt::format("accuracy >= {:g}", *target_accuracy)
                         : fmt::format("loss <= {:g}", target_loss.value_or(0));
}

Result<ConvergeOptions> ParseConvergeOptions(const nlohmann::json& params) {
  auto parsed = config::RunnerParams::Parse(params, "torch");
  if (!parsed.ok()) return parsed.error();
  const config::RunnerParams& p = *parsed;
  ConvergeOptions o;
  o.target_accuracy = p.Number("target_accuracy");
  o.target_loss = p.Number("target_loss");
  if (o.target_accuracy.has_value() == o.target_loss.has_value()) {
    return MakeError(ErrorKind::kInvalidInput,
                     "scenario converge needs exactly one of target_accuracy and target_loss");
  }
  o.eval_every = p.Int("eval_every");
  o.max_epochs = p.Int("max_epochs").value_or(o.max_epochs);
  o.max_train_time_s = p.Number("max_train_time_s").value_or(o.max_train_time_s);
  o.dataset_dir = p.Text("dataset_dir").value_or(o.dataset_dir);
  o.train_samples = p.Int("train_samples");
  o.eval_samples = p.Int("eval_samples");
  return o;
}

void ThinnedCurve::Add(std::int64_t t_ns, double value) {
  if (!count_.empty() && count_.back() < per_point_) {
    t_ns_.back() = t_ns;
    sum_.back() += value;
    ++count_.back();
    return;
  }
  if (t_ns_.size() == kMaxPoints) {
    for (std::size_t i = 0; i < kMaxPoints / 2; ++i) {
      t_ns_[i] = t_ns_[2 * i + 1];
      sum_[i] = sum_[2 * i] + sum_[2 * i + 1];
      count_[i] = count_[2 * i] + count_[2 * i + 1];
    }
    t_ns_.resize(kMaxPoints / 2);
    sum_.resize(kMaxPoints / 2);
    count_.resize(kMaxPoints / 2);
    per_point_ *= 2;
  }
  t_ns_.push_back(t_ns);
  sum_.push_back(value);
  count_.push_back(1);
}

nlohmann::json ThinnedCurve::ToJson() const {
  nlohmann::json values = nlohmann::json::array();
  for (std::size_t i = 0; i < sum_.size(); ++i) values.push_back(sum_[i] / static_cast<double>(count_[i]));
  return {{"t_ns", t_ns_}, {"value", values}, {"per_point", per_point_}};
}

ConvergeCell::ConvergeCell(const TorchCell& cell, Workload& workload, torch::Device device,
                           std::uint64_t seed)
    : cell_(cell), batch_size_(cell.batch_size), seed_(seed) {
  auto options = ParseConvergeOptions(cell.params);
  if (!options.ok()) throw std::invalid_argument(options.error().message);
  options_ = *options;
  const std::vector<torch::Tensor> fed = workload.FeedTensors();
  if (fed.size() != 2 || fed[0].sizes() != torch::IntArrayRef({batch_size_, 1, kImageSide, kImageSide}) ||
      workload.NumClasses() != kClasses) {
    throw std::invalid_argument(fmt::format(
        "scenario converge trains on Fashion-MNIST (1 x 28 x 28 images, 10 classes); model {} does not take "
        "that (use fashion_cnn or fashion_cnn_bn)",
        workload.name()));
  }
  std::tie(train_x_, train_y_) = LoadSet(options_.dataset_dir, "train", options_.train_samples, device);
  std::tie(eval_x_, eval_y_) = LoadSet(options_.dataset_dir, "t10k", options_.eval_samples, device);
  if (train_x_.size(0) < batch_size_) {
    throw std::invalid_argument(
        fmt::format("batch_size {} is larger than the {} training samples", batch_size_, train_x_.size(0)));
  }
}

nlohmann::json ConvergeCell::Effective() const {
  const std::int64_t steps_per_epoch = train_x_.size(0) / batch_size_;
  return {
      {"dataset", "fashion-mnist"},
      {"dataset_dir", options_.dataset_dir},
      {"train_samples", train_x_.size(0)},
      {"eval_samples", eval_x_.size(0)},
      {"target", options_.TargetText()},
      {"steps_per_epoch", steps_per_epoch},
      {"eval_every", options_.eval_every.value_or(steps_per_epoch)},
      {"max_epochs", options_.max_epochs},
      {"max_train_time_s", options_.max_train_time_s},
      {"shuffle", "a permutation per epoch from the cell's seed and the epoch; last partial batch dropped"},
      {"lr_schedule", "constant"},
      {"preprocessing", "pixels / 255"}};
}

ConvergeCell::Quality ConvergeCell::Evaluate(Workload& workload, torch::Device device,
                                             torch::MemoryFormat format,
                                             std::optional<torch::ScalarType> autocast,
                                             const torch::Tensor& x, const torch::Tensor& y) {
  workload.SetTraining(false);
  double loss_sum = 0;
  std::int64_t correct = 0;
  {
    c10::InferenceMode inference;
    AutocastRegion region(device.type(), autocast);
    const std::int64_t n = x.size(0);
    torch::Tensor loss_total = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
    torch::Tensor correct_total = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
    for (std::int64_t begin = 0; begin < n; begin += kEvalChunk) {
      const std::int64_t size = std::min(kEvalChunk, n - begin);
      const torch::Tensor xs = ToMemoryFormat(x.narrow(0, begin, size), format);
      const torch::Tensor ys = y.narrow(0, begin, size);
      const torch::Tensor logits = workload.ForwardInputs({xs}).at(0).to(torch::kFloat);
      loss_total += torch::nn::functional::cross_entropy(
                        logits, ys, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                        .to(torch::kDouble);
      correct_total += logits.argmax(1).eq(ys).sum();
    }
    loss_sum = loss_total.item<double>();
    correct = correct_total.item<std::int64_t>();
  }
  workload.SetTraining(true);
  const double n = static_cast<double>(x.size(0));
  return {static_cast<double>(correct) / n, loss_sum / n};
}

ConvergeCell::Quality ConvergeCell::Evaluate(ConvergeContext& c) {
  return Evaluate(*c.workload, c.device, c.memory_format, c.autocast_dtype, eval_x_, eval_y_);
}

ConvergeCell::Quality ConvergeCell::EvaluateInt8(ConvergeContext& c, nlohmann::json& entry) {
  const torch::Device cpu(torch::kCPU);
  TorchCell cpu_cell = cell_;
  cpu_cell.device = DeviceSpec{};
  cpu_cell.precision = Precision::kFp32;
  std::unique_ptr<Workload> copy = MakeWorkload(cpu_cell);
  copy->Prepare(cpu_cell, cpu, torch::MemoryFormat::Contiguous, seed_);
  {
    // The trained weights and BatchNorm statistics, in the module's order.
    torch::NoGradGuard no_grad;
    auto copy_all = [](const std::vector<torch::Tensor>& from, const std::vector<torch::Tensor>& to) {
      if (from.size() != to.size())
        throw std::logic_error("int8 evaluation: the model copy differs in layout");
      for (std::size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
    };
    copy_all(c.workload->Parameters(), copy->Parameters());
    copy_all(c.workload->Buffers(), copy->Buffers());
  }
  const std::optional<WeightBytes> fp32_bytes = copy->DeployedWeightBytes();
  const std::int64_t calibration = std::min(kInt8CalibrationSamples, train_x_.size(0));
  copy->SetTraining(false);
  copy->QuantizeCalibratedInt8(train_x_.narrow(0, 0, calibration).to(cpu));
  const std::optional<WeightBytes> int8_bytes = copy->DeployedWeightBytes();
  entry["device"] = "cpu";
  entry["form"] =
      "static int8 convolutions (BatchNorm folded, qint8 per-channel symmetric weights, quint8 activations "
      "calibrated by min/max), dynamic int8 Linear (qint8 per-tensor weights, activations quantized per "
      "call)";
  entry["engine"] = models::QuantizedEngineName();
  entry["reduce_range"] = models::ReduceRangeOnEngine();
  entry["calibration_samples"] = calibration;
  entry["calibration_set"] = "the first training samples";
  if (fp32_bytes && int8_bytes) {
    entry["fp32_weight_bytes"] = fp32_bytes->total;
    entry["int8_weight_bytes"] = int8_bytes->total;
  }
  return Evaluate(*copy, cpu, torch::MemoryFormat::Contiguous, std::nullopt, eval_x_.to(cpu),
                  eval_y_.to(cpu));
}

PrecisionEvalResult ConvergeCell::EvaluatePrecisions(ConvergeContext& c) {
  PrecisionEvalResult r;
  std::optional<double> fp32;
  for (const Precision p : cell_.eval_precisions) {
    const std::string name = PrecisionName(p);
    nlohmann::json entry = nlohmann::json::object();
    const std::int64_t t0 = MonotonicNowNs();
    Quality q;
    if (p == Precision::kInt8) {
      q = EvaluateInt8(c, entry);
    } else {
      // TF32 as the precision sets it (ApplyMathSwitches' rule), restored after.
      const bool cublas = at::globalContext().allowTF32CuBLAS();
      const bool cudnn = at::globalContext().allowTF32CuDNN();
      at::globalContext().setAllowTF32CuBLAS(p == Precision::kTf32);
      at::globalContext().setAllowTF32CuDNN(p != Precision::kFp32);
      try {
        q = Evaluate(*c.workload, c.device, c.memory_format, AutocastDtype(p), eval_x_, eval_y_);
      } catch (...) {
        at::globalContext().setAllowTF32CuBLAS(cublas);
        at::globalContext().setAllowTF32CuDNN(cudnn);
        throw;
      }
      at::globalContext().setAllowTF32CuBLAS(cublas);
      at::globalContext().setAllowTF32CuDNN(cudnn);
      entry["device"] = c.device.str();
      const std::optional<torch::ScalarType> autocast = AutocastDtype(p);
      entry["autocast_dtype"] = autocast ? nlohmann::json(c10::toString(*autocast)) : nlohmann::json(nullptr);
    }
    entry["accuracy"] = q.accuracy;
    entry["loss"] = q.loss;
    entry["time_s"] = NsToSeconds(MonotonicNowNs() - t0);
    if (auto metric = record::EvalAccuracyMetric(name)) r.metrics.push_back(Metric(*metric, q.accuracy));
    if (p == Precision::kFp32) {
      fp32 = q.accuracy;
    } else if (auto delta = record::EvalAccuracyDeltaMetric(name); delta && fp32) {
      r.metrics.push_back(Metric(*delta, q.accuracy - *fp32));
      entry["delta"] = q.accuracy - *fp32;
    }
    r.info["precisions"][name] = entry;
  }
  if (!r.info.empty()) {
    r.info["eval_samples"] = eval_x_.size(0);
    r.info["reference"] = "fp32: the trained model with TF32 off and no autocast";
  }
  return r;
}

std::int64_t ConvergeCell::DatasetBytes() const {
  std::set<const void*> seen;
  std::int64_t bytes = 0;
  for (const torch::Tensor* t : {&train_x_, &train_y_, &eval_x_, &eval_y_}) {
    if (!t->defined() || !seen.insert(t->storage().data()).second) continue;
    bytes += static_cast<std::int64_t>(t->storage().nbytes());
  }
  return bytes;
}

ConvergeResult ConvergeCell::Run(protocol::RunnerSession& session, const protocol::RunnerLimits& limits,
                                 ConvergeContext& c) {
  const std::int64_t n_train = train_x_.size(0);
  const std::int64_t steps_per_epoch = n_train / batch_size_;
  const std::int64_t eval_every = options_.eval_every.value_or(steps_per_epoch);
  const double max_time_s = std::min(options_.max_train_time_s, limits.max_time_s);
  const std::int64_t max_time_ns = static_cast<std::int64_t>(max_time_s * 1e9);
  const std::vector<torch::Tensor> fed = c.workload->FeedTensors();
  torch::Tensor inputs = fed[0], target = fed[1];

  ThinnedCurve train_loss, train_lr, eval_accuracy, eval_loss;
  std::int64_t steps = 0, evaluations = 0, train_ns = 0, eval_ns = 0, last_eval_step = -1;
  std::int64_t best_accuracy_step = 0, reached_step = -1;
  double best_accuracy = -1, best_loss = 0, final_accuracy = 0, final_loss = 0;
  std::int64_t reached_time_ns = 0, reached_train_ns = 0;
  std::string end;
  const std::int64_t begin_ns = MonotonicNowNs();

  auto evaluate = [&] {
    const std::int64_t t0 = MonotonicNowNs();
    const Quality q = Evaluate(c);
    const std::int64_t t1 = MonotonicNowNs();
    eval_ns += t1 - t0;
    ++evaluations;
    last_eval_step = steps;
    final_accuracy = q.accuracy;
    final_loss = q.loss;
    if (q.accuracy > best_accuracy) {
      best_accuracy = q.accuracy;
      best_accuracy_step = steps;
    }
    best_loss = evaluations == 1 ? q.loss : std::min(best_loss, q.loss);
    eval_accuracy.Add(t1, q.accuracy);
    eval_loss.Add(t1, q.loss);
    train_lr.Add(t1, c.optimizer->param_groups().at(0).options().get_lr());
    const bool met =
        options_.target_accuracy ? q.accuracy >= *options_.target_accuracy : q.loss <= *options_.target_loss;
    if (met && reached_step < 0) {
      reached_step = steps;
      reached_time_ns = t1 - begin_ns;
      reached_train_ns = train_ns;
    }
    session.FlushSteps(t1);  // sends the steps before the evaluation; sees a STOP sent meanwhile
    return met;
  };

  for (std::int64_t epoch = 0; end.empty(); ++epoch) {
    if (epoch >= options_.max_epochs) {
      end = "max_epochs";
      break;
    }
    // Drawn between steps: the permutation is the epoch's, not a step's.
    auto epoch_generator =
        at::detail::createCPUGenerator(seed_ * 1000003u + static_cast<std::uint64_t>(epoch));
    const torch::Tensor order = torch::randperm(n_train, epoch_generator, torch::kLong).to(c.device);
    for (std::int64_t b = 0; b < steps_per_epoch; ++b) {
      if (session.stop_requested()) {
        end = "stopped";
        break;
      }
      if (steps >= limits.max_steps) {
        end = "max_steps";
        break;
      }
      if (MonotonicNowNs() - begin_ns >= max_time_ns) {
        end = "max_train_time";
        break;
      }
      const torch::Tensor batch = order.narrow(0, b * batch_size_, batch_size_);
      protocol::StepRecord record;
      const std::int64_t t0 = MonotonicNowNs();
      torch::index_select_out(inputs, train_x_, 0, batch);
      torch::index_select_out(target, train_y_, 0, batch);
      const torch::Tensor loss = c.train_step();
      const std::int64_t t1 = MonotonicNowNs();
      record.start_ns = t0;
      record.end_ns = t1;
      record.samples = static_cast<std::uint32_t>(batch_size_);
      session.Record(record);
      ++steps;
      train_ns += t1 - t0;
      train_loss.Add(t1, loss.to(torch::kCPU).to(torch::kDouble).item<double>());
      if (steps % eval_every == 0 && evaluate()) {
        end = "converged";
        break;
      }
    }
  }
  // The final quality is the model's at the end, whatever ended the training.
  if (steps > 0 && last_eval_step != steps) (void)evaluate();
  if (end != "converged" && reached_step >= 0) end = "converged";
  session.FlushSteps(MonotonicNowNs());

  ConvergeResult r;
  r.steps = steps;
  r.done_reason = end;
  const bool reached = reached_step >= 0;
  r.metrics.push_back(Metric(record::metric::kTargetReached, reached ? 1 : 0));
  if (reached) {
    const double samples = static_cast<double>(reached_step * batch_size_);
    r.metrics.push_back(Metric(record::metric::kTimeToTargetS, NsToSeconds(reached_time_ns)));
    r.metrics.push_back(Metric(record::metric::kTrainTimeToTargetS, NsToSeconds(reached_train_ns)));
    r.metrics.push_back(Metric(record::metric::kStepsToTarget, static_cast<double>(reached_step)));
    r.metrics.push_back(Metric(record::metric::kSamplesToTarget, samples));
    r.metrics.push_back(Metric(record::metric::kEpochsToTarget, samples / static_cast<double>(n_train)));
  }
  if (evaluations > 0) {
    r.metrics.push_back(Metric(record::metric::kFinalEvalAccuracy, final_accuracy));
    r.metrics.push_back(Metric(record::metric::kFinalEvalLoss, final_loss));
    r.metrics.push_back(Metric(record::metric::kBestEvalAccuracy, best_accuracy));
    r.metrics.push_back(Metric(record::metric::kBestEvalLoss, best_loss));
  }
  r.metrics.push_back(Metric(record::metric::kEvalTimeS, NsToSeconds(eval_ns)));
  r.metrics.push_back(Metric(record::metric::kEvaluations, static_cast<double>(evaluations)));
  r.metrics.push_back(Metric(record::metric::kTrainEpochs,
                             static_cast<double>(steps * batch_size_) / static_cast<double>(n_train)));
  r.info = {{"target", options_.TargetText()},
            {"end", end},
            {"reached", reached},
            {"best_accuracy_step", best_accuracy_step},
            {"train_time_s", NsToSeconds(train_ns)},
            {"curves", nlohmann::json::object()}};
  r.info["curves"][std::string(kTrainLoss)] = train_loss.ToJson();
  r.info["curves"][std::string(kTrainLr)] = train_lr.ToJson();
  r.info["curves"][std::string(kEvalAccuracy)] = eval_accuracy.ToJson();
  r.info["curves"][std::string(kEvalLoss)] = eval_loss.ToJson();
  if (reached) r.info["reached_step"] = reached_step;
  return r;
}

}  // namespace dlbench::torchrunner
