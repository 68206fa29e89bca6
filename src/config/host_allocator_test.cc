#include "config/host_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace dlbench::config {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

TEST(HostAllocatorTest, SystemSetsNothing) {
  auto env = HostAllocatorEnvironment("system", "glibc.malloc.arena_max=1", "/lib/x.so");
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_TRUE(env->empty());
}

TEST(HostAllocatorTest, GlibcFixedAppendsItsThresholdsToTheInheritedTunables) {
  const std::string fixed = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296";
  auto alone = HostAllocatorEnvironment("glibc_fixed", nullptr, nullptr);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, (Env{{"GLIBC_TUNABLES", fixed}}));
  auto empty = HostAllocatorEnvironment("glibc_fixed", "", "/lib/x.so");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, (Env{{"GLIBC_TUNABLES", fixed}}));
  // The cell's come last: glibc takes the last of a repeated tunable.
  auto kept = HostAllocatorEnvironment("glibc_fixed", "glibc.malloc.arena_max=1", nullptr);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (Env{{"GLIBC_TUNABLES", "glibc.malloc.arena_max=1:" + fixed}}));
}

TEST(HostAllocatorTest, APreloadedAllocatorComesFirstOrIsNamedMissing) {
  for (const char* name : {"jemalloc", "tcmalloc"}) {
    SCOPED_TRACE(name);
    const std::optional<std::string> library = PreloadLibrary(name);
    auto env = HostAllocatorEnvironment(name, "glibc.malloc.arena_max=1", "/lib/other.so");
    if (library) {
      ASSERT_TRUE(env.ok()) << env.error().message;
      EXPECT_EQ(*env, (Env{{"LD_PRELOAD", *library + ":/lib/other.so"}}));
      EXPECT_EQ(HostAllocatorProblem(name), "");
    } else {
      ASSERT_FALSE(env.ok());
      EXPECT_EQ(env.error().kind, ErrorKind::kUnsupported);
      EXPECT_NE(env.error().message.find("apt-get install lib"), std::string::npos) << env.error().message;
      EXPECT_EQ(env.error().message, HostAllocatorProblem(name));
    }
  }
  EXPECT_EQ(PreloadLibrary("glibc_fixed"), std::nullopt);
  EXPECT_EQ(HostAllocatorProblem("system"), "");
}

TEST(HostAllocatorTest, AnUnknownValueIsAnError) {
  auto env = HostAllocatorEnvironment("mimalloc", nullptr, nullptr);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().message, "unknown host_allocator 'mimalloc'");
  EXPECT_EQ(HostAllocators().front(), "system");
  EXPECT_EQ(HostAllocators().size(), 4U);
}

TEST(HostAllocatorTest, DetectsGlibcAndItsTunablesInThisProcess) {
  const char* before = std::getenv("GLIBC_TUNABLES");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1", 1);
  const nlohmann::json found = DetectHostAllocator();
  if (before != nullptr) {
    ::setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
  EXPECT_EQ(found.value("malloc", ""), "glibc") << found.dump();
  EXPECT_EQ(found.value("glibc_tunables", ""), "glibc.malloc.trim_threshold=1");
}

}  // namespace
}  // namespace dlbench::config
