// tf.train.Example records holding an encoded image and its class, decoded with Debian's
// protobuf from TensorFlow's schema (proto/tensorflow/core/example/*.proto). This header has no
// protobuf in it, so code that includes LibTorch's headers (which may carry another protobuf's)
// can use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace dlbench::tfrecord {

// Feature names, with the ImageNet conventions of tensorflow/models' build_imagenet_data.py as
// defaults: the JPEG bytes and a 1-based int64 class.
struct ImageKeys {
  std::string image = "image/encoded";
  std::string label = "image/class/label";
};

struct ImageExample {
  std::string encoded;     // the image file's bytes, as stored
  std::int64_t label = 0;  // as stored (no offset applied)
};

// Parses one serialized Example. kInvalidInput, with a message naming the key, when the bytes are
// not an Example, when a key is missing, has the wrong kind (the image must be a bytes_list, the
// label an int64_list) or holds other than exactly one value. Callers prefix the record's place.
Result<ImageExample> ParseImageExample(std::string_view serialized, const ImageKeys& keys = {});

// A serialized Example with the image (a bytes_list of one value), the label (an int64_list of
// one value) and, when not empty, "image/format" (a bytes_list), as TensorFlow writes them.
std::string EncodeImageExample(std::string_view encoded, std::int64_t label, const ImageKeys& keys = {},
                               std::string_view format = "JPEG");

}  // namespace dlbench::tfrecord
