#include "aoti_sidecar.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

namespace dlbench::torchrunner {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

// The sidecar keys recorded under the effective cell's package, in aoti_package.py's order.
constexpr const char* kRecordedKeys[] = {
    "source_model", "precision", "recipe",      "input_shapes", "input_dtypes", "batch_min",  "batch_max",
    "export_s",     "compile_s", "packaging_s", "torch",        "cuda",         "device_name"};

Result<std::optional<std::int64_t>> OptionalBatch(const nlohmann::json& j, const char* key,
                                                  const std::string& path) {
  const auto it = j.find(key);
  if (it == j.end()) return std::optional<std::int64_t>();
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1) {
    return Invalid(fmt::format("AOTInductor sidecar {}: '{}' must be a positive integer (got {})", path, key,
                               it->dump()));
  }
  return std::optional<std::int64_t>(it->get<std::int64_t>());
}

}  // namespace

std::string AotiSidecarPath(const std::string& model_path) { return model_path + ".json"; }

Result<AotiSidecar> ParseAotiSidecar(const std::string& text, const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid(fmt::format("AOTInductor sidecar {} is not valid JSON", path));
  if (!j.is_object()) return Invalid(fmt::format("AOTInductor sidecar {} is not a JSON object", path));
  AotiSidecar sidecar;
  sidecar.path = path;
  if (const auto it = j.find("precision"); it != j.end()) {
    const std::string name = it->is_string() ? it->get<std::string>() : it->dump();
    for (const Precision p :
         {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16, Precision::kInt8}) {
      if (it->is_string() && name == PrecisionName(p)) sidecar.precision = p;
    }
    if (!sidecar.precision) {
      return Invalid(fmt::format(
          "AOTInductor sidecar {}: 'precision' must be one of fp32, tf32, bf16, fp16, int8 (got {})", path,
          it->dump()));
    }
  }
  auto batch_min = OptionalBatch(j, "batch_min", path);
  if (!batch_min.ok()) return batch_min.error();
  sidecar.batch_min = *batch_min;
  auto batch_max = OptionalBatch(j, "batch_max", path);
  if (!batch_max.ok()) return batch_max.error();
  sidecar.batch_max = *batch_max;
  if (sidecar.batch_min && sidecar.batch_max && *sidecar.batch_min > *sidecar.batch_max) {
    return Invalid(fmt::format("AOTInductor sidecar {}: batch_min {} is above batch_max {}", path,
                               *sidecar.batch_min, *sidecar.batch_max));
  }
  if (const auto it = j.find("input_dtypes"); it != j.end()) {
    if (!it->is_string()) {
      return Invalid(
          fmt::format("AOTInductor sidecar {}: 'input_dtypes' must be a string such as "
                      "\"float32\" (got {})",
                      path, it->dump()));
    }
    auto dtypes = ParseInputDtypes(it->get<std::string>());
    if (!dtypes.ok()) {
      return Invalid(fmt::format("AOTInductor sidecar {}: {}", path, dtypes.error().message));
    }
    sidecar.input_dtypes = std::move(*dtypes);
  }
  sidecar.package = nlohmann::json::object();
  for (const char* key : kRecordedKeys) {
    if (const auto it = j.find(key); it != j.end()) sidecar.package[key] = *it;
  }
  sidecar.package["sidecar"] = path;
  return sidecar;
}

Result<std::optional<AotiSidecar>> ReadAotiSidecar(const std::string& model_path) {
  const std::string path = AotiSidecarPath(model_path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::optional<AotiSidecar>();
  if (!S_ISREG(st.st_mode)) return Invalid(fmt::format("AOTInductor sidecar {} is not a regular file", path));
  if (st.st_size > kAotiSidecarMaxBytes) {
    return Invalid(
        fmt::format("AOTInductor sidecar {} is {} bytes; at most {} are read (aoti_package.py "
                    "writes under 1 KiB)",
                    path, static_cast<std::int64_t>(st.st_size), kAotiSidecarMaxBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid(fmt::format("AOTInductor sidecar {} cannot be read", path));
  // Bounded again while reading: the file may have grown since stat.
  std::string text(static_cast<std::size_t>(kAotiSidecarMaxBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Invalid(fmt::format("AOTInductor sidecar {} cannot be read", path));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (static_cast<std::int64_t>(text.size()) > kAotiSidecarMaxBytes) {
    return Invalid(fmt::format("AOTInductor sidecar {} is over {} bytes", path, kAotiSidecarMaxBytes));
  }
  auto sidecar = ParseAotiSidecar(text, path);
  if (!sidecar.ok()) return sidecar.error();
  return std::optional<AotiSidecar>(*std::move(sidecar));
}

Status CheckAotiCell(const AotiSidecar& sidecar, const TorchCell& cell) {
  if (sidecar.precision && *sidecar.precision != cell.precision) {
    return Invalid(fmt::format("this package was compiled at {} (its sidecar {}); set precision: {}",
                               PrecisionName(*sidecar.precision), sidecar.path,
                               PrecisionName(*sidecar.precision)));
  }
  const bool below = sidecar.batch_min && cell.batch_size < *sidecar.batch_min;
  const bool above = sidecar.batch_max && cell.batch_size > *sidecar.batch_max;
  if (below || above) {
    return Invalid(fmt::format(
        "batch_size {} is outside this package's dynamic batch range {}..{} (its sidecar {}); use a batch "
        "size in the range or package again with bench/gpu/aoti_package.py --max-batch",
        cell.batch_size, sidecar.batch_min ? fmt::format("{}", *sidecar.batch_min) : std::string("1"),
        sidecar.batch_max ? fmt::format("{}", *sidecar.batch_max) : std::string("any"), sidecar.path));
  }
  if (sidecar.input_dtypes && cell.aoti && *sidecar.input_dtypes != cell.aoti->input_dtypes) {
    std::string packaged;
    for (const InputDtype d : *sidecar.input_dtypes)
      packaged += (packaged.empty() ? "" : ";") + std::string(InputDtypeName(d));
    return Invalid(fmt::format("this package takes inputs of dtype {} (its sidecar {}); set input_dtypes: {}",
                               packaged, sidecar.path, packaged));
  }
  return Status::Ok();
}

}  // namespace dlbench::torchrunner
