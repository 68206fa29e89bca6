#include "tfrecord/example.h"

#include <fmt/format.h>

#include <climits>

#include "tensorflow/core/example/example.pb.h"

namespace dlbench::tfrecord {
namespace {

Error Bad(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

const char* KindName(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      return "a bytes_list";
    case tensorflow::Feature::kFloatList:
      return "a float_list";
    case tensorflow::Feature::kInt64List:
      return "an int64_list";
    case tensorflow::Feature::KIND_NOT_SET:
      break;
  }
  return "empty";
}

}  // namespace

Result<ImageExample> ParseImageExample(std::string_view serialized, const ImageKeys& keys) {
  if (serialized.size() > static_cast<std::size_t>(INT_MAX)) {
    return Bad(
        fmt::format("a tf.train.Example of {} bytes is larger than protobuf parses", serialized.size()));
  }
  tensorflow::Example example;
  if (!example.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return Bad(fmt::format("not a tf.train.Example ({} bytes that do not parse as one)", serialized.size()));
  }
  auto& features = *example.mutable_features()->mutable_feature();
  auto image = features.find(keys.image);
  if (image == features.end()) {
    return Bad(fmt::format("the tf.train.Example has no feature '{}' (the image)", keys.image));
  }
  if (image->second.kind_case() != tensorflow::Feature::kBytesList) {
    return Bad(fmt::format("feature '{}' is {}, not a bytes_list", keys.image, KindName(image->second)));
  }
  auto* values = image->second.mutable_bytes_list()->mutable_value();
  if (values->size() != 1) {
    return Bad(fmt::format("feature '{}' holds {} values, not one image", keys.image, values->size()));
  }
  auto label = features.find(keys.label);
  if (label == features.end()) {
    return Bad(fmt::format("the tf.train.Example has no feature '{}' (the class)", keys.label));
  }
  if (label->second.kind_case() != tensorflow::Feature::kInt64List) {
    return Bad(fmt::format("feature '{}' is {}, not an int64_list", keys.label, KindName(label->second)));
  }
  if (label->second.int64_list().value_size() != 1) {
    return Bad(fmt::format("feature '{}' holds {} values, not one class", keys.label,
                           label->second.int64_list().value_size()));
  }
  ImageExample out;
  out.encoded.swap(*values->Mutable(0));  // the image's bytes leave the message without a copy
  out.label = label->second.int64_list().value(0);
  return out;
}

std::string EncodeImageExample(std::string_view encoded, std::int64_t label, const ImageKeys& keys,
                               std::string_view format) {
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  features[keys.image].mutable_bytes_list()->add_value(std::string(encoded));
  features[keys.label].mutable_int64_list()->add_value(label);
  if (!format.empty()) features["image/format"].mutable_bytes_list()->add_value(std::string(format));
  return example.SerializeAsString();
}

}  // namespace dlbench::tfrecord
