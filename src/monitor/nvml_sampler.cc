#include "monitor/nvml_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/text.h"
#include "record/series.h"

namespace dlbench::monitor {
namespace {

// NVML_DEVICE_NAME_V2_BUFFER_SIZE is 96, NVML_DEVICE_UUID_V2_BUFFER_SIZE 96,
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80; one size fits them all.
constexpr unsigned int kStringBufferBytes = 128;
// NVML says the process list is dynamic: a process may start between the sizing call and the
// fetch, so the fetch is retried a few times with the count it reports.
constexpr int kProcessFetchAttempts = 3;
constexpr unsigned int kProcessSlack = 8;

template <class F>
bool Bind(void* library, const char* symbol, F& out) {
  void* p = dlsym(library, symbol);
  if (p == nullptr) return false;
  out = reinterpret_cast<F>(p);
  return true;
}

const char* ReadingName(int reading) {
  namespace series = record::series;
  static const std::string_view kNames[] = {
      series::kSmUtilPct,       series::kMemUtilPct,      series::kMemUsedBytes,       series::kPowerW,
      series::kEnergyJ,         series::kSmClockMhz,      series::kMemClockMhz,        series::kTempC,
      series::kPcieTxBytesPerS, series::kPcieRxBytesPerS, series::kClocksEventReasons, series::kProcMemBytes};
  return kNames[reading].data();
}

// A field's return codes that mean it will never be served on this device and driver.
bool FieldNeverWorks(NvmlReturn rc) {
  return rc == kNvmlErrorNotSupported || rc == kNvmlErrorFunctionNotFound || rc == kNvmlErrorNoPermission ||
         rc == kNvmlErrorInvalidArgument;
}

bool NeverWorks(NvmlReturn rc) {
  return rc == kNvmlErrorNotSupported || rc == kNvmlErrorFunctionNotFound || rc == kNvmlErrorNoPermission;
}

}  // namespace

std::optional<double> FieldValueNumber(const NvmlFieldValue& field) {
  // nvmlValue_t is a union; its bytes are copied into the member value_type names.
  auto as = [&field](auto zero) {
    std::memcpy(&zero, &field.value, sizeof(zero));
    return static_cast<double>(zero);
  };
  switch (static_cast<NvmlValueType>(field.value_type)) {
    case NvmlValueType::kDouble:
      return as(0.0);
    case NvmlValueType::kUnsignedInt:
      return as(0U);
    case NvmlValueType::kUnsignedLong:
      return as(0UL);
    case NvmlValueType::kUnsignedLongLong:
      return as(0ULL);
    case NvmlValueType::kSignedLongLong:
      return as(0LL);
    case NvmlValueType::kSignedInt:
      return as(0);
    case NvmlValueType::kUnsignedShort:
      return as(static_cast<unsigned short>(0));
  }
  return std::nullopt;
}

Result<NvmlLibrary> LoadNvml(const std::string& soname) {
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return MakeError(ErrorKind::kUnsupported, "cannot load " + soname + ": " + (why ? why : "unknown error"));
  }
  NvmlLibrary lib;
  lib.library = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  NvmlApi& api = lib.api;
  struct Required {
    const char* symbol;
    bool bound;
  };
  const Required required[] = {
      {"nvmlInit_v2", Bind(handle, "nvmlInit_v2", api.init)},
      {"nvmlShutdown", Bind(handle, "nvmlShutdown", api.shutdown)},
      {"nvmlErrorString", Bind(handle, "nvmlErrorString", api.error_string)},
      {"nvmlDeviceGetCount_v2", Bind(handle, "nvmlDeviceGetCount_v2", api.device_get_count)},
      {"nvmlDeviceGetHandleByIndex_v2",
       Bind(handle, "nvmlDeviceGetHandleByIndex_v2", api.device_get_handle_by_index)},
  };
  for (const auto& r : required) {
    if (!r.bound) return MakeError(ErrorKind::kUnsupported, soname + " lacks " + r.symbol);
  }
  auto optional = [&](const char* symbol, auto& out) {
    if (!Bind(handle, symbol, out)) lib.missing.emplace_back(symbol);
  };
  optional("nvmlDeviceGetName", api.device_get_name);
  optional("nvmlDeviceGetUUID", api.device_get_uuid);
  optional("nvmlSystemGetDriverVersion", api.system_get_driver_version);
  optional("nvmlSystemGetNVMLVersion", api.system_get_nvml_version);
  optional("nvmlDeviceGetUtilizationRates", api.device_get_utilization_rates);
  optional("nvmlDeviceGetMemoryInfo", api.device_get_memory_info);
  optional("nvmlDeviceGetPowerUsage", api.device_get_power_usage);
  optional("nvmlDeviceGetEnforcedPowerLimit", api.device_get_enforced_power_limit);
  optional("nvmlDeviceGetTotalEnergyConsumption", api.device_get_total_energy_consumption);
  optional("nvmlDeviceGetClockInfo", api.device_get_clock_info);
  optional("nvmlDeviceGetTemperature", api.device_get_temperature);
  optional("nvmlDeviceGetPcieThroughput", api.device_get_pcie_throughput);
  optional("nvmlDeviceGetComputeRunningProcesses_v3", api.device_get_compute_running_processes);
  optional("nvmlDeviceGetFieldValues", api.device_get_field_values);
  // "ClocksThrottle" became "ClocksEvent" in NVML 12.2 with the same bits; older drivers have only
  // the old name, newer headers deprecate it.
  if (!Bind(handle, "nvmlDeviceGetCurrentClocksEventReasons", api.device_get_clocks_event_reasons)) {
    optional("nvmlDeviceGetCurrentClocksThrottleReasons", api.device_get_clocks_event_reasons);
  }
  if (!Bind(handle, "nvmlDeviceGetSupportedClocksEventReasons",
            api.device_get_supported_clocks_event_reasons)) {
    optional("nvmlDeviceGetSupportedClocksThrottleReasons", api.device_get_supported_clocks_event_reasons);
  }
  return lib;
}

