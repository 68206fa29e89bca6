// TensorBoard event files of scalars (docs/convergence.md): TFRecord framing (record.h) around
// one tensorboard.Event per record (proto/tensorboard/compat/proto/event.proto), the first with
// file_version "brain.Event:2", then one Event per scalar with a Summary of one simple_value, as
// TensorFlow's and PyTorch's summary writers write them. No protobuf in this header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace dlbench::tfrecord {

inline constexpr char kEventFileVersion[] = "brain.Event:2";

struct ScalarEvent {
  std::string tag;        // "eval/accuracy"
  std::int64_t step = 0;  // the global step TensorBoard plots against
  double wall_time = 0;   // seconds since the Unix epoch
  float value = 0;        // TensorBoard's scalars are float32
  bool operator==(const ScalarEvent& o) const {
    return tag == o.tag && step == o.step && wall_time == o.wall_time && value == o.value;
  }
};

// Writes `events` in order to a new event file at `path` (RecordWriter's rules: never replaces
// what is not a regular file), its first event the file version at `start_wall_time`.
Status WriteScalarEventFile(const std::string& path, double start_wall_time,
                            const std::vector<ScalarEvent>& events);

struct EventFile {
  std::string file_version;  // of the first event that has one
  std::vector<ScalarEvent> scalars;
  std::int64_t other_events = 0;  // events that hold neither (TensorBoard's other plugins)
};

// Reads an event file back: both CRCs of every record verified, every record parsed as an Event,
// each Summary value with a simple_value a scalar. kInvalidInput naming the file and the byte
// offset of a record that is not an Event.
Result<EventFile> ReadEventFile(const std::string& path);

}  // namespace dlbench::tfrecord
