#include "orchestrator/converge_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::orchestrator {
namespace {

std::string NotReached(const record::CellRecord& rec) {
  const auto info_it = rec.extras.find("info");
  const nlohmann::json* converge = nullptr;
  if (info_it != rec.extras.end() && info_it->is_object()) {
    auto c = info_it->find("converge");
    if (c != info_it->end() && c->is_object()) converge = &*c;
  }
  if (converge == nullptr) return "not_reached: the runner reported no convergence result";
  const std::string target = converge->value("target", std::string("the target"));
  const std::string end = converge->value("end", std::string("an unknown reason"));
  std::string text = fmt::format("not_reached: {} not reached; training ended at {}", target, end);
  if (const auto epochs = record::MetricValue(rec, record::metric::kTrainEpochs))
    text += fmt::format(" after {:.2f} epochs", *epochs);
  if (const auto best = record::MetricValue(rec, record::metric::kBestEvalAccuracy)) {
    text += fmt::format("; best accuracy {:.4f}", *best);
    if (auto step = converge->find("best_accuracy_step");
        step != converge->end() && step->is_number_integer())
      text += fmt::format(" at step {}", step->get<std::int64_t>());
  }
  if (const auto loss = record::MetricValue(rec, record::metric::kBestEvalLoss))
    text += fmt::format(", best loss {:.4f}", *loss);
  return text;
}

}  // namespace

void ApplyConvergeVerdict(record::CellRecord& rec) {
  std::vector<std::string> reasons;
  const auto reached = record::MetricValue(rec, record::metric::kTargetReached);
  if (!reached || *reached != 1.0) reasons.push_back(NotReached(rec));
  for (const auto& r : rec.verdict_reasons) {  // from the monitor analysis
    if (r.is_string()) reasons.push_back(r.get<std::string>());
  }
  rec.verdict_reasons = reasons;
  rec.verdict = record::HeadlineVerdict(reasons);
}

void AbsorbConvergeCurves(record::CellRecord& rec) {
  auto info = rec.extras.find("info");
  if (info == rec.extras.end() || !info->is_object()) return;
  auto converge = info->find("converge");
  if (converge == info->end() || !converge->is_object()) return;
  auto curves = converge->find("curves");
  if (curves == converge->end()) return;
  nlohmann::json points = nlohmann::json::object();
  if (curves->is_object()) {
    for (const auto& [name, curve] : curves->items()) {
      const auto& known = record::series::kConvergeCurves;
      if (std::find(std::begin(known), std::end(known), name) == std::end(known)) {
        rec.extras["warnings"].push_back(
            fmt::format("dropped the runner's unknown converge curve '{}'", name));
        continue;
      }
      const nlohmann::json* t = curve.is_object() && curve.contains("t_ns") ? &curve["t_ns"] : nullptr;
      const nlohmann::json* v = curve.is_object() && curve.contains("value") ? &curve["value"] : nullptr;
      bool ok = t != nullptr && v != nullptr && t->is_array() && v->is_array() && t->size() == v->size();
      for (std::size_t i = 0; ok && i < t->size(); ++i)
        ok = (*t)[i].is_number_integer() && (*v)[i].is_number();
      if (!ok) {
        rec.extras["warnings"].push_back(fmt::format(
            "dropped the runner's converge curve '{}': t_ns and value must be arrays of integers and "
            "numbers of one length",
            name));
        continue;
      }
      for (std::size_t i = 0; i < t->size(); ++i)
        rec.series.push_back({(*t)[i].get<std::int64_t>(), name, (*v)[i].get<double>()});
      points[name] = {{"points", t->size()}, {"per_point", curve.value("per_point", 1)}};
    }
  }
  converge->erase("curves");
  (*converge)["curve_points"] = points;
}

}  // namespace dlbench::orchestrator