NvmlSampler::NvmlSampler(std::string reason) : state_("unsupported: " + std::move(reason)) {}

std::unique_ptr<NvmlSampler> NvmlSampler::Unsupported(std::string reason) {
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(reason)));
}

NvmlSampler::NvmlSampler(NvmlApi api, std::shared_ptr<void> library, std::shared_ptr<const ProcFs> procfs,
                         const SamplerOptions& options)
    : api_(api), library_(std::move(library)), procfs_(std::move(procfs)), options_(options) {
  if (api_.init == nullptr || api_.device_get_count == nullptr ||
      api_.device_get_handle_by_index == nullptr) {
    state_ = "unsupported: NVML entry points missing";
    return;
  }
  NvmlReturn rc = api_.init();
  if (rc != kNvmlSuccess) {
    state_ = "unsupported: nvmlInit_v2 failed: " + ErrorText(rc);
    return;
  }
  initialized_ = true;
  rc = api_.device_get_count(&device_count_);
  if (rc != kNvmlSuccess) {
    state_ = "unsupported: nvmlDeviceGetCount_v2 failed: " + ErrorText(rc);
    return;
  }
  if (device_count_ == 0) {
    state_ = "unsupported: the driver reports no GPU";
    return;
  }
  state_ = "ok";
  SetDevices(options_.gpu_devices);
}

NvmlSampler::~NvmlSampler() {
  if (initialized_ && api_.shutdown != nullptr) api_.shutdown();
}

std::string NvmlSampler::ErrorText(NvmlReturn rc) const {
  std::string text = "NVML error " + std::to_string(rc);
  if (api_.error_string != nullptr) {
    const char* s = api_.error_string(rc);
    if (s != nullptr) text += " (" + std::string(s) + ")";
  }
  return text;
}

std::string NvmlSampler::ReadString(NvmlReturn (*fn)(char*, unsigned int)) const {
  if (fn == nullptr) return "unknown";
  char buffer[kStringBufferBytes] = {};
  if (fn(buffer, kStringBufferBytes) != kNvmlSuccess) return "unknown";
  buffer[kStringBufferBytes - 1] = '\0';
  return buffer;
}

