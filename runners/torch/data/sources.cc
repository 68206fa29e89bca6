#include "data/sources.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

namespace dlbench::torchrunner::data {
namespace {

Error Bad(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

bool IsJpegName(const std::string& name) {
  auto ends_with = [&](const char* ext) {
    const std::size_t n = std::strlen(ext);
    if (name.size() < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (std::tolower(static_cast<unsigned char>(name[name.size() - n + i])) != ext[i]) return false;
    }
    return true;
  };
  return ends_with(".jpg") || ends_with(".jpeg");
}

// The whole of a regular file into `out`. Non-regular files (a FIFO would block) and files beyond
// kMaxSampleBytes are corrupt input; a failing read is kIo.
Status ReadWholeFile(const std::string& path, std::string& out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return MakeError(ErrorKind::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Bad(path + ": not a regular file");
  }
  if (st.st_size > kMaxSampleBytes) {
    close(fd);
    return Bad(
        fmt::format("{}: {} bytes, more than the {} a sample may have", path, st.st_size, kMaxSampleBytes));
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return MakeError(ErrorKind::kIo, fmt::format("{}: read failed: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  close(fd);
  out.resize(done);
  return Status::Ok();
}

struct FolderScan {
  std::vector<std::pair<std::string, std::string>> files;  // (folder, name), to sort as ImageFolder does
  std::int64_t ignored = 0;
  std::set<std::pair<dev_t, ino_t>> visited;
};

Status Walk(const std::string& dir, int depth, FolderScan& scan) {
  if (depth > kMaxFolderDepth)
    return Bad(fmt::format("{}: folders nested deeper than {}", dir, kMaxFolderDepth));
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    return MakeError(ErrorKind::kIo, fmt::format("{}: {}", dir, std::strerror(errno)));
  if (!scan.visited.insert({st.st_dev, st.st_ino}).second) return Status::Ok();  // a symlink loop
  DIR* d = opendir(dir.c_str());
  if (d == nullptr)
    return MakeError(ErrorKind::kIo, fmt::format("{}: cannot list: {}", dir, std::strerror(errno)));
  std::vector<std::string> subdirs;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat es {};
    if (stat(path.c_str(), &es) != 0) {  // a dangling symlink
      ++scan.ignored;
      continue;
    }
    if (S_ISDIR(es.st_mode)) {
      subdirs.push_back(path);
    } else if (S_ISREG(es.st_mode) && IsJpegName(name)) {
      if (static_cast<std::int64_t>(scan.files.size()) >= kMaxSamples) {
        closedir(d);
        return Bad(fmt::format("{}: more than {} files", dir, kMaxSamples));
      }
      scan.files.emplace_back(dir, name);
    } else {
      ++scan.ignored;
    }
  }
  closedir(d);
  for (const std::string& sub : subdirs) DLBENCH_RETURN_IF_ERROR(Walk(sub, depth + 1, scan));
  return Status::Ok();
}

class JpegFolderSource final : public SampleSource {
 public:
  JpegFolderSource(std::string root, std::vector<std::string> classes, std::vector<std::string> paths,
                   std::vector<std::int64_t> labels, std::int64_t ignored)
      : root_(std::move(root)),
        classes_(std::move(classes)),
        paths_(std::move(paths)),
        labels_(std::move(labels)),
        ignored_(ignored) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(paths_.size()); }
  std::int64_t num_classes() const override { return static_cast<std::int64_t>(classes_.size()); }
  Status Read(std::int64_t index, std::string& bytes, std::int64_t& label) const override {
    label = labels_[static_cast<std::size_t>(index)];
    return ReadWholeFile(paths_[static_cast<std::size_t>(index)], bytes);
  }
  std::string Where(std::int64_t index) const override { return paths_[static_cast<std::size_t>(index)]; }
  const std::vector<SourceProblem>& open_problems() const override { return no_problems_; }
  nlohmann::json Describe() const override {
    return {{"root", root_},
            {"classes", classes_.size()},
            {"samples", paths_.size()},
            {"ignored_files", ignored_},
            {"layout", "ImageFolder: ROOT/CLASS/.../IMAGE.jpg, labels by sorted class name"}};
  }

 private:
  std::string root_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<std::int64_t> labels_;
  std::int64_t ignored_ = 0;
  std::vector<SourceProblem> no_problems_;
};

struct IndexedRecord {
  std::int32_t file = 0;
  tfrecord::RecordSpan span;
};

class TfRecordSource final : public SampleSource {
 public:
  TfRecordSource(std::string glob, std::vector<tfrecord::RecordFile> files,
                 std::vector<IndexedRecord> records, std::vector<SourceProblem> problems,
                 tfrecord::ImageKeys keys)
      : glob_(std::move(glob)),
        files_(std::move(files)),
        records_(std::move(records)),
        problems_(std::move(problems)),
        keys_(std::move(keys)) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(records_.size()); }
  std::int64_t num_classes() const override { return -1; }
  Status Read(std::int64_t index, std::string& bytes, std::int64_t& label) const override {
    const IndexedRecord& r = records_[static_cast<std::size_t>(index)];
    const tfrecord::RecordFile& file = files_[static_cast<std::size_t>(r.file)];
    // The serialized Example is read into a buffer of this thread's, then the image moves out.
    thread_local std::string record;
    DLBENCH_RETURN_IF_ERROR(file.ReadRecord(r.span, record));
    auto example = tfrecord::ParseImageExample(record, keys_);
    if (!example.ok()) return Bad(fmt::format("{}: {}", Where(index), example.error().message));
    bytes.swap(example->encoded);
    label = example->label;
    return Status::Ok();
  }
  std::string Where(std::int64_t index) const override {
    const IndexedRecord& r = records_[static_cast<std::size_t>(index)];
    return fmt::format("{}, record at byte {}", files_[static_cast<std::size_t>(r.file)].path(),
                       r.span.offset);
  }
  const std::vector<SourceProblem>& open_problems() const override { return problems_; }
  nlohmann::json Describe() const override {
    return {{"glob", glob_},
            {"files", files_.size()},
            {"samples", records_.size()},
            {"image_key", keys_.image},
            {"label_key", keys_.label}};
  }

 private:
  std::string glob_;
  std::vector<tfrecord::RecordFile> files_;
  std::vector<IndexedRecord> records_;
  std::vector<SourceProblem> problems_;
  tfrecord::ImageKeys keys_;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenJpegFolder(const std::string& root_in) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  struct stat st {};
  if (stat(root.c_str(), &st) != 0) {
    return Bad(fmt::format("data_path '{}': {}", root, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return Bad(fmt::format("data_path '{}' is not a folder", root));
  DIR* d = opendir(root.c_str());
  if (d == nullptr)
    return MakeError(ErrorKind::kIo, fmt::format("{}: cannot list: {}", root, std::strerror(errno)));
  std::vector<std::string> classes;
  std::int64_t ignored = 0;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat es {};
    if (stat((root + "/" + name).c_str(), &es) == 0 && S_ISDIR(es.st_mode))
      classes.push_back(name);
    else
      ++ignored;
  }
  closedir(d);
  if (classes.empty()) {
    return Bad(fmt::format("jpeg_dir '{}' holds no class sub-folder (ImageFolder layout: {}/CLASS/IMAGE.jpg)",
                           root, root));
  }
  std::sort(classes.begin(), classes.end());
  std::vector<std::string> paths;
  std::vector<std::int64_t> labels;
  std::vector<std::string> empty;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    FolderScan scan;
    DLBENCH_RETURN_IF_ERROR(Walk(root + "/" + classes[c], 1, scan));
    ignored += scan.ignored;
    if (scan.files.empty()) empty.push_back(classes[c]);
    std::sort(scan.files.begin(), scan.files.end());
    for (auto& [folder, name] : scan.files) {
      paths.push_back(folder + "/" + name);
      labels.push_back(static_cast<std::int64_t>(c));
    }
    if (static_cast<std::int64_t>(paths.size()) > kMaxSamples) {
      return Bad(fmt::format("jpeg_dir '{}': more than {} files", root, kMaxSamples));
    }
  }
  if (!empty.empty()) {
    std::string names;
    for (const auto& e : empty) names += (names.empty() ? "" : ", ") + e;
    return Bad(fmt::format("jpeg_dir '{}': no .jpg/.jpeg file in the class folder(s) {}", root, names));
  }
  return std::unique_ptr<SampleSource>(
      new JpegFolderSource(root, std::move(classes), std::move(paths), std::move(labels), ignored));
}

Result<std::unique_ptr<SampleSource>> OpenTfRecords(const std::string& pattern, bool skip_corrupt,
                                                    const tfrecord::ImageKeys& keys) {
  glob_t g{};
  const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc == GLOB_NOMATCH || paths.empty()) return Bad(fmt::format("data_path '{}' matches no file", pattern));
  if (rc != 0)
    return MakeError(ErrorKind::kIo, fmt::format("data_path '{}': the glob could not be read", pattern));
  if (static_cast<std::int64_t>(paths.size()) > kMaxTfRecordFiles) {
    return Bad(fmt::format("data_path '{}' matches {} files, more than {}", pattern, paths.size(),
                           kMaxTfRecordFiles));
  }
  std::sort(paths.begin(), paths.end());
  std::vector<tfrecord::RecordFile> files;
  std::vector<IndexedRecord> records;
  std::vector<SourceProblem> problems;
  for (const std::string& path : paths) {
    auto file = tfrecord::RecordFile::Open(path);
    if (!file.ok()) return file.error();
    std::vector<tfrecord::RecordSpan> prefix;
    auto spans = file->Index(tfrecord::kDefaultMaxRecordBytes, &prefix);
    if (!spans.ok()) {
      if (!skip_corrupt || spans.error().kind != ErrorKind::kInvalidInput) return spans.error();
      problems.push_back({spans.error().message + " (the rest of the file is skipped)"});
      spans = std::move(prefix);
    }
    const auto index = static_cast<std::int32_t>(files.size());
    for (const auto& span : *spans) records.push_back({index, span});
    if (static_cast<std::int64_t>(records.size()) > kMaxSamples) {
      return Bad(fmt::format("data_path '{}': more than {} records", pattern, kMaxSamples));
    }
    files.push_back(std::move(*file));
  }
  if (records.empty()) return Bad(fmt::format("data_path '{}': the files hold no record", pattern));
  return std::unique_ptr<SampleSource>(
      new TfRecordSource(pattern, std::move(files), std::move(records), std::move(problems), keys));
}

}  // namespace dlbench::torchrunner::data
