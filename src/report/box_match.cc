#include "report/box_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace dlbench::report {

double BoxIou(const Detection& a, const Detection& b) {
  auto area = [](const Detection& d) { return std::max(0.0, d.x2 - d.x1) * std::max(0.0, d.y2 - d.y1); };
  const double iw = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double ih = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double inter = iw * ih;
  const double uni = area(a) + area(b) - inter;
  return uni > 0.0 ? inter / uni : 0.0;
}

BoxMatch MatchBoxes(const std::vector<Detection>& reference, const std::vector<Detection>& candidate,
                    double iou_threshold) {
  BoxMatch m;
  m.reference_boxes = static_cast<std::int64_t>(reference.size());
  m.candidate_boxes = static_cast<std::int64_t>(candidate.size());
  // Candidates per image, in recorded order.
  std::map<std::int64_t, std::vector<std::size_t>> candidates_of;
  for (std::size_t i = 0; i < candidate.size(); ++i) candidates_of[candidate[i].image].push_back(i);
  std::vector<bool> used(candidate.size(), false);
  std::vector<std::size_t> order(reference.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Per image, by descending score; stable, so equal scores keep the recorded order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (reference[a].image != reference[b].image) return reference[a].image < reference[b].image;
    return reference[a].score > reference[b].score;
  });
  double iou_sum = 0.0;
  for (const std::size_t r : order) {
    const Detection& ref = reference[r];
    auto it = candidates_of.find(ref.image);
    if (it == candidates_of.end()) continue;
    double best_iou = -1.0;
    std::size_t best = 0;
    for (const std::size_t c : it->second) {
      if (used[c] || candidate[c].label != ref.label) continue;
      const double iou = BoxIou(ref, candidate[c]);
      if (iou > best_iou) {
        best_iou = iou;
        best = c;
      }
    }
    if (best_iou >= iou_threshold) {
      used[best] = true;
      ++m.matched;
      iou_sum += best_iou;
    }
  }
  if (m.reference_boxes > 0)
    m.match_share = static_cast<double>(m.matched) / static_cast<double>(m.reference_boxes);
  if (m.matched > 0) m.mean_iou = iou_sum / static_cast<double>(m.matched);
  return m;
}

std::optional<std::vector<Detection>> ParseDetections(const nlohmann::json& rows, std::string& error) {
  if (!rows.is_array()) {
    error = "detections is not an array";
    return std::nullopt;
  }
  std::vector<Detection> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    bool ok = row.is_array() && row.size() == 7;
    for (std::size_t k = 0; ok && k < 7; ++k) ok = row[k].is_number() && std::isfinite(row[k].get<double>());
    if (!ok) {
      error = fmt::format("detection {} is not seven finite numbers", i);
      return std::nullopt;
    }
    Detection d;
    d.image = row[0].get<std::int64_t>();
    d.x1 = row[1].get<double>();
    d.y1 = row[2].get<double>();
    d.x2 = row[3].get<double>();
    d.y2 = row[4].get<double>();
    d.score = row[5].get<double>();
    d.label = row[6].get<std::int64_t>();
    out.push_back(d);
  }
  return out;
}

}  // namespace dlbench::report