void NvmlSampler::SetDevices(std::vector<int> nvml_indices) {
  if (state_ != "ok") return;
  options_.gpu_devices = nvml_indices;
  devices_.clear();
  missing_devices_.clear();
  if (nvml_indices.empty()) {
    for (unsigned int i = 0; i < device_count_; ++i) nvml_indices.push_back(static_cast<int>(i));
  }
  for (int index : nvml_indices) {
    Device device;
    device.index = index;
    if (index < 0 || static_cast<unsigned int>(index) >= device_count_ ||
        api_.device_get_handle_by_index(static_cast<unsigned int>(index), &device.handle) != kNvmlSuccess) {
      missing_devices_.push_back(index);
      continue;
    }
    const std::string prefix = record::series::GpuSeriesName(index, "");
    // A reading whose entry point the library lacks is unsupported from the start, so Describe()
    // lists it like one the driver refused.
    const bool available[kReadingCount] = {api_.device_get_utilization_rates != nullptr,
                                           api_.device_get_utilization_rates != nullptr,
                                           api_.device_get_memory_info != nullptr,
                                           api_.device_get_power_usage != nullptr,
                                           api_.device_get_total_energy_consumption != nullptr,
                                           api_.device_get_clock_info != nullptr,
                                           api_.device_get_clock_info != nullptr,
                                           api_.device_get_temperature != nullptr,
                                           api_.device_get_pcie_throughput != nullptr,
                                           api_.device_get_pcie_throughput != nullptr,
                                           api_.device_get_clocks_event_reasons != nullptr,
                                           api_.device_get_compute_running_processes != nullptr};
    for (int r = 0; r < kReadingCount; ++r) {
      device.series[r] = prefix + ReadingName(r);
      device.supported[r] = available[r];
    }
    if (options_.nvml_field_values == SamplerOptions::FieldValues::kAuto &&
        api_.device_get_field_values != nullptr) {
      for (const auto& f : kFieldReadings) device.by_field[static_cast<int>(f.reading)] = true;
    }
    nlohmann::json& facts = device.facts;
    facts["index"] = index;
    char buffer[kStringBufferBytes] = {};
    if (api_.device_get_name != nullptr &&
        api_.device_get_name(device.handle, buffer, kStringBufferBytes) == kNvmlSuccess) {
      buffer[kStringBufferBytes - 1] = '\0';
      facts["name"] = buffer;
    }
    if (api_.device_get_uuid != nullptr &&
        api_.device_get_uuid(device.handle, buffer, kStringBufferBytes) == kNvmlSuccess) {
      buffer[kStringBufferBytes - 1] = '\0';
      facts["uuid"] = buffer;
    }
    unsigned int limit_mw = 0;
    if (api_.device_get_enforced_power_limit != nullptr &&
        api_.device_get_enforced_power_limit(device.handle, &limit_mw) == kNvmlSuccess) {
      facts["power_limit_w"] = limit_mw / 1000.0;
    }
    NvmlMemory memory{};
    if (api_.device_get_memory_info != nullptr &&
        api_.device_get_memory_info(device.handle, &memory) == kNvmlSuccess) {
      facts["memory_total_bytes"] = memory.total;
    }
    unsigned long long supported_events = 0;
    if (api_.device_get_supported_clocks_event_reasons != nullptr &&
        api_.device_get_supported_clocks_event_reasons(device.handle, &supported_events) == kNvmlSuccess) {
      facts["supported_clocks_event_reasons"] = supported_events;
    }
    devices_.push_back(std::move(device));
  }
}

bool NvmlSampler::Ok(Device& device, Reading reading, NvmlReturn rc) {
  if (rc == kNvmlSuccess) return true;
  // These mean "never on this device or driver": stop asking. Any other error (a lost GPU, a
  // timeout) skips this round only.
  if (NeverWorks(rc)) device.supported[static_cast<int>(reading)] = false;
  return false;
}

