#include "config/model_rules.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace dlbench::config {
namespace {

const TorchModelInfo* FindModel(const std::string& name) {
  for (const TorchModelInfo& m : TorchModelTable()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string KnownList() {
  std::string out;
  for (const TorchModelInfo& m : TorchModelTable()) out += (out.empty() ? "" : ", ") + m.name;
  return out +
         ", allreduce (strategy: ddp: the all-reduce alone), torchscript with model_path and input_shapes, "
         "or "
         "aoti (an AOTInductor package) with model_path and input_shapes";
}

// "fashion_cnn or fashion_cnn_bn": the models scenario: converge trains.
std::string ConvergingList() {
  std::vector<std::string> names;
  for (const TorchModelInfo& m : TorchModelTable()) {
    if (m.converges) names.push_back(m.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return out;
}

// scenario: converge's model rules (docs/convergence.md): a model that takes Fashion-MNIST.
void CheckConvergeModel(const Combination& cell, const std::string& name,
                        std::vector<LoadRuleViolation>& out) {
  const auto scenario = cell.find("scenario");
  if (scenario == cell.end() || !scenario->second.is_string() ||
      scenario->second.get<std::string>() != "converge")
    return;
  const TorchModelInfo* info = FindModel(name);
  if (name != "torchscript" && name != "aoti" && info == nullptr)
    return;  // the unknown model is reported already
  if (info == nullptr || !info->converges) {
    out.push_back({"model", "scenario converge trains on Fashion-MNIST (1 x 28 x 28 images, 10 classes); " +
                                name + " does not take that (use " + ConvergingList() + ")"});
    return;
  }
  const auto classes = cell.find("num_classes");
  if (classes != cell.end() &&
      !(classes->second.is_number_integer() && classes->second.get<std::int64_t>() == 10)) {
    out.push_back({"num_classes", "scenario converge classifies Fashion-MNIST's 10 classes (got " +
                                      classes->second.dump() + ")"});
  }
}

// Whether `path` is a regular file this process may read; the reason when not.
std::string FileProblem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "does not exist";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), R_OK) != 0) return "is not readable";
  return "";
}

}  // namespace

const std::vector<TorchModelInfo>& TorchModelTable() {
  static const std::vector<TorchModelInfo> table = {
      {"resnet50", {"base_width", "image_size", "num_classes"}},
      {"mobilenet_v2", {"image_size", "num_classes", "width_mult"}},
      {"bert_base", {"heads", "hidden_size", "layers", "num_classes", "seq_len", "vocab_size"}},
      {"ssd_mobilenet", {"image_size", "num_classes", "width_mult"}},
      {"fashion_cnn", {"base_width", "hidden_size", "num_classes"}, /*converges=*/true},
      {"fashion_cnn_bn", {"base_width", "hidden_size", "num_classes"}, /*converges=*/true},
  };
  return table;
}

const std::vector<std::string>& ModelSizeKeys() {
  static const std::vector<std::string> keys = {"base_width", "heads",      "hidden_size",
                                                "image_size", "layers",     "num_classes",
                                                "seq_len",    "vocab_size", "width_mult"};
  return keys;
}

std::vector<LoadRuleViolation> CheckTorchModelCell(const Combination& cell) {
  std::vector<LoadRuleViolation> out;
  const auto model = cell.find("model");
  if (model == cell.end() || !model->second.is_string()) return out;  // required-ness is the plan's
  const std::string name = model->second.get<std::string>();
  if (name == "torchscript" || name == "aoti") {
    const auto path = cell.find("model_path");
    if (path == cell.end() || !path->second.is_string() || path->second.get<std::string>().empty()) {
      out.push_back({"model", name == "torchscript"
                                  ? "torchscript needs model_path (the TorchScript file to load)"
                                  : "aoti needs model_path (the AOTInductor .pt2 package to load: "
                                    "bench/gpu/aoti_package.py makes one)"});
    } else if (const std::string problem = FileProblem(path->second.get<std::string>()); !problem.empty()) {
      out.push_back({"model_path", path->second.get<std::string>() + " " + problem});
    }
    if (!cell.count("input_shapes")) {
      out.push_back({"model", name + " needs input_shapes (`B,3,224,224`, B for the batch size)"});
    }
  } else if (FindModel(name) == nullptr && name != "allreduce") {
    out.push_back({"model", "unknown model '" + name + "' (the torch runner has " + KnownList() +
                                "; `dlbench models` lists them with their sizes)"});
  }
  CheckConvergeModel(cell, name, out);
  return out;
}

Status CheckTorchModelRules(const Matrix& matrix, const std::vector<Combination>& cells) {
  return ReportCellRules(matrix, cells, CheckTorchModelCell);
}

std::string Int8Problem(const Combination& cell) {
  auto text = [&](const char* key) {
    const auto it = cell.find(key);
    return it != cell.end() && it->second.is_string() ? it->second.get<std::string>() : std::string();
  };
  if (text("precision") != "int8") return "";
  const std::string model = text("model");
  if (model == "aoti")
    return "an AOTInductor package runs at the precision it was compiled at (bench/gpu/aoti_package.py makes "
           "fp32 and bf16 ones); int8 needs a TorchScript model quantized offline, run as model torchscript "
           "on "
           "the cpu";
  const bool torchscript = model == "torchscript";
  if (model != "bert_base" && !torchscript)
    return "only bert_base has a dynamic int8 form here (its Linear layers); int8 CNNs need a TorchScript "
           "model quantized offline (scripts/quantize_cnn.py), run as model torchscript at precision int8";
  const std::string device = text("device");
  if (device.rfind("cpu", 0) != 0)
    return std::string(torchscript ? "a TorchScript model quantized offline" : "dynamic int8 Linear") +
           " runs on the CPU's quantized engines only (int8 on CUDA needs TensorRT, which this runner does "
           "not use); use device cpu for int8, or bf16/fp16 on " +
           device;
  const std::string scenario = text("scenario");
  if (scenario != "infer")
    return "int8 is an inference deployment; use scenario infer (scenario " + scenario + " trains)";
  return "";
}

std::vector<std::string> DropUnusedSizeKeys(Combination& cell) {
  std::vector<std::string> dropped;
  const auto model = cell.find("model");
  if (model == cell.end() || !model->second.is_string()) return dropped;
  const std::string name = model->second.get<std::string>();
  const TorchModelInfo* info = FindModel(name);
  if (info == nullptr && name != "torchscript" && name != "aoti") return dropped;
  for (const std::string& key : ModelSizeKeys()) {
    if (!cell.count(key)) continue;
    if (info != nullptr && std::binary_search(info->size_keys.begin(), info->size_keys.end(), key)) continue;
    cell.erase(key);
    dropped.push_back(key);
  }
  return dropped;
}

}  // namespace dlbench::config
