// READY's effective cell and EXTRAS of a torch-runner cell (cell_report.h).
#include "cell_report.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "blas_threads.h"
#include "cell_capture.h"
#include "cell_options.h"
#include "config/cuda_alloc_conf.h"
#include "config/host_allocator.h"
#include "data/feeder.h"
#include "ddp/cell.h"
#include "device_info.h"
#include "models/dynamic_int8.h"
#include "peak_flops.h"
#include "precision.h"
#include "record/metrics.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

std::optional<double> FlopsPerSample(const CellState& s) {
  auto forward = s.workload->ForwardFlopsPerSample();
  if (!forward) return std::nullopt;
  return Trains(s.cell.scenario) ? 3.0 * *forward : *forward;
}

// What the weights are held as: fp32, with bert_base's Linear weights packed at int8, or as a
// TorchScript file saved them (its quantized layers counted).
std::string ParamDtype(const CellState& s) {
  const nlohmann::json quantized = s.workload->QuantizedInModel();
  if (!quantized.is_null()) {
    return fmt::format("as saved in the TorchScript file: {} packed quantized layers, {} quantized tensors",
                       quantized.value("packed_layers_total", std::int64_t{0}),
                       quantized.value("quantized_tensors", std::int64_t{0}));
  }
  if (s.cell.aoti)
    return "as packaged: the AOTInductor package's constants, at the precision it was compiled at";
  return s.cell.precision == Precision::kInt8 ? "float32; Linear weights qint8" : "float32";
}

// One EXTRAS metric, named and united as record/metrics.h declares it.
nlohmann::json Metric(std::string_view name, double value) {
  return {{"name", name}, {"value", value}, {"unit", record::MetricUnit(name)}};
}

}  // namespace

nlohmann::json Effective(const CellState& s, std::uint64_t seed) {
  const TorchCell& cell = s.cell;
  nlohmann::json e = {
      {"model", s.workload->name()},
      {"scenario", ScenarioName(cell.scenario)},
      {"batch_size", cell.batch_size},
      {"samples_per_step", cell.batch_size},
      {"device", cell.device.ToString()},
      {"precision", PrecisionName(cell.precision)},
      {"param_dtype", ParamDtype(s)},
      {"autocast_dtype",
       s.autocast_dtype ? nlohmann::json(c10::toString(*s.autocast_dtype)) : nlohmann::json(nullptr)},
      {"loss_scaling", s.scaler != nullptr},
      {"memory_format",
       s.memory_format == torch::MemoryFormat::ChannelsLast ? "channels_last" : "contiguous"},
      {"memory_format_requested", MemoryFormatName(cell.memory_format)},
      {"cuda_graph", CudaGraphEffective(s)},
      {"threads", at::get_num_threads()},
      {"interop_threads", at::get_num_interop_threads()},
      {"blas", ToJson(s.blas)},
      {"deterministic", cell.deterministic},
      {"seed", seed},
      {"strategy", s.ddp ? "ddp" : "none"},
      {"world_size", s.cell.ddp ? s.cell.ddp->world_size : 1},
      {"timing", "host clock around each step; the step ends with a device synchronize"},
      {"torch_version", TorchVersion()},
      {"model_options", s.workload->EffectiveOptions()},
  };
  e.update(s.switches.ToJson());
  if (cell.aoti) {
    e["precision_source"] = fmt::format(
        "the AOTInductor package's: compiled at {} (checked against its sidecar when it has one); "
        "no autocast around the compiled forward, whose kernels bypass ATen's dispatcher",
        PrecisionName(cell.precision));
  }
  if (cell.precision == Precision::kInt8 && cell.torchscript) {
    e["quantization"] = {{"scheme", "offline: the TorchScript file's own quantized layers, run as saved"},
                         {"in_model", s.workload->QuantizedInModel()},
                         {"engine", models::QuantizedEngineName()}};
  } else if (cell.precision == Precision::kInt8) {
    e["quantization"] = {{"scheme", "dynamic"},
                         {"layers", "every Linear"},
                         {"weights", "qint8, per tensor, symmetric (max |w| / 127.5)"},
                         {"activations", "quint8, quantized per call from their range"},
                         {"engine", models::QuantizedEngineName()},
                         {"reduce_range", models::ReduceRangeOnEngine()}};
  }
  // The caching allocator's settings as this process's environment holds them (the orchestrator sets
  // them from cuda_alloc_conf before the exec; docs/memory.md): what the allocator read.
  if (const char* conf = std::getenv(config::kCudaAllocConfEnv)) e[config::kCudaAllocConfEffective] = conf;
  // The host allocator this process runs with (host_allocator; docs/memory.md "The host allocator").
  e[config::kHostAllocatorEffective] = config::DetectHostAllocator();
  if (cell.deterministic) {
    const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    e["cublas_workspace_config"] = ws != nullptr ? ws : "";
  }
  // The GPUs this cell uses, by UUID (docs/protocol.md): the monitor attributes only their samples.
  e["device_uuids"] = nlohmann::json::array();
  if (s.cuda_device) {
    e["device_name"] = s.cuda_device->name;
    e["compute_capability"] = fmt::format("{}.{}", s.cuda_device->major, s.cuda_device->minor);
    e["device_uuids"].push_back(s.cuda_device->uuid);
  }
  if (Trains(cell.scenario)) {
    e["optimizer"] = s.workload->OptimizerName();
    e["optimizer_impl"] = s.optimizer_impl;
    if (cell.lr) e["lr"] = *cell.lr;
  }
  if (auto flops = FlopsPerSample(s)) e[record::metric::kFlopsPerSample] = *flops;
  e.update(s.feeder->Effective());
  if (s.ddp) ddp::AddEffective(*s.ddp, e);
  return e;
}

