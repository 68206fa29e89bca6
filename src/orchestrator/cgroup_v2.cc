#include "orchestrator/cgroup_v2.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/text.h"

namespace dlbench::orchestrator {
namespace {

// A /proc/self/mounts field: the kernel writes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string octal = field.substr(i + 1, 3);
      if (octal.size() == 3 && octal.find_first_not_of("01234567") == std::string::npos) {
        out += static_cast<char>(std::strtol(octal.c_str(), nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

struct Mount {
  std::string point;
  std::string type;
  std::string options;
};

std::vector<Mount> ReadMounts(const std::string& text) {
  std::vector<Mount> out;
  for (const std::string& line : Split(text, '\n')) {
    std::vector<std::string> f;
    for (std::string& piece : Split(line, ' '))
      if (!piece.empty()) f.push_back(std::move(piece));
    if (f.size() >= 4) out.push_back({UnescapeMountField(f[1]), f[2], f[3]});
  }
  return out;
}

bool ListsWord(const std::string& text, const std::string& word) {
  for (const std::string& line : Split(text, '\n'))
    for (const std::string& w : Split(Trim(line), ' '))
      if (w == word) return true;
  return false;
}

bool HasOption(const std::string& options, const std::string& option) {
  for (const std::string& o : Split(options, ','))
    if (o == option) return true;
  return false;
}

bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return StartsWith(path, "/");
  return path == root || StartsWith(path, root + "/");
}

// Writes `text` to a cgroup interface file. O_CREAT changes nothing on the cgroup file system (the
// kernel made the file, and kernfs creates none: a missing one is an error there) and lets the
// tests' fake tree stand in for the kernel.
Status WriteInterface(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    return MakeError(ErrorKind::kIo, fmt::format("cannot open {}: {}", path, std::strerror(err)));
  }
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return MakeError(ErrorKind::kIo, fmt::format("writing '{}' to {} failed: {}", Trim(text), path,
                                                 n < 0 ? std::strerror(err) : "a short write"));
  }
  return Status::Ok();
}

// kCgroupParentSelf: makes `leaf` (or finds it made) and moves this process and `with` into it.
Status MoveIntoLeaf(const std::string& leaf, pid_t with) {
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    const int err = errno;
    return MakeError(ErrorKind::kIo,
                     fmt::format("cannot create the leaf cgroup {}: {}", leaf, std::strerror(err)));
  }
  DLBENCH_RETURN_IF_ERROR(WriteInterface(leaf + "/cgroup.procs", std::to_string(::getpid())));
  if (with > 0) DLBENCH_RETURN_IF_ERROR(WriteInterface(leaf + "/cgroup.procs", std::to_string(with)));
  return Status::Ok();
}

}  // namespace

CgroupSources SystemCgroupSources() {
  CgroupSources s;
  if (const char* parent = std::getenv(kCgroupParentEnv); parent != nullptr) s.parent = parent;
  return s;
}