void NvmlSampler::FetchFields(Device& d, const bool wanted[kReadingCount],
                              std::optional<double> values[kReadingCount]) {
  NvmlFieldValue fields[std::size(kFieldReadings)] = {};
  int readings[std::size(kFieldReadings)] = {};
  int n = 0;
  for (const auto& f : kFieldReadings) {
    const int r = static_cast<int>(f.reading);
    if (!wanted[r] || !d.by_field[r] || !d.supported[r]) continue;
    fields[n].field_id = f.field_id;
    readings[n++] = r;
  }
  if (n == 0) return;
  const NvmlReturn rc = api_.device_get_field_values(d.handle, n, fields);
  if (rc != kNvmlSuccess) {
    // The whole call refused: every field falls back to its single call, for good if the call
    // itself will never work here.
    if (FieldNeverWorks(rc)) std::fill(std::begin(d.by_field), std::end(d.by_field), false);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const int r = readings[i];
    std::optional<double> value;
    if (fields[i].nvml_return == kNvmlSuccess) value = FieldValueNumber(fields[i]);
    if (!value) {
      // An unknown value type will not change either; a transient error retries next round.
      if (fields[i].nvml_return == kNvmlSuccess || FieldNeverWorks(fields[i].nvml_return))
        d.by_field[r] = false;
      continue;
    }
    values[r] = value;
  }
}

void NvmlSampler::Sample(std::int64_t t_ns, std::vector<SeriesPoint>& out) {
  if (state_ != "ok") return;
  auto every = [this](int n) { return n <= 1 || rounds_ % static_cast<std::uint64_t>(n) == 0; };
  const bool pcie_round = options_.pcie_every_n_samples > 0 && every(options_.pcie_every_n_samples);
  const bool energy_round = every(options_.energy_every_n_samples);
  const bool slow_round = every(options_.slow_every_n_samples);
  ++rounds_;
  auto emit = [&](const Device& d, Reading r, double value) {
    out.push_back({t_ns, d.series[static_cast<int>(r)], value});
  };
  for (Device& d : devices_) {
    // What this round reads: a reading of another round's cadence, or unsupported, is skipped.
    bool wanted[kReadingCount] = {};
    for (Reading r : {Reading::kSmUtil, Reading::kMemUsed, Reading::kPower})
      wanted[static_cast<int>(r)] = true;
    wanted[static_cast<int>(Reading::kEnergy)] = energy_round;
    for (Reading r : {Reading::kSmClock, Reading::kMemClock, Reading::kTemp, Reading::kEvents})
      wanted[static_cast<int>(r)] = slow_round;
    wanted[static_cast<int>(Reading::kProcMem)] = slow_round && target_ > 0;
    wanted[static_cast<int>(Reading::kPcieTx)] = wanted[static_cast<int>(Reading::kPcieRx)] = pcie_round;
    auto wants = [&](Reading r) { return wanted[static_cast<int>(r)] && d.supported[static_cast<int>(r)]; };

    std::optional<double> batched[kReadingCount];
    if (api_.device_get_field_values != nullptr) FetchFields(d, wanted, batched);
    // A field-value reading in the single call's unit; false when it must be read by its call.
    auto from_field = [&](Reading r, double divisor) {
      const auto& v = batched[static_cast<int>(r)];
      if (v) emit(d, r, *v / divisor);
      return v.has_value();
    };

    if (wants(Reading::kSmUtil)) {
      NvmlUtilization u{};
      if (Ok(d, Reading::kSmUtil, api_.device_get_utilization_rates(d.handle, &u))) {
        emit(d, Reading::kSmUtil, u.gpu);
        emit(d, Reading::kMemUtil, u.memory);
      }
    }
    if (wants(Reading::kMemUsed)) {
      NvmlMemory m{};
      if (Ok(d, Reading::kMemUsed, api_.device_get_memory_info(d.handle, &m))) {
        emit(d, Reading::kMemUsed, static_cast<double>(m.used));
      }
    }
    if (wants(Reading::kPower) && !from_field(Reading::kPower, 1000.0)) {
      unsigned int mw = 0;
      if (Ok(d, Reading::kPower, api_.device_get_power_usage(d.handle, &mw)))
        emit(d, Reading::kPower, mw / 1000.0);
    }
    if (wants(Reading::kEnergy) && !from_field(Reading::kEnergy, 1000.0)) {
      unsigned long long mj = 0;
      if (Ok(d, Reading::kEnergy, api_.device_get_total_energy_consumption(d.handle, &mj))) {
        emit(d, Reading::kEnergy, static_cast<double>(mj) / 1000.0);
      }
    }
    for (auto [reading, type] :
         {std::pair{Reading::kSmClock, kNvmlClockSm}, std::pair{Reading::kMemClock, kNvmlClockMem}}) {
      unsigned int mhz = 0;
      if (wants(reading) && Ok(d, reading, api_.device_get_clock_info(d.handle, type, &mhz)))
        emit(d, reading, mhz);
    }
    if (wants(Reading::kTemp)) {
      unsigned int c = 0;
      if (Ok(d, Reading::kTemp, api_.device_get_temperature(d.handle, kNvmlTemperatureGpu, &c)))
        emit(d, Reading::kTemp, c);
    }
    // NVML reports KB/s; taken as KiB like its other byte figures.
    for (auto [reading, counter] :
         {std::pair{Reading::kPcieTx, kNvmlPcieTxBytes}, std::pair{Reading::kPcieRx, kNvmlPcieRxBytes}}) {
      unsigned int kb_per_s = 0;
      if (wants(reading) && Ok(d, reading, api_.device_get_pcie_throughput(d.handle, counter, &kb_per_s))) {
        emit(d, reading, kb_per_s * 1024.0);
      }
    }
    if (wants(Reading::kEvents)) {
      unsigned long long mask = 0;
      if (Ok(d, Reading::kEvents, api_.device_get_clocks_event_reasons(d.handle, &mask))) {
        emit(d, Reading::kEvents, static_cast<double>(mask));
      }
    }
    if (wants(Reading::kProcMem)) SampleProcesses(d, t_ns, out);
  }
}

