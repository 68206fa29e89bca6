#include "report/precision_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "record/metrics.h"

namespace dlbench::report {
namespace {

constexpr char kPrecisionKey[] = "precision";
constexpr char kDeviceKey[] = "device";
constexpr char kThreadsKey[] = "threads";
constexpr char kCpuDevice[] = "cpu";

// The tolerances of a comparison, not a property of what is compared: a cell without them (the
// fp32 cell, when only other precisions set them) is still the reference of one with them.
constexpr char kMinAgreementKey[] = "min_agreement";
constexpr char kMaxAbsDiffKey[] = "max_abs_diff";
constexpr char kMaxMeanAbsDiffKey[] = "max_mean_abs_diff";
constexpr const char* kToleranceKeys[] = {kMinAgreementKey, kMaxAbsDiffKey, kMaxMeanAbsDiffKey};

// eval[key] when it is a number.
std::optional<double> NumberAt(const nlohmann::json& eval, const char* key) {
  const auto it = eval.find(key);
  if (it == eval.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// The parameters other than `key` and the tolerance, as one comparable string (nlohmann's object
// keys are ordered, so equal parameters dump equally).
std::string OtherParams(const record::CellRecord& cell, const char* key = kPrecisionKey,
                        const char* also = nullptr) {
  nlohmann::json p = cell.params.is_object() ? cell.params : nlohmann::json::object();
  p.erase(key);
  if (also != nullptr) p.erase(also);
  for (const char* tolerance : kToleranceKeys) p.erase(tolerance);
  return p.dump();
}

// params.device; "cpu" when absent (the registry default).
std::string DeviceOf(const record::CellRecord& cell) {
  auto it = cell.params.find(kDeviceKey);
  return it != cell.params.end() && it->is_string() ? it->get<std::string>() : kCpuDevice;
}

bool IsCuda(const std::string& device) { return device.rfind("cuda", 0) == 0; }

// Of the ok cells in `cells` other than `cell` that `fits`, the same repetition, then the lowest.
template <typename Fits>
const record::CellRecord* PreferredReference(const record::CellRecord& cell,
                                             const std::vector<record::CellRecord>& cells, Fits fits) {
  auto rank = [&](const record::CellRecord& c) {
    return std::pair(c.repetition != cell.repetition, c.repetition);
  };
  const record::CellRecord* best = nullptr;
  for (const record::CellRecord& c : cells) {
    if (&c == &cell || c.outcome != record::Outcome::kOk || !fits(c)) continue;
    if (best == nullptr || rank(c) < rank(*best)) best = &c;
  }
  return best;
}

// The box figures of two evaluations that recorded detections (SSD).
void CompareDetections(OutputAgreement& a, const nlohmann::json& eval, const nlohmann::json& reference_eval) {
  const bool mine = eval.contains("detections");
  const bool theirs = reference_eval.contains("detections");
  if (!mine && !theirs) return;
  if (!mine || !theirs) {
    a.boxes_why_none = fmt::format("only {} recorded detections", mine ? "this cell" : "the reference");
    return;
  }
  std::string error;
  auto boxes = ParseDetections(eval["detections"], error);
  auto ref_boxes = ParseDetections(reference_eval["detections"], error);
  if (!boxes || !ref_boxes) {
    a.boxes_why_none = error;
    return;
  }
  a.boxes = MatchBoxes(*ref_boxes, *boxes);
}

const nlohmann::json* EvalOf(const record::CellRecord& cell) {
  auto info = cell.extras.find("info");
  if (info == cell.extras.end() || !info->is_object()) return nullptr;
  auto eval = info->find(kEvalInfoKey);
  return eval == info->end() || !eval->is_object() ? nullptr : &*eval;
}

OutputAgreement None(std::string why) {
  OutputAgreement a;
  a.why_none = std::move(why);
  return a;
}

bool IsArrayField(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_array(); }

}  // namespace

std::string PrecisionOf(const record::CellRecord& cell) {
  auto it = cell.params.find(kPrecisionKey);
  return it != cell.params.end() && it->is_string() ? it->get<std::string>() : kReferencePrecision;
}

const record::CellRecord* FindFp32Reference(const record::CellRecord& cell,
                                            const std::vector<record::CellRecord>& cells) {
  if (PrecisionOf(cell) == kReferencePrecision) return nullptr;
  const std::string others = OtherParams(cell);
  return PreferredReference(cell, cells, [&](const record::CellRecord& c) {
    return PrecisionOf(c) == kReferencePrecision && OtherParams(c) == others;
  });
}

const record::CellRecord* FindCpuReference(const record::CellRecord& cell,
                                           const std::vector<record::CellRecord>& cells) {
  if (!IsCuda(DeviceOf(cell))) return nullptr;
  // `threads` sets the CPU's intra-op threads: a matrix gives it to its CPU cells, and it changes
  // no output (bench/gpu/precisions.sh's CPU cells have it, its CUDA cells do not).
  const std::string others = OtherParams(cell, kDeviceKey, kThreadsKey);
  return PreferredReference(cell, cells, [&](const record::CellRecord& c) {
    return DeviceOf(c) == kCpuDevice && OtherParams(c, kDeviceKey, kThreadsKey) == others;
  });
}

OutputAgreement CompareEvalOutputs(const nlohmann::json& eval, const nlohmann::json& reference_eval) {
  for (const nlohmann::json* e : {&eval, &reference_eval}) {
    if (!e->is_object() || !IsArrayField(*e, "values") || !IsArrayField(*e, "top1") ||
        !IsArrayField(*e, "output_shape")) {
      return None("an evaluation record lacks values, top1 or output_shape");
    }
  }
  for (const char* hash : {"weights_hash", "inputs_hash"}) {
    if (eval.value(hash, std::string()) != reference_eval.value(hash, std::string()) ||
        eval.value(hash, std::string()).empty()) {
      return None(fmt::format("the reference evaluated other {} ({} differs)",
                              hash[0] == 'w' ? "weights" : "inputs", hash));
    }
  }
  if (eval["output_shape"] != reference_eval["output_shape"]) {
    return None(fmt::format("output shapes differ: {} against the reference's {}",
                            eval["output_shape"].dump(), reference_eval["output_shape"].dump()));
  }
  const nlohmann::json& values = eval["values"];
  const nlohmann::json& ref_values = reference_eval["values"];
  const nlohmann::json& top1 = eval["top1"];
  const nlohmann::json& ref_top1 = reference_eval["top1"];
  if (values.size() != ref_values.size() || top1.size() != ref_top1.size() || top1.empty()) {
    return None("the evaluation records hold different numbers of values or rows");
  }
  OutputAgreement a;
  double sum = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number() || !ref_values[i].is_number()) {
      return None(fmt::format("output value {} is not finite", i));
    }
    const double d = std::abs(values[i].get<double>() - ref_values[i].get<double>());
    a.max_abs_diff = std::max(a.max_abs_diff, d);
    sum += d;
  }
  std::int64_t same = 0;
  for (std::size_t r = 0; r < top1.size(); ++r) same += top1[r] == ref_top1[r] ? 1 : 0;
  a.values = static_cast<std::int64_t>(values.size());
  a.rows = static_cast<std::int64_t>(top1.size());
  a.mean_abs_diff = a.values > 0 ? sum / static_cast<double>(a.values) : 0.0;
  a.top1_agreement = static_cast<double>(same) / static_cast<double>(a.rows);
  CompareDetections(a, eval, reference_eval);
  return a;
}

void ApplyTolerance(OutputAgreement& a, const nlohmann::json& eval, const std::string& against) {
  if (const auto fault = eval.find("fault"); fault != eval.end() && fault->is_object()) {
    a.fault = fault->value("layer", std::string());
    if (a.fault.empty()) a.fault = fault->value("why_none", std::string());
  }
  a.tolerance = NumberAt(eval, kMinAgreementKey);
  a.max_abs_diff_tolerance = NumberAt(eval, kMaxAbsDiffKey);
  a.max_mean_abs_diff_tolerance = NumberAt(eval, kMaxMeanAbsDiffKey);
  if (!a.has_figures()) return;
  std::vector<std::string> beyond;
  if (a.tolerance) {
    std::vector<std::string> below;
    if (a.top1_agreement < *a.tolerance) {
      below.push_back(fmt::format("top-1 agreement {:.4g} ({} rows)", a.top1_agreement, a.rows));
    }
    if (a.boxes && a.boxes->match_share && *a.boxes->match_share < *a.tolerance) {
      below.push_back(fmt::format("boxes matched {:.4g} ({} of {} at IoU >= {})", *a.boxes->match_share,
                                  a.boxes->matched, a.boxes->reference_boxes, kBoxMatchIou));
    }
    std::string figures;
    for (const std::string& b : below) figures += (figures.empty() ? "" : " and ") + b;
    if (!figures.empty()) {
      beyond.push_back(fmt::format("{} against {} below the tolerance {} {:.4g}", figures, against,
                                   kMinAgreementKey, *a.tolerance));
    }
  }
  // The figures are finite (CompareEvalOutputs makes none otherwise).
  if (a.max_abs_diff_tolerance && a.max_abs_diff > *a.max_abs_diff_tolerance) {
    beyond.push_back(fmt::format("max |diff| {:.4g} ({} values) against {} above the tolerance {} {:.4g}",
                                 a.max_abs_diff, a.values, against, kMaxAbsDiffKey,
                                 *a.max_abs_diff_tolerance));
  }
  if (a.max_mean_abs_diff_tolerance && a.mean_abs_diff > *a.max_mean_abs_diff_tolerance) {
    beyond.push_back(fmt::format("mean |diff| {:.4g} ({} values) against {} above the tolerance {} {:.4g}",
                                 a.mean_abs_diff, a.values, against, kMaxMeanAbsDiffKey,
                                 *a.max_mean_abs_diff_tolerance));
  }
  for (const std::string& b : beyond) a.warning += (a.warning.empty() ? "" : "; ") + b;
}

OutputAgreement CompareWithFp32(const record::CellRecord& cell,
                                const std::vector<record::CellRecord>& cells) {
  const record::CellRecord* ref = FindFp32Reference(cell, cells);
  if (ref == nullptr) return None(kNoFp32Reference);
  const nlohmann::json* eval = EvalOf(cell);
  const nlohmann::json* ref_eval = EvalOf(*ref);
  OutputAgreement a;
  if (eval == nullptr || ref_eval == nullptr) {
    a = None(
        fmt::format("no evaluation outputs in {} (infer cells record them unless reference_samples is 0)",
                    eval == nullptr ? "this cell" : "the fp32 reference"));
  } else {
    a = CompareEvalOutputs(*eval, *ref_eval);
    ApplyTolerance(a, *eval, kReferencePrecision);
  }
  a.reference = ref;
  return a;
}

std::vector<ConsistencyRow> CpuGpuConsistency(const std::vector<record::CellRecord>& cells) {
  std::vector<ConsistencyRow> out;
  for (const record::CellRecord& c : cells) {
    const nlohmann::json* eval = EvalOf(c);
    if (c.outcome != record::Outcome::kOk || !IsCuda(DeviceOf(c)) || eval == nullptr) continue;
    ConsistencyRow row;
    row.cell = &c;
    row.precision = PrecisionOf(c);
    const record::CellRecord* ref = FindCpuReference(c, cells);
    if (ref == nullptr) {
      row.agreement = None(kNoCpuReference);
    } else if (const nlohmann::json* ref_eval = EvalOf(*ref); ref_eval == nullptr) {
      row.agreement = None("no evaluation outputs in the CPU cell");
    } else {
      row.agreement = CompareEvalOutputs(*eval, *ref_eval);
      ApplyTolerance(row.agreement, *eval, "the CPU cell");
    }
    row.agreement.reference = ref;
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<PrecisionGroup> PrecisionTradeOff(const std::vector<record::CellRecord>& cells) {
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<const record::CellRecord*>> members;
  for (const record::CellRecord& c : cells) {
    if (c.outcome != record::Outcome::kOk) continue;
    // A converge cell trains to a target: its precisions are compared by time to target (show's
    // convergence table), and it records no evaluation outputs to set against fp32's.
    if (const auto sc = c.params.find("scenario"); sc != c.params.end() && *sc == "converge") continue;
    auto [it, inserted] = group_of.emplace(OtherParams(c), members.size());
    if (inserted) members.emplace_back();
    auto& group = members[it->second];
    // One cell per precision: the lowest repetition.
    auto same = std::find_if(group.begin(), group.end(),
                             [&](const record::CellRecord* m) { return PrecisionOf(*m) == PrecisionOf(c); });
    if (same == group.end()) {
      group.push_back(&c);
    } else if (c.repetition < (*same)->repetition) {
      *same = &c;
    }
  }
  std::vector<PrecisionGroup> out;
  for (const auto& group : members) {
    if (group.size() < 2) continue;
    PrecisionGroup g;
    g.label = group.front()->label;
    for (const record::CellRecord* c : group) {
      PrecisionRow row;
      row.cell = c;
      row.precision = PrecisionOf(*c);
      row.weight_bytes = record::MetricValue(*c, record::metric::kWeightBytes);
      row.step_p50_ns = record::MetricValue(*c, record::metric::kStepTimeP50Ns);
      row.step_p99_ns = record::MetricValue(*c, record::metric::kStepTimeP99Ns);
      row.samples_per_s = record::MetricValue(*c, record::metric::kSamplesPerS);
      row.energy_per_sample_j = record::MetricValue(*c, record::metric::kEnergyPerSampleJ);
      row.energy_source = "gpu";
      if (!row.energy_per_sample_j) {
        row.energy_per_sample_j = record::MetricValue(*c, record::metric::kCpuPackageEnergyPerSampleJ);
        row.energy_source = row.energy_per_sample_j ? "cpu_package" : "";
      }
      row.peak_memory_bytes = record::MetricValue(*c, record::memory::kDeviceAllocatedPeakBytes);
      if (!row.peak_memory_bytes)
        row.peak_memory_bytes = record::MetricValue(*c, record::metric::kProcRssPeakBytes);
      row.agreement =
          row.precision == kReferencePrecision ? None("the reference") : CompareWithFp32(*c, cells);
      g.rows.push_back(std::move(row));
    }
    PrecisionRow* fastest = nullptr;
    PrecisionRow* accurate = nullptr;
    for (PrecisionRow& r : g.rows) {
      if (r.samples_per_s && (fastest == nullptr || *r.samples_per_s > *fastest->samples_per_s)) fastest = &r;
      if (!r.agreement.has_figures()) continue;
      if (accurate == nullptr || r.agreement.top1_agreement > accurate->agreement.top1_agreement ||
          (r.agreement.top1_agreement == accurate->agreement.top1_agreement &&
           r.agreement.mean_abs_diff < accurate->agreement.mean_abs_diff)) {
        accurate = &r;
      }
    }
    if (fastest != nullptr) fastest->fastest = true;
    if (accurate != nullptr) accurate->most_accurate = true;
    out.push_back(std::move(g));
  }
  return out;
}

// What a comparison adds beyond the table's columns: SSD's boxes matched by IoU (or why not), a
// figure below the cell's tolerance, and the layer its runner found most likely at fault.
std::vector<std::string> AgreementNotes(const OutputAgreement& a) {
  std::vector<std::string> notes;
  if (!a.has_figures()) return notes;
  if (a.boxes) {
    const BoxMatch& b = *a.boxes;
    notes.push_back(
        b.match_share
            ? fmt::format(
                  "boxes matched (same class, IoU >= {}): {:.1f}% of {} reference boxes ({} here), mean "
                  "IoU {}",
                  kBoxMatchIou, 100.0 * *b.match_share, b.reference_boxes, b.candidate_boxes,
                  b.mean_iou ? fmt::format("{:.3f}", *b.mean_iou) : std::string("-"))
            : fmt::format("boxes matched: the reference detected no boxes ({} here)", b.candidate_boxes));
  } else if (!a.boxes_why_none.empty()) {
    notes.push_back("boxes not matched: " + a.boxes_why_none);
  }
  if (!a.warning.empty()) {
    notes.push_back("warning: " + a.warning +
                    (a.fault.empty() ? std::string() : "; layer most likely at fault: " + a.fault));
  }
  return notes;
}

}  // namespace dlbench::report
