// Generated image data sets: ImageFolder trees of JPEGs and TFRecord files of tf.train.Example,
// written with libjpeg-turbo's encoder and the project's TFRecord writer. Tests make their data
// with these at run time (nothing is downloaded), benchmarks and the GPU script
// (dlbench-make-images) too. No LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "data/jpeg.h"

namespace dlbench::torchrunner::data {

using Rgb = std::array<std::uint8_t, 3>;

// The colour of quadrant q (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) of class
// `label`'s images: distinct per class and quadrant, each channel in [40, 215], away from clipping.
Rgb QuadrantColour(int label, int quadrant);

struct DatasetSpec {
  int classes = 2;
  int per_class = 4;
  int width = 64;
  int height = 48;
  int quality = 90;
  bool quadrants = true;  // four colours per image; false: one colour (quadrant 0's) all over
  int texture = 0;        // amplitude of seeded per-pixel noise added to the colours (0: none)
  std::uint64_t seed = 1;
};

// Image `index` of class `label` as the spec says.
RgbImage MakeImage(const DatasetSpec& spec, int label, int index);

// ROOT/class_CCC/img_IIIII.jpg for every class and index; ROOT is created. Refuses to write
// through anything that exists and is not a regular file or folder.
Status WriteJpegFolder(const std::string& root, const DatasetSpec& spec);

// `files` files PREFIX-0000K-of-0000N of tf.train.Example (image/encoded, image/class/label =
// class + label_offset, image/format), classes interleaved; the folder of PREFIX must exist.
Status WriteTfRecords(const std::string& prefix, int files, const DatasetSpec& spec, int label_offset = 0);

}  // namespace dlbench::torchrunner::data