std::optional<unsigned int> NvmlSampler::FetchProcesses(Device& d) {
  unsigned int count = 0;
  NvmlReturn rc = api_.device_get_compute_running_processes(d.handle, &count, nullptr);
  if (rc == kNvmlSuccess) return 0u;  // no compute process on this GPU
  if (rc != kNvmlErrorInsufficientSize) {
    Ok(d, Reading::kProcMem, rc);
    return std::nullopt;
  }
  for (int attempt = 0; attempt < kProcessFetchAttempts; ++attempt) {
    if (process_buffer_.size() < count + kProcessSlack) process_buffer_.resize(count + kProcessSlack);
    count = static_cast<unsigned int>(process_buffer_.size());
    rc = api_.device_get_compute_running_processes(d.handle, &count, process_buffer_.data());
    if (rc != kNvmlErrorInsufficientSize) break;
  }
  if (!Ok(d, Reading::kProcMem, rc)) return std::nullopt;
  return std::min(count, static_cast<unsigned int>(process_buffer_.size()));
}

void NvmlSampler::SampleProcesses(Device& d, std::int64_t t_ns, std::vector<SeriesPoint>& out) {
  const std::string other_series = record::series::GpuSeriesName(d.index, record::series::kOtherProcs);
  const std::optional<unsigned int> count = FetchProcesses(d);
  if (!count) return;
  if (*count == 0) {
    out.push_back({t_ns, other_series, 0.0});
    return;
  }
  double bytes = 0;
  bool known = false;
  int others = 0;
  for (unsigned int i = 0; i < *count; ++i) {
    const NvmlProcessInfo& p = process_buffer_[i];
    const bool in_tree = procfs_ && IsInTree(*procfs_, static_cast<pid_t>(p.pid), target_);
    if (!in_tree) ++others;  // another process computing on the cell's GPU (issue 17's contention)
    // Without permission NVML reports the process with NVML_VALUE_NOT_AVAILABLE: unknown, not 0.
    if (p.used_gpu_memory == kNvmlValueNotAvailable || !in_tree) continue;
    known = true;
    bytes += static_cast<double>(p.used_gpu_memory);
  }
  if (known) out.push_back({t_ns, d.series[static_cast<int>(Reading::kProcMem)], bytes});
  if (procfs_) out.push_back({t_ns, other_series, static_cast<double>(others)});
}

