// Where encoded samples come from: a folder of JPEGs in ImageFolder layout, or TFRecord files of
// tf.train.Example. A source lists its samples once when it is opened (so an empty folder or a
// broken file is an error before the cell's READY) and reads one sample's bytes on request, from
// any thread. No LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::torchrunner::data {

// Files larger than this are reported as corrupt input rather than read.
inline constexpr std::int64_t kMaxSampleBytes = std::int64_t{64} << 20;
// Bounds on what a scan accepts, so a wrong path (/) fails clearly instead of listing a disk.
inline constexpr std::int64_t kMaxSamples = 50'000'000;
inline constexpr int kMaxFolderDepth = 64;
inline constexpr std::int64_t kMaxTfRecordFiles = 100'000;

// What opening a source found wrong but could skip (skip_corrupt): one entry per problem.
struct SourceProblem {
  std::string message;  // names the file and, in a TFRecord, the byte offset
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::int64_t size() const = 0;
  // Class count when the source knows it (the folder's sub-folders), else -1 (TFRecords hold
  // labels, not their range).
  virtual std::int64_t num_classes() const = 0;
  // Sample `index`'s encoded image into `bytes` (its capacity reused) and its label. Thread-safe.
  // kInvalidInput for a corrupt input, with a message that names the file (and the byte offset in
  // a TFRecord); kIo when the OS refuses the read.
  virtual Status Read(std::int64_t index, std::string& bytes, std::int64_t& label) const = 0;
  // "PATH" or "PATH, record at byte N": where sample `index` lives, for messages about its pixels.
  virtual std::string Where(std::int64_t index) const = 0;
  // Problems found while opening that were skipped (only with skip_corrupt).
  virtual const std::vector<SourceProblem>& open_problems() const = 0;
  // For the effective cell: counts of files, classes, samples and what was ignored.
  virtual nlohmann::json Describe() const = 0;
};

// torchvision.datasets.ImageFolder's layout: the sub-folders of `root` are the classes, sorted by
// name, label = position; each class's files are found recursively (symlinked folders followed,
// loops cut), sorted by folder then name. Files ending .jpg or .jpeg (any case) are samples;
// others are counted as ignored. kInvalidInput when root is not a folder, holds no class folder,
// or a class folder holds no JPEG (ImageFolder refuses those too); the message names the path.
Result<std::unique_ptr<SampleSource>> OpenJpegFolder(const std::string& root);

// The files matching `glob` (sorted), each indexed by its record headers. A file whose framing
// breaks is an error naming the file and offset, unless `skip_corrupt`, when its intact records
// are kept and the problem is listed. Each Read parses the Example (keys as given) and checks the
// data CRC. kInvalidInput when nothing matches or there is no record at all.
Result<std::unique_ptr<SampleSource>> OpenTfRecords(const std::string& glob, bool skip_corrupt,
                                                    const tfrecord::ImageKeys& keys = {});

}  // namespace dlbench::torchrunner::data
