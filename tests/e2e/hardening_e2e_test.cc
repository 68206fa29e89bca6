// The driver's defences, end to end: `-o PATH` never replaces what is not a regular file; reading
// commands work on a store on a read-only filesystem; a second `serve` on an address in use exits
// 4; names with terminal escape sequences reach the terminal escaped; mistaken matrix files
// (a device, a second YAML document, 10^9 cells) are refused at once with file:line or the count.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "e2e_util.h"
#include "report_e2e_util.h"

namespace dlbench::e2e {
namespace {

namespace fs = std::filesystem;

// A one-cell null matrix that finishes in well under a second; `name` and `model` are YAML
// double-quoted strings (escapes allowed).
std::string TinyMatrix(const std::string& name = "tiny", const std::string& model = "tiny") {
  return "name: \"" + name + "\"\nrunner: null\nmatrix:\n  model: \"" + model +
         "\"\n  step_ms: 0.2\nmeasure:\n  min_steps: 10\n  min_time_s: 0.05\n  max_time_s: 0.5\n";
}

// Runs the tiny matrix into db; returns whether it stored its run.
bool StoreTinyRun(const TempDir& dir, const std::string& db, const std::string& yaml = TinyMatrix()) {
  const std::string matrix = dir / "tiny.yaml";
  WriteText(matrix, yaml);
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  return run.exit_code == 0;
}

struct stat Lstat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(HardeningE2E, OutputsAreWrittenThroughFifosLinksAndDevicesNeverReplacingThem) {
  TempDir dir("outputs");
  const std::string db = dir / "r.db";
  ASSERT_TRUE(StoreTinyRun(dir, db));