CgroupParent FindCgroupParent(const CgroupSources& sources, CgroupCheck check, pid_t with) {
  CgroupParent out;
  const bool self = sources.parent == kCgroupParentSelf;
  out.source = self                     ? fmt::format("{}={}", kCgroupParentEnv, kCgroupParentSelf)
               : sources.parent.empty() ? "this process's cgroup"
                                        : kCgroupParentEnv;
  const std::string leaf = fmt::format("dlbench-{}", ::getpid());
  auto refuse = [&](std::string why) {
    out.path.clear();
    out.why_not = std::move(why);
    return out;
  };
  auto mounts_text = ReadFile(sources.mounts);
  if (!mounts_text.ok()) return refuse(mounts_text.error().message);
  const std::vector<Mount> mounts = ReadMounts(*mounts_text);
  std::vector<std::string> v2;
  std::string v1_memory;
  for (const Mount& m : mounts) {
    if (m.type == "cgroup2") v2.push_back(m.point);
    if (m.type == "cgroup" && HasOption(m.options, "memory")) v1_memory = m.point;
  }
  if (v2.empty()) return refuse(fmt::format("no cgroup2 file system is mounted ({})", sources.mounts));

  std::string candidate;
  if (!sources.parent.empty() && !self) {
    candidate = sources.parent;
    while (candidate.size() > 1 && candidate.back() == '/') candidate.pop_back();
    bool on_v2 = false;
    for (const std::string& point : v2) on_v2 = on_v2 || Under(candidate, point);
    if (!on_v2) {
      return refuse(fmt::format("{}={} is not under a cgroup2 mount ({})", kCgroupParentEnv, candidate,
                                Join(v2, ", ")));
    }
  } else {
    auto self = ReadFile(sources.self_cgroup);
    if (!self.ok()) return refuse(self.error().message);
    std::optional<std::string> own;
    for (const std::string& line : Split(*self, '\n'))
      if (StartsWith(line, "0::")) own = line.substr(3);
    if (!own)
      return refuse(
          fmt::format("this process has no cgroup v2 path (no \"0::\" line in {})", sources.self_cgroup));
    candidate = v2.front() + (*own == "/" ? "" : *own);
    // Moved already (an earlier cell of this run): the leaf's parent is the one to use.
    if (self && EndsWith(candidate, "/" + leaf)) candidate.resize(candidate.size() - leaf.size() - 1);
  }
  bool is_root = false;
  for (const std::string& point : v2) is_root = is_root || candidate == point;

  auto controllers = ReadFile(candidate + "/cgroup.controllers");
  if (!controllers.ok()) return refuse(controllers.error().message);
  if (!ListsWord(*controllers, "memory")) {
    std::string why = fmt::format("the memory controller is not available in {} (cgroup.controllers: '{}')",
                                  candidate, Trim(*controllers));
    if (!v1_memory.empty())
      why += fmt::format("; it is bound to the cgroup v1 hierarchy at {}, and a v1 controller cannot join v2",
                         v1_memory);
    return refuse(why);
  }
  if (::access(candidate.c_str(), W_OK) != 0) {
    const int err = errno;
    return refuse(fmt::format("cannot create cgroups in {}: {}", candidate, std::strerror(err)));
  }
  auto subtree = ReadFile(candidate + "/cgroup.subtree_control");
  if (!subtree.ok()) return refuse(subtree.error().message);
  if (!ListsWord(*subtree, "memory")) {
    // cgroup v2's no-internal-process rule: a non-root cgroup that holds processes cannot give its
    // children a controller. The kernel refuses "+memory" with EBUSY; kReadOnly predicts it.
    const std::string rule = fmt::format(
        "a cgroup that holds processes cannot: cgroup v2's no-internal-process rule; {}",
        self ? "DLBENCH_CGROUP_PARENT=self moves only dlbench and the runner, so start dlbench alone in it"
             : kCgroupSelfRecipe);
    if (check == CgroupCheck::kReadOnly) {
      std::vector<std::string> others;
      if (!is_root) {
        auto procs = ReadFile(candidate + "/cgroup.procs");
        if (!procs.ok()) return refuse(procs.error().message);
        for (const std::string& line : Split(*procs, '\n')) {
          const std::string pid = Trim(line);
          if (!pid.empty() && !(self && pid == std::to_string(::getpid()))) others.push_back(pid);
        }
      }
      if (!others.empty()) {
        return refuse(
            fmt::format("cannot give {}'s children the memory controller: it holds process{} {} ({})",
                        candidate, others.size() == 1 ? "" : "es", Join(others, ", "), rule));
      }
      out.to_do =
          self
              ? fmt::format("dlbench moves itself into {}/{} and writes +memory to {}/cgroup.subtree_control",
                            candidate, leaf, candidate)
              : fmt::format("dlbench writes +memory to {}/cgroup.subtree_control", candidate);
    } else {
      if (self) {
        if (auto st = MoveIntoLeaf(candidate + "/" + leaf, with); !st.ok())
          return refuse(fmt::format("{}: {}", out.source, st.error().message));
      }
      if (auto st = WriteInterface(candidate + "/cgroup.subtree_control", "+memory"); !st.ok()) {
        return refuse(fmt::format("cannot give {}'s children the memory controller: {} ({})", candidate,
                                  st.error().message, rule));
      }
    }
  }
  out.path = candidate;
  out.why_not.clear();
  return out;
}

Result<CellCgroup> CellCgroup::Create(const std::string& parent, const std::string& name,
                                      std::int64_t bytes) {
  const std::string path = parent + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) {
    const int err = errno;
    return MakeError(ErrorKind::kIo, fmt::format("cannot create cgroup {}: {}", path, std::strerror(err)));
  }
  CellCgroup cgroup(path);
  DLBENCH_RETURN_IF_ERROR(WriteInterface(path + "/memory.max", std::to_string(bytes)));
  // The root cgroup has no memory.swap.max while its children do, so either one having it means
  // swap is accounted.
  struct stat st {};
  if (::stat((path + "/memory.swap.max").c_str(), &st) == 0 ||
      ::stat((parent + "/memory.swap.max").c_str(), &st) == 0)
    DLBENCH_RETURN_IF_ERROR(WriteInterface(path + "/memory.swap.max", "0"));
  return cgroup;
}

CellCgroup::CellCgroup(CellCgroup&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

CellCgroup& CellCgroup::operator=(CellCgroup&& other) noexcept {
  if (this != &other) {
    (void)Remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

CellCgroup::~CellCgroup() { (void)Remove(); }

Status CellCgroup::Add(pid_t pid) const {
  return WriteInterface(path_ + "/cgroup.procs", std::to_string(pid));
}

std::int64_t CellCgroup::OomKills() const {
  auto events = ReadFile(path_ + "/memory.events");
  if (!events.ok()) return 0;
  return CgroupKeyedValue(*events, "oom_kill").value_or(0);
}

std::optional<std::int64_t> CellCgroup::Peak() const {
  auto peak = ReadFile(path_ + "/memory.peak");
  if (!peak.ok()) return std::nullopt;
  return ParseInt(Trim(*peak));
}

Status CellCgroup::Remove() {
  if (path_.empty()) return Status::Ok();
  if (::rmdir(path_.c_str()) != 0) {
    const int err = errno;
    return MakeError(ErrorKind::kIo, fmt::format("cannot remove cgroup {}: {}", path_, std::strerror(err)));
  }
  path_.clear();
  return Status::Ok();
}

std::optional<std::int64_t> CgroupKeyedValue(const std::string& text, const std::string& key) {
  for (const std::string& line : Split(text, '\n')) {
    const std::vector<std::string> f = Split(Trim(line), ' ');
    if (f.size() == 2 && f[0] == key) return ParseInt(f[1]);
  }
  return std::nullopt;
}

}  // namespace dlbench::orchestrator
