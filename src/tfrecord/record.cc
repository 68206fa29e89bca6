#include "tfrecord/record.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "tfrecord/crc32c.h"

namespace dlbench::tfrecord {
namespace {

std::uint64_t DecodeFixed64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint32_t DecodeFixed32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
void EncodeFixed64(std::uint64_t v, char* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void EncodeFixed32(std::uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

Error Corrupt(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

// Checks one header (12 bytes at `offset` of a file of `size` bytes) and returns the data length.
Result<std::int64_t> CheckHeader(const char* header, std::int64_t offset, std::int64_t size,
                                 std::string_view name, std::int64_t max_record_bytes) {
  const std::uint32_t stored = UnmaskCrc(DecodeFixed32(header + 8));
  const std::uint32_t computed = Crc32c(header, 8);
  if (stored != computed) {
    return Corrupt(
        fmt::format("{}: corrupt record at byte {}: the length's CRC does not match (stored "
                    "0x{:08x}, computed 0x{:08x})",
                    name, offset, stored, computed));
  }
  const std::uint64_t length = DecodeFixed64(header);
  if (length > static_cast<std::uint64_t>(max_record_bytes)) {
    return Corrupt(fmt::format("{}: record at byte {} declares {} data bytes, more than the limit of {}",
                               name, offset, length, max_record_bytes));
  }
  const auto len = static_cast<std::int64_t>(length);
  const std::int64_t remaining = size - offset - kHeaderBytes;
  if (len > remaining - kFooterBytes) {
    return Corrupt(
        fmt::format("{}: truncated record at byte {}: it declares {} data bytes and a 4-byte CRC, "
                    "but the file ends {} bytes after its header",
                    name, offset, len, remaining));
  }
  return len;
}

Status CheckData(std::string_view data, const char* footer, std::int64_t offset, std::string_view name) {
  const std::uint32_t stored = UnmaskCrc(DecodeFixed32(footer));
  const std::uint32_t computed = Crc32c(data);
  if (stored != computed) {
    return Corrupt(
        fmt::format("{}: corrupt record at byte {}: the CRC of its {} data bytes does not match "
                    "(stored 0x{:08x}, computed 0x{:08x})",
                    name, offset, data.size(), stored, computed));
  }
  return Status::Ok();
}

Error TruncatedHeader(std::string_view name, std::int64_t offset, std::int64_t remaining) {
  return Corrupt(fmt::format("{}: truncated record at byte {}: a header needs {} bytes, {} remain", name,
                             offset, kHeaderBytes, remaining));
}

// pread until `size` bytes or end of file; returns the bytes read or -errno.
std::int64_t ReadFully(int fd, char* out, std::int64_t size, std::int64_t offset) {
  std::int64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, out + done, static_cast<std::size_t>(size - done), offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    done += n;
  }
  return done;
}

Status WriteFully(int fd, const char* data, std::size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorKind::kIo, fmt::format("{}: write failed: {}", path, std::strerror(errno)));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

std::string FrameRecord(std::string_view data) {
  std::string out(static_cast<std::size_t>(kHeaderBytes) + data.size() + kFooterBytes, '\0');
  EncodeFixed64(data.size(), out.data());
  EncodeFixed32(MaskCrc(Crc32c(out.data(), 8)), out.data() + 8);
  if (!data.empty()) std::memcpy(out.data() + kHeaderBytes, data.data(), data.size());
  EncodeFixed32(MaskCrc(Crc32c(data)), out.data() + kHeaderBytes + data.size());
  return out;
}

Status ScanRecords(std::string_view bytes, std::string_view name,
                   const std::function<void(const RecordSpan&, std::string_view data)>& on_record,
                   std::int64_t max_record_bytes) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  std::int64_t offset = 0;
  while (offset < size) {
    if (size - offset < kHeaderBytes) return TruncatedHeader(name, offset, size - offset);
    auto length = CheckHeader(bytes.data() + offset, offset, size, name, max_record_bytes);
    if (!length.ok()) return length.error();
    const std::string_view data =
        bytes.substr(static_cast<std::size_t>(offset + kHeaderBytes), static_cast<std::size_t>(*length));
    DLBENCH_RETURN_IF_ERROR(CheckData(data, bytes.data() + offset + kHeaderBytes + *length, offset, name));
    on_record(RecordSpan{offset, *length}, data);
    offset += kHeaderBytes + *length + kFooterBytes;
  }
  return Status::Ok();
}

Result<RecordFile> RecordFile::Open(const std::string& path) {
  // O_NONBLOCK so that opening a FIFO cannot block before fstat says what it is.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                     fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return MakeError(ErrorKind::kInvalidInput, fmt::format("{}: not a regular file", path));
  }
  return RecordFile(path, fd, static_cast<std::int64_t>(st.st_size));
}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) close(fd_);
}