nlohmann::json Extras(const CellState& s) {
  nlohmann::json metrics = nlohmann::json::array();
  nlohmann::json info = nlohmann::json::object();
  if (auto flops = FlopsPerSample(s)) {
    metrics.push_back(Metric(record::metric::kFlopsPerSample, *flops));
    info["flop_convention"] = Trains(s.cell.scenario) ? "3 x counted forward FLOPs (multiply-add = 2)"
                                                      : "counted forward FLOPs (multiply-add = 2)";
  }
  if (auto weights = s.workload->DeployedWeightBytes()) {
    metrics.push_back(Metric(record::metric::kWeightBytes, static_cast<double>(weights->total)));
    metrics.push_back(Metric(record::metric::kLinearWeightBytes, static_cast<double>(weights->linear)));
  }
  if (auto file = s.workload->ModelFileBytes())
    metrics.push_back(Metric(record::metric::kModelFileBytes, static_cast<double>(*file)));
  if (s.cuda_device) {
    info["device_name"] = s.cuda_device->name;
    if (auto peak = PeakFlopsPerS(s.cuda_device->name, s.cell.precision)) {
      metrics.push_back(Metric(record::metric::kPeakFlopsPerS, *peak));
      info["device_peak_source"] =
          "NVIDIA datasheet, dense tensor-core/FP32 peak (runners/torch/peak_flops.cc)";
    }
  }
  if (s.last_loss.defined()) {
    // JSON has no NaN/inf: a diverged loss is reported as a flag rather than a null number.
    const double loss = s.last_loss.to(torch::kCPU).to(torch::kDouble).item<double>();
    if (std::isfinite(loss))
      info["final_loss"] = loss;
    else
      info["final_loss_nonfinite"] = true;
  }
  if (s.scaler) {
    metrics.push_back(Metric(record::metric::kLossScaleFinal, s.scaler->scale()));
    metrics.push_back(
        Metric(record::metric::kSkippedOptimizerSteps, static_cast<double>(s.scaler->skipped_steps())));
  }
  s.feeder->AddExtras(metrics, info);
  return {{"metrics", metrics}, {"info", info}};
}

}  // namespace dlbench::torchrunner