  // A FIFO gets the report; it stays a FIFO. The reader opens it first, without waiting for a
  // writer, and reads until dlbench has ended (a build that replaced the FIFO never writes to it).
  const std::string fifo = dir / "report.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int read_fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(read_fd, 0);
  std::atomic<bool> writer_done{false};
  std::string received;
  std::thread reader([&] {
    for (;;) {
      char buf[65536];
      const ssize_t n = ::read(read_fd, buf, sizeof buf);
      if (n > 0) {
        received.append(buf, static_cast<std::size_t>(n));
      } else if (writer_done.load()) {
        break;  // no writer and none to come
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  });
  auto report = Dlbench({"report", "1", "-o", fifo}, dir, db);
  writer_done = true;
  reader.join();
  ::close(read_fd);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(received.find("<!doctype html>"), std::string::npos) << received.substr(0, 100);
  EXPECT_TRUE(S_ISFIFO(Lstat(fifo).st_mode));

  // A symbolic link is followed; the link stays.
  const std::string target = dir / "target.json";
  const std::string link = dir / "latest.json";
  WriteText(target, "old");
  fs::create_symlink(target, link);
  auto exported = Dlbench({"export", "1", "-o", link}, dir, db);
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(S_ISLNK(Lstat(link).st_mode));
  EXPECT_NE(ReadFile(target)->find("\"cells\""), std::string::npos);

  // Character devices: our own copies of /dev/null and /dev/full where mknod is allowed (a broken
  // build then replaces these, not the machine's), the machine's otherwise (which an unprivileged
  // process cannot replace).
  std::string null_dev = dir / "null";
  std::string full_dev = dir / "full";
  if (::mknod(null_dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(full_dev.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    ASSERT_NE(::geteuid(), 0u);
    null_dev = "/dev/null";
    full_dev = "/dev/full";
  }
  const ino_t null_inode = Lstat(null_dev).st_ino;
  auto to_null = Dlbench({"report", "1", "-o", null_dev}, dir, db);
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
  EXPECT_TRUE(S_ISCHR(Lstat(null_dev).st_mode));
  EXPECT_EQ(Lstat(null_dev).st_ino, null_inode);

  const ino_t full_inode = Lstat(full_dev).st_ino;
  auto to_full = Dlbench({"report", "1", "-o", full_dev}, dir, db);
  EXPECT_EQ(to_full.exit_code, 4) << to_full.err;
  EXPECT_NE(to_full.err.find("No space left on device"), std::string::npos) << to_full.err;
  EXPECT_TRUE(S_ISCHR(Lstat(full_dev).st_mode));
  EXPECT_EQ(Lstat(full_dev).st_ino, full_inode);

  // A directory is refused with what it is.
  auto to_dir = Dlbench({"export", "1", "-o", dir / "out"}, dir, db);
  EXPECT_EQ(to_dir.exit_code, 4);
  EXPECT_NE(to_dir.err.find("it is a directory"), std::string::npos) << to_dir.err;
}

// Runs `dlbench --db DB ARGS...` with DIR bind-mounted read-only in a private mount namespace
// (unshare -m). The script is a constant; the paths reach it as arguments, never as shell text.
CommandResult InReadOnlyMount(const TempDir& dir, const std::string& mount_dir, const std::string& db,
                              const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"unshare",
                                   "-m",
                                   "sh",
                                   "-c",
                                   "mount --make-rprivate / && mount --bind \"$1\" \"$1\" && "
                                   "mount -o remount,bind,ro \"$1\" && shift && exec \"$@\"",
                                   "sh",
                                   mount_dir,
                                   Bin("dlbench"),
                                   "--db",
                                   db};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, dir);
}

TEST(HardeningE2E, ReadingCommandsWorkOnAStoreOnAReadOnlyFilesystem) {
  TempDir dir("readonly");
  const std::string store_dir = dir / "store";
  fs::create_directories(store_dir);
  const std::string db = store_dir + "/r.db";
  ASSERT_TRUE(StoreTinyRun(dir, db));
  ASSERT_TRUE(StoreTinyRun(dir, db));
  ASSERT_FALSE(fs::exists(db + "-wal")) << "the writer closed the store cleanly";
  auto probe = InReadOnlyMount(dir, store_dir, db, {"--version"});
  if (probe.exit_code != 0) {
    GTEST_SKIP() << "no private read-only mount here (unshare -m needs CAP_SYS_ADMIN): " << probe.err;
  }
  const std::string before = *ReadFile(db);
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const Case cases[] = {
      {{"show", "1"}, "run 1"},
      {{"runs"}, "tiny"},
      {{"export", "2", "--format", "csv"}, "samples_per_s"},
      {{"compare", "1", "2"}, "tiny"},
      {{"trend"}, ""},
      {{"report", "2", "-o", dir / "report.html"}, ""},
  };
  for (const Case& c : cases) {
    auto r = InReadOnlyMount(dir, store_dir, db, c.args);
    EXPECT_EQ(r.exit_code, 0) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.out.find(c.expected), std::string::npos) << c.args[0] << ":\n" << r.out;
  }
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  // Writing is refused as a store error (exit 3), and the file is as it was.
  auto tag = InReadOnlyMount(dir, store_dir, db, {"tag", "1", "baseline"});
  EXPECT_EQ(tag.exit_code, 3) << tag.err;
  EXPECT_EQ(*ReadFile(db), before);
}

TEST(HardeningE2E, ASecondServeOnAnAddressInUseExits4) {
  TempDir dir("serve_twice");
  const std::string db = dir / "r.db";
  ASSERT_TRUE(StoreTinyRun(dir, db));
  SpawnOptions first_options;
  first_options.argv = {Bin("dlbench"), "serve", "--db", db, "--listen", "127.0.0.1:0"};
  first_options.stdout_path = dir / "first.out";
  first_options.stderr_path = dir / "first.err";
  auto first = Subprocess::Spawn(first_options);
  ASSERT_TRUE(first.ok()) << first.error().message;
  int port = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto out = ReadFile(dir / "first.out");
        const std::string prefix = "http://127.0.0.1:";
        const auto at = out.ok() ? out->find(prefix) : std::string::npos;
        if (at == std::string::npos) return false;
        port = std::atoi(out->c_str() + at + prefix.size());
        return port > 0;
      },
      20))
      << (ReadFile(dir / "first.err").ok() ? *ReadFile(dir / "first.err") : "");

  SpawnOptions second_options;
  second_options.argv = {
      Bin("dlbench"), "serve", "--db", db, "--listen", "127.0.0.1:" + std::to_string(port)};
  second_options.stdout_path = dir / "second.out";
  second_options.stderr_path = dir / "second.err";
  auto second = Subprocess::Spawn(second_options);
  ASSERT_TRUE(second.ok());
  std::optional<ExitStatus> ended;
  WaitFor(
      [&] {
        ended = second->TryWait();
        return ended.has_value();
      },
      20);
  if (!ended) ended = second->Terminate(2000);  // it served: the bug this test is about
  const std::string err = ReadFile(dir / "second.err").ok() ? *ReadFile(dir / "second.err") : "";
  EXPECT_FALSE(ended->signaled) << "the second serve kept running on an address in use";
  EXPECT_EQ(ended->code, 4) << err;
  EXPECT_NE(err.find("address already in use"), std::string::npos) << err;
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  EXPECT_TRUE(first->Terminate(5000).success());
}