Result<std::vector<RecordSpan>> RecordFile::Index(std::int64_t max_record_bytes,
                                                  std::vector<RecordSpan>* intact_prefix) const {
  std::vector<RecordSpan> spans;
  std::int64_t offset = 0;
  char header[kHeaderBytes];
  auto fail = [&](Error error) -> Result<std::vector<RecordSpan>> {
    if (intact_prefix != nullptr) *intact_prefix = std::move(spans);
    return error;
  };
  while (offset < size_) {
    const std::int64_t n = ReadFully(fd_, header, kHeaderBytes, offset);
    if (n < 0) {
      return fail(MakeError(ErrorKind::kIo, fmt::format("{}: read failed at byte {}: {}", path_, offset,
                                                        std::strerror(static_cast<int>(-n)))));
    }
    if (n < kHeaderBytes) return fail(TruncatedHeader(path_, offset, n));
    auto length = CheckHeader(header, offset, size_, path_, max_record_bytes);
    if (!length.ok()) return fail(length.error());
    spans.push_back(RecordSpan{offset, *length});
    offset += kHeaderBytes + *length + kFooterBytes;
  }
  return spans;
}

Status RecordFile::ReadRecord(const RecordSpan& span, std::string& data) const {
  char header[kHeaderBytes];
  std::int64_t n = ReadFully(fd_, header, kHeaderBytes, span.offset);
  if (n < 0) {
    return MakeError(ErrorKind::kIo, fmt::format("{}: read failed at byte {}: {}", path_, span.offset,
                                                 std::strerror(static_cast<int>(-n))));
  }
  if (n < kHeaderBytes) return TruncatedHeader(path_, span.offset, n);
  auto length = CheckHeader(header, span.offset, size_, path_, std::numeric_limits<std::int64_t>::max());
  if (!length.ok()) return length.error();
  if (*length != span.length) {
    return Corrupt(
        fmt::format("{}: the record at byte {} now declares {} data bytes, not the {} it was indexed "
                    "with (the file changed)",
                    path_, span.offset, *length, span.length));
  }
  data.resize(static_cast<std::size_t>(span.length + kFooterBytes));
  n = ReadFully(fd_, data.data(), span.length + kFooterBytes, span.offset + kHeaderBytes);
  if (n < 0) {
    return MakeError(ErrorKind::kIo, fmt::format("{}: read failed at byte {}: {}", path_, span.offset,
                                                 std::strerror(static_cast<int>(-n))));
  }
  if (n < span.length + kFooterBytes) {
    return Corrupt(
        fmt::format("{}: truncated record at byte {}: the file ended while reading it", path_, span.offset));
  }
  char footer[kFooterBytes];
  std::memcpy(footer, data.data() + span.length, kFooterBytes);
  data.resize(static_cast<std::size_t>(span.length));
  return CheckData(data, footer, span.offset, path_);
}

Result<RecordWriter> RecordWriter::Create(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("{}: exists and is not a regular file; refusing to replace it", path));
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return MakeError(ErrorKind::kIo, fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  }
  return RecordWriter(path, fd);
}

RecordWriter::RecordWriter(RecordWriter&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      buffer_(std::move(other.buffer_)),
      written_(other.written_) {
  other.fd_ = -1;
}

RecordWriter& RecordWriter::operator=(RecordWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    buffer_ = std::move(other.buffer_);
    written_ = other.written_;
    other.fd_ = -1;
  }
  return *this;
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) {
    (void)Flush();
    close(fd_);
  }
}

Status RecordWriter::Append(std::string_view data) {
  if (fd_ < 0) return MakeError(ErrorKind::kInternal, path_ + ": Append after Close");
  buffer_ += FrameRecord(data);
  written_ += kHeaderBytes + static_cast<std::int64_t>(data.size()) + kFooterBytes;
  if (buffer_.size() >= (std::size_t{1} << 20)) return Flush();
  return Status::Ok();
}

Status RecordWriter::Flush() {
  if (fd_ < 0 || buffer_.empty()) return Status::Ok();
  Status s = WriteFully(fd_, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return s;
}

Status RecordWriter::Close() {
  if (fd_ < 0) return Status::Ok();
  Status s = Flush();
  if (close(fd_) != 0 && s.ok()) {
    s = MakeError(ErrorKind::kIo, fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
  }
  fd_ = -1;
  return s;
}

}  // namespace dlbench::tfrecord