std::vector<GpuProcess> NvmlSampler::GpuProcesses() {
  std::vector<GpuProcess> out;
  if (state_ != "ok" || api_.device_get_compute_running_processes == nullptr) return out;
  for (Device& d : devices_) {
    if (!d.supported[static_cast<int>(Reading::kProcMem)]) continue;
    const std::optional<unsigned int> count = FetchProcesses(d);
    if (!count) continue;
    for (unsigned int i = 0; i < *count; ++i) {
      const NvmlProcessInfo& p = process_buffer_[i];
      GpuProcess g;
      g.nvml_index = d.index;
      g.gpu_uuid = d.facts.value("uuid", std::string());
      g.pid = p.pid;
      if (p.used_gpu_memory != kNvmlValueNotAvailable) g.used_bytes = p.used_gpu_memory;
      if (procfs_) {
        if (auto comm = procfs_->Read("/proc/" + std::to_string(p.pid) + "/comm"); comm.ok())
          g.name = Trim(*comm);
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

nlohmann::json NvmlSampler::Describe() const {
  nlohmann::json facts = nlohmann::json::object();
  if (!initialized_) return facts;
  facts["driver_version"] = ReadString(api_.system_get_driver_version);
  facts["nvml_version"] = ReadString(api_.system_get_nvml_version);
  facts["device_count"] = device_count_;
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json sampled = nlohmann::json::array();
  nlohmann::json unsupported = nlohmann::json::object();
  nlohmann::json field_values = nlohmann::json::object();
  for (const Device& d : devices_) {
    nlohmann::json device = d.facts;
    // Read now, not at construction: a GPU already thermally limited before a cell is a warning
    // for the fingerprint (FingerprintWarnings).
    unsigned long long reasons = 0;
    if (api_.device_get_clocks_event_reasons != nullptr &&
        api_.device_get_clocks_event_reasons(d.handle, &reasons) == kNvmlSuccess) {
      device["clocks_event_reasons"] = reasons;
    }
    devices.push_back(device);
    sampled.push_back(d.index);
    nlohmann::json missing = nlohmann::json::array();
    for (int r = 0; r < kReadingCount; ++r) {
      if (!d.supported[r]) missing.push_back(ReadingName(r));
    }
    if (!missing.empty()) unsupported["gpu" + std::to_string(d.index)] = missing;
    nlohmann::json& batched = field_values["gpu" + std::to_string(d.index)] = nlohmann::json::array();
    for (const auto& f : kFieldReadings) {
      const int r = static_cast<int>(f.reading);
      if (d.by_field[r] && d.supported[r]) batched.push_back(ReadingName(r));
    }
  }
  facts["devices"] = devices;
  facts["sampled"] = sampled;
  facts["unsupported"] = unsupported;
  if (!missing_devices_.empty()) facts["missing_devices"] = missing_devices_;
  facts["pcie_every_n_samples"] = options_.pcie_every_n_samples;
  facts["energy_every_n_samples"] = options_.energy_every_n_samples;
  facts["slow_every_n_samples"] = options_.slow_every_n_samples;
  const bool field_values_on = options_.nvml_field_values == SamplerOptions::FieldValues::kAuto;
  facts["nvml_field_values"] = field_values_on ? "auto" : "off";
  // Which readings one nvmlDeviceGetFieldValues call serves now: none where the driver lacks the
  // function or refused every field.
  if (field_values_on) facts["field_values"] = field_values;
  return facts;
}

std::unique_ptr<Sampler> MakeNvmlSampler(std::shared_ptr<const ProcFs> procfs,
                                         const SamplerOptions& options) {
  auto lib = LoadNvml();
  if (!lib.ok()) return NvmlSampler::Unsupported(lib.error().message);
  return std::make_unique<NvmlSampler>(lib->api, lib->library, std::move(procfs), options);
}

}  // namespace dlbench::monitor
