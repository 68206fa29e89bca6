// Detection outputs of two cells matched box by box (docs/precisions.md "Detection boxes"): the
// reference's boxes (fp32, or the CPU cell's) against a candidate's (another precision, or the GPU
// cell's), each image on its own.
//
// The convention is the greedy one of detection metrics (COCO's, with the reference in the place
// of the ground truth): within an image, reference boxes in descending score order (ties: the
// order they were recorded), each takes the still-unmatched candidate box of the same class with
// the highest IoU (ties: the first recorded); it counts as matched when that IoU is at least the
// threshold, and only then is the candidate used up.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::report {

// The IoU at which a box counts as matched: the and PASCAL VOC's 0.5.
inline constexpr double kBoxMatchIou = 0.5;

struct Detection {
  std::int64_t image = 0;
  double x1 = 0.0, y1 = 0.0, x2 = 0.0, y2 = 0.0;
  double score = 0.0;
  std::int64_t label = 0;
};

// Intersection over union of two boxes (x1, y1, x2, y2; a side with x2 < x1 counts as empty).
// 0 when the union is empty.
double BoxIou(const Detection& a, const Detection& b);

struct BoxMatch {
  std::int64_t reference_boxes = 0;
  std::int64_t candidate_boxes = 0;
  std::int64_t matched = 0;           // reference boxes matched at IoU >= the threshold
  std::optional<double> match_share;  // matched / reference_boxes; absent with no reference box
  std::optional<double> mean_iou;     // over the matched pairs; absent with none
};

BoxMatch MatchBoxes(const std::vector<Detection>& reference, const std::vector<Detection>& candidate,
                    double iou_threshold = kBoxMatchIou);

// Reads info.eval's "detections" (rows [image, x1, y1, x2, y2, score, label], as
// runners/torch/reference_eval.h records them). nullopt, with `error` set, when a row is not seven
// finite numbers.
std::optional<std::vector<Detection>> ParseDetections(const nlohmann::json& rows, std::string& error);

}  // namespace dlbench::report
