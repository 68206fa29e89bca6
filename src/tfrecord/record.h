// TFRecord files: TensorFlow's record framing, read and written (tensorflow/core/lib/io/
// record_writer.h; ../shared/notes/libtorch-loadgen-nvml-facts.md §8.1). A file is records back
// to back, with no file header:
//
//   uint64  length                      little-endian
//   uint32  masked CRC-32C of the 8 length bytes
//   byte    data[length]
//   uint32  masked CRC-32C of data
//
// Readers verify both CRCs and that each record fits in the file; every error names the file and
// the byte offset of the record it is about ("FILE: ... at byte OFFSET"). Compressed files (GZIP
// or ZLIB streams, which TensorFlow can write) are not read here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dlbench::tfrecord {

inline constexpr std::int64_t kHeaderBytes = 12;
inline constexpr std::int64_t kFooterBytes = 4;
// The longest record a reader accepts unless told otherwise: a length field beyond it is an
// error rather than an allocation of whatever a corrupt file says.
inline constexpr std::int64_t kDefaultMaxRecordBytes = std::int64_t{256} << 20;

// Where one record is in its file.
struct RecordSpan {
  std::int64_t offset = 0;  // of the record's first header byte
  std::int64_t length = 0;  // data bytes
  bool operator==(const RecordSpan& o) const { return offset == o.offset && length == o.length; }
};

// The 12 + length + 4 bytes of one record holding `data`.
std::string FrameRecord(std::string_view data);

// Every record of `bytes` (a whole file's contents, named `name` in messages), both CRCs verified;
// `on_record` sees each record's span and data in file order. kInvalidInput at the first bad
// record. This is the reader's core without I/O (a fuzzer's entry point).
Status ScanRecords(std::string_view bytes, std::string_view name,
                   const std::function<void(const RecordSpan&, std::string_view data)>& on_record,
                   std::int64_t max_record_bytes = kDefaultMaxRecordBytes);

// One TFRecord file opened for reading. Reads use pread, so one RecordFile serves several threads.
class RecordFile {
 public:
  // kNotFound when `path` does not exist; kInvalidInput when it is not a regular file (a FIFO or a
  // device would block or never end); kIo when it cannot be opened.
  static Result<RecordFile> Open(const std::string& path);
  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile();

  const std::string& path() const { return path_; }
  std::int64_t size() const { return size_; }

  // Every record's span, from the headers alone: each length CRC is verified and each record
  // must fit in the file; the data CRCs are checked by ReadRecord. kInvalidInput names the file
  // and the offset of the first bad record; `intact_prefix`, when given, receives the spans before
  // it (the records a reader that skips corrupt input can still use).
  Result<std::vector<RecordSpan>> Index(std::int64_t max_record_bytes = kDefaultMaxRecordBytes,
                                        std::vector<RecordSpan>* intact_prefix = nullptr) const;

  // The data of the record at `span` into `data` (resized; its capacity is reused), with the
  // header read again and both CRCs verified. kInvalidInput names the file and the offset; kIo
  // when the read fails.
  Status ReadRecord(const RecordSpan& span, std::string& data) const;

 private:
  RecordFile(std::string path, int fd, std::int64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  std::int64_t size_ = 0;
};

// Writes a TFRecord file. Create refuses to replace anything that is not a regular file (a
// symlink, a FIFO, a device node). Append is buffered; Close flushes and reports a failed write.
class RecordWriter {
 public:
  static Result<RecordWriter> Create(const std::string& path);
  RecordWriter(RecordWriter&& other) noexcept;
  RecordWriter& operator=(RecordWriter&& other) noexcept;
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  ~RecordWriter();  // closes without reporting; call Close to learn whether the file is whole

  Status Append(std::string_view data);
  Status Flush();
  Status Close();
  std::int64_t bytes_written() const { return written_; }

 private:
  RecordWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  std::string buffer_;
  std::int64_t written_ = 0;
};

}  // namespace dlbench::tfrecord
