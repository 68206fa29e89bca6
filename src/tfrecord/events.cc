#include "tfrecord/events.h"

#include <fmt/format.h>

#include "tensorboard/compat/proto/event.pb.h"
#include "tfrecord/record.h"

namespace dlbench::tfrecord {

Status WriteScalarEventFile(const std::string& path, double start_wall_time,
                            const std::vector<ScalarEvent>& events) {
  auto writer = RecordWriter::Create(path);
  if (!writer.ok()) return writer.error();
  tensorboard::Event event;
  event.set_wall_time(start_wall_time);
  event.set_file_version(kEventFileVersion);
  event.mutable_source_metadata()->set_writer("dlbench");
  std::string bytes;
  event.SerializeToString(&bytes);
  DLBENCH_RETURN_IF_ERROR(writer->Append(bytes));
  for (const ScalarEvent& e : events) {
    event.Clear();
    event.set_wall_time(e.wall_time);
    event.set_step(e.step);
    tensorboard::Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(e.tag);
    value->set_simple_value(e.value);
    event.SerializeToString(&bytes);
    DLBENCH_RETURN_IF_ERROR(writer->Append(bytes));
  }
  return writer->Close();
}

Result<EventFile> ReadEventFile(const std::string& path) {
  auto file = RecordFile::Open(path);
  if (!file.ok()) return file.error();
  auto spans = file->Index();
  if (!spans.ok()) return spans.error();
  EventFile out;
  std::string data;
  tensorboard::Event event;
  for (const RecordSpan& span : *spans) {
    DLBENCH_RETURN_IF_ERROR(file->ReadRecord(span, data));
    if (!event.ParseFromString(data)) {
      return MakeError(
          ErrorKind::kInvalidInput,
          fmt::format("{}: the record at byte {} is not a tensorboard.Event", path, span.offset));
    }
    if (event.has_file_version()) {
      if (out.file_version.empty()) out.file_version = event.file_version();
      continue;
    }
    bool scalar = false;
    if (event.has_summary()) {
      for (const auto& v : event.summary().value()) {
        if (!v.has_simple_value()) continue;
        out.scalars.push_back({v.tag(), event.step(), event.wall_time(), v.simple_value()});
        scalar = true;
      }
    }
    if (!scalar) ++out.other_events;
  }
  return out;
}

}  // namespace dlbench::tfrecord
