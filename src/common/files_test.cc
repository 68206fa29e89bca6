#include "common/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace dlbench {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dlbench_files_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static struct stat Lstat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }
  // A character device of our own (mknod needs root): a test that goes wrong replaces this
  // node, never the machine's /dev/null or /dev/full. False when not permitted.
  bool MakeCharDevice(const std::string& path, unsigned major_number, unsigned minor_number) {
    return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(major_number, minor_number)) == 0;
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, AbsentOrRegularFileIsReplacedAtomically) {
  const std::string path = Path("out.txt");
  ASSERT_TRUE(WriteOutputFile(path, "first\n").ok());
  EXPECT_EQ(Slurp(path), "first\n");
  // A reader that opened the old file keeps reading it whole: the new contents arrive by rename.
  int old_fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(old_fd, 0);
  ASSERT_TRUE(WriteOutputFile(path, "second\n").ok());
  char buf[16] = {};
  ASSERT_EQ(::read(old_fd, buf, sizeof buf), 6);
  EXPECT_EQ(std::string(buf, 6), "first\n");
  ::close(old_fd);
  EXPECT_EQ(Slurp(path), "second\n");
  EXPECT_TRUE(S_ISREG(Lstat(path).st_mode));
  ASSERT_TRUE(WriteFileAtomic(path, "third\n").ok());
  EXPECT_EQ(Slurp(path), "third\n");
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(OutputFileTest, SymlinkIsWrittenThroughAndStaysALink) {
  const std::string target = Path("target.txt");
  const std::string link = Path("link.txt");
  std::ofstream(target) << "old contents that are longer\n";
  fs::create_symlink(target, link);
  ASSERT_TRUE(WriteOutputFile(link, "new\n").ok());
  EXPECT_TRUE(S_ISLNK(Lstat(link).st_mode));
  EXPECT_EQ(Slurp(target), "new\n");

  // A dangling link: its target is created, like a shell's `>`.
  const std::string dangling = Path("dangling");
  fs::create_symlink(Path("created.txt"), dangling);
  ASSERT_TRUE(WriteOutputFile(dangling, "made\n").ok());
  EXPECT_TRUE(S_ISLNK(Lstat(dangling).st_mode));
  EXPECT_EQ(Slurp(Path("created.txt")), "made\n");

  // The program's own files are never written through a link.
  Status refused = WriteFileAtomic(link, "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("symbolic link"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(S_ISLNK(Lstat(link).st_mode));
  EXPECT_EQ(Slurp(target), "new\n");
}

TEST_F(OutputFileTest, FifoIsWrittenThroughNotReplaced) {
  const std::string fifo = Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = Slurp(fifo); });
  Status written = WriteOutputFile(fifo, "through the pipe\n");
  reader.join();
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(received, "through the pipe\n");
  EXPECT_TRUE(S_ISFIFO(Lstat(fifo).st_mode));

  Status refused = WriteFileAtomic(fifo, "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("FIFO"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(S_ISFIFO(Lstat(fifo).st_mode));
}

TEST_F(OutputFileTest, CharacterDevicesAreWrittenThroughAndNeverReplaced) {
  // Our own copies of /dev/null (1,3) and /dev/full (1,7) where mknod is allowed; otherwise the
  // machine's, which an unprivileged test cannot replace in any case.
  std::string null_dev = Path("null");
  std::string full_dev = Path("full");
  if (!MakeCharDevice(null_dev, 1, 3) || !MakeCharDevice(full_dev, 1, 7)) {
    ASSERT_NE(::geteuid(), 0u) << "mknod failed as root: " << errno;
    null_dev = "/dev/null";
    full_dev = "/dev/full";
  }
  const struct stat null_before = Lstat(null_dev);
  ASSERT_TRUE(WriteOutputFile(null_dev, "discarded\n").ok());
  const struct stat null_after = Lstat(null_dev);
  EXPECT_TRUE(S_ISCHR(null_after.st_mode));
  EXPECT_EQ(null_after.st_ino, null_before.st_ino);
  EXPECT_EQ(null_after.st_rdev, null_before.st_rdev);

  const struct stat full_before = Lstat(full_dev);
  Status full = WriteOutputFile(full_dev, "no room\n");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().kind, ErrorKind::kIo);
  EXPECT_NE(full.error().message.find("No space left on device"), std::string::npos) << full.error().message;
  EXPECT_EQ(Lstat(full_dev).st_ino, full_before.st_ino);

  Status refused = WriteFileAtomic(null_dev, "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("character device"), std::string::npos) << refused.error().message;
  EXPECT_EQ(Lstat(null_dev).st_ino, null_before.st_ino);
  // Nothing else appeared next to the nodes.
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "null" || name == "full") << name;
  }
}

TEST_F(OutputFileTest, DirectoryAndBlockDeviceAreRefusedWithWhatTheyAre) {
  const std::string sub = Path("sub");
  fs::create_directories(sub);
  for (const Status& s : {WriteOutputFile(sub, "x"), WriteFileAtomic(sub, "x")}) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::kIo);
    EXPECT_NE(s.error().message.find("cannot write '" + sub + "': it is a directory"), std::string::npos)
        << s.error().message;
  }
  EXPECT_TRUE(fs::is_directory(sub));
  EXPECT_TRUE(fs::is_empty(sub));

  // A symlink to a directory is refused as well.
  const std::string link = Path("dirlink");
  fs::create_directory_symlink(sub, link);
  Status through = WriteOutputFile(link, "x");
  ASSERT_FALSE(through.ok());
  EXPECT_NE(through.error().message.find("directory"), std::string::npos) << through.error().message;

  const std::string block = Path("block");
  if (::mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0) {
    Status s = WriteOutputFile(block, "x");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("block device"), std::string::npos) << s.error().message;
    EXPECT_TRUE(S_ISBLK(Lstat(block).st_mode));
  }
}

TEST_F(OutputFileTest, MissingDirectoryIsAnIoErrorNamingThePath) {
  Status s = WriteOutputFile(Path("no/such/dir/out.txt"), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kIo);
  EXPECT_NE(s.error().message.find("no/such/dir"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace dlbench