TEST(HardeningE2E, EscapeSequencesInNamesReachTheTerminalEscaped) {
  TempDir dir("escapes");
  const std::string db = dir / "r.db";
  // A name that clears the screen and sets the window title; a model that turns text red.
  const std::string yaml = TinyMatrix("\\e[2J\\e]0;owned\\a", "\\e[31mred");
  ASSERT_TRUE(StoreTinyRun(dir, db, yaml));
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"plan", dir / "tiny.yaml"}, {"show", "1"}, {"show", "1", "--verbose"}, {"runs"}}) {
    auto r = Dlbench(args, dir, db);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args[0] << " printed a raw ESC:\n" << r.out;
    EXPECT_EQ(r.out.find('\a'), std::string::npos) << args[0];
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << args[0];
  }
  auto show = Dlbench({"show", "1"}, dir, db);
  EXPECT_NE(show.out.find("\\x1b[2J\\x1b]0;owned\\x07"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("\\x1b[31mred"), std::string::npos) << show.out;
  // An error message quoting the bad value is escaped too.
  WriteText(dir / "bad.yaml", "matrix:\n  \"\\e[2Jbatch\": 1\n");
  auto bad = Dlbench({"plan", dir / "bad.yaml"}, dir, db);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.find('\x1b'), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("\\x1b[2Jbatch"), std::string::npos) << bad.err;
}

TEST(HardeningE2E, MistakenMatrixFilesAreRefusedAtOnce) {
  TempDir dir("matrices");
  const std::string db = dir / "r.db";
  // /dev/zero used to be read until memory ran out.
  auto zero = Dlbench({"plan", "/dev/zero"}, dir, db);
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("/dev/zero: error: it is a character device; a matrix must be a regular file"),
            std::string::npos)
      << zero.err;

  WriteText(dir / "two.yaml", "matrix: {batch_size: 1}\n---\nmatrix: {batch_size: 2}\n");
  auto two = Dlbench({"plan", dir / "two.yaml"}, dir, db);
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find(dir / "two.yaml" + ":2:1: error: a second YAML document starts here"),
            std::string::npos)
      << two.err;

  // 10^9 cells: refused from the count, before anything is expanded.
  std::string huge = "runner: null\nmatrix:\n";
  for (const char* axis : {"batch_size", "step_ms", "jitter_pct", "setup_ms", "warmup_steps", "warmup_factor",
                           "inject_at_step", "leak_bytes_per_step", "samples_per_step"}) {
    huge += std::string("  ") + axis + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  }
  WriteText(dir / "huge.yaml", huge);
  auto plan = Dlbench({"plan", dir / "huge.yaml"}, dir, db);
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_NE(plan.err.find("the matrix expands to 1000000000 cells"), std::string::npos) << plan.err;
  auto run = Dlbench({"run", dir / "huge.yaml", "--out", dir / "out"}, dir, db);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("the matrix expands to 1000000000 cells"), std::string::npos) << run.err;

  // A name that is not UTF-8 aborted `run` (an uncaught JSON error writing the progress file).
  WriteText(dir / "latin1.yaml",
            "runner: null\nmatrix:\n  model: a\xff"
            "b\n  step_ms: 0.2\n");
  auto latin1 = Dlbench({"run", dir / "latin1.yaml", "--out", dir / "out"}, dir, db);
  EXPECT_EQ(latin1.exit_code, 2) << latin1.err;
  EXPECT_NE(latin1.err.find("latin1.yaml:3:11: error: the file is not UTF-8 text (byte 0xff)"),
            std::string::npos)
      << latin1.err;

  // Numbers that passed validation and then overflowed are refused with their maximum.
  WriteText(dir / "big.yaml", "runner: null\nmatrix: {step_ms: 1}\ntimeout_s: 1e10\n");
  auto big = Dlbench({"plan", dir / "big.yaml"}, dir, db);
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("timeout_s: expected a number > 0 and <= 604800 (got '1e10')"), std::string::npos)
      << big.err;
}

}  // namespace
}  // namespace dlbench::e2e
