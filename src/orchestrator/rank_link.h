// The tasks of a group run (docs/distributed.md#several-hosts, adr/0010-launcher-tasks-as-ranks.md):
// `dlbench run m.yaml` under srun or torchrun without --shard. Task 0 runs the matrix and alone
// writes the store; tasks 1..W-1 connect to it over TCP, are checked to walk the same plan, and run
// their rank of each ddp cell when task 0 says so, supervising it themselves and sending task 0
// their rank's record. This header is the connection, the group as task 0 holds it, and a task's
// side.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"
#include "plan/selection.h"
#include "record/step.h"

namespace dlbench::orchestrator {

// One message: a JSON object, or a batch of one rank's step records.
// NOLINTNEXTLINE(bugprone-exception-escape): the implicit moves are nlohmann::json's and vector's, noexcept
struct LinkMessage {
  nlohmann::json json;  // an object with "type"; null for steps
  std::vector<record::StepRecord> steps;
  bool is_steps = false;
  // The cell order the message belongs to (task 0 numbers its `cell` orders 1, 2, ... and every
  // message about that cell, either way, carries the number: JSON as "cell_seq", steps in their
  // frame); 0 for a message about no cell (ping, pong, plan, end).
  std::int64_t cell_seq = 0;
  std::size_t bytes = 0;  // the frame's payload size
};

// A frame longer than this is a broken connection (a cell's steps of one rank fit many times).
inline constexpr std::uint32_t kMaxLinkFrameBytes = 512u << 20;

// The heartbeat (adr/0010-launcher-tasks-as-ranks.md): task 0 sends every task a `beat` this often
// for the whole run, and every task sends task 0 one as often for the whole run, idle or running a
// rank (adr/0012-monitoring-every-host.md). A side that hears nothing from its peer for the group's
// silence limit (kDefaultGroupSilenceS, DLBENCH_GROUP_SILENCE_S) takes the peer for gone: a host
// that vanished, a cut network or a stopped process, none of which closes the connection.
inline constexpr std::int64_t kLinkBeatIntervalNs = 1'000'000'000;
inline constexpr double kDefaultGroupSilenceS = 10;
inline constexpr double kMinGroupSilenceS = 2;
inline constexpr double kMaxGroupSilenceS = 3600;

// DLBENCH_GROUP_SILENCE_S's value (seconds, kMinGroupSilenceS..kMaxGroupSilenceS); kInvalidInput
// naming the variable otherwise.
Result<double> ParseGroupSilence(const std::string& text);

// A connected TCP socket carrying frames: u32 payload length | u32 kind (1: JSON, 2: step
// records: an i64 cell_seq, then 48 bytes each as record::StepRecord) | payload, little-endian.
// Owns the socket. One thread receives; sends may come from several (a LinkBeat's among them), and
// a LinkBeat may drain the peer's beats (DrainBeats) while the receiving thread is not receiving.
class RankLink {
 public:
  explicit RankLink(int fd);
  ~RankLink();
  RankLink(const RankLink&) = delete;
  RankLink& operator=(const RankLink&) = delete;

  Status Send(const nlohmann::json& message);
  Status SendSteps(const std::vector<record::StepRecord>& steps, std::int64_t cell_seq);
  // A `beat`, skipped (Ok) when the socket cannot take it now: a peer that stopped reading is the
  // silence its own side detects, and must not block the sender.
  Status SendBeat();
  // The next message, waiting at most `wait_ms` for it; nullopt when none came. Beats are taken
  // here and never returned. kIo once the peer closed the connection or it broke, kProtocol for a
  // malformed frame (closed() after either).
  Result<std::optional<LinkMessage>> Receive(int wait_ms);
  // Reads what the peer sent without waiting and drops the beats at its front, so that a peer's
  // beats are heard (silent_ns) and never pile up while the receiving thread has nothing to
  // receive (task 0 between a task's cells). Other messages stay for Receive, in order. Does
  // nothing while Receive runs; a closed or broken connection is left for Receive to report.
  void DrainBeats();
  // The next message until `deadline_ns` (MonotonicNowNs), which must be a JSON object of
  // `type`; an "refused" message becomes kInvalidInput with its text. `what` names the wait.
  Result<nlohmann::json> Expect(const std::string& type, std::int64_t deadline_ns, const std::string& what);
  bool closed() const { return closed_; }
  // Takes the peer for gone: the socket is shut down (the peer sees it closed) and closed() is true.
  void Close();
  // How long since a byte last arrived from the peer (or since the link was made), by Receive's and
  // DrainBeats' reads: meaningful while one of them keeps reading.
  std::int64_t silent_ns() const;
  // This end's address and the peer's, numeric ("10.77.0.2").
  const std::string& local_addr() const { return local_addr_; }
  const std::string& peer_addr() const { return peer_addr_; }

 private:
  std::optional<LinkMessage> Parse();
  Status SendFrame(const std::string& frame);
  int fd_ = -1;
  std::mutex send_mutex_;     // one frame at a time on the socket
  std::mutex receive_mutex_;  // Receive against DrainBeats: in_, malformed_
  std::string in_;
  std::atomic<bool> closed_{false};
  bool malformed_ = false;
  std::atomic<std::int64_t> heard_ns_{0};
  std::string local_addr_;
  std::string peer_addr_;
};

// Sends a `beat` on each of `links` every kLinkBeatIntervalNs from a thread of its own, until
// destroyed (which it must be before the links are). With `drain`, it also drains the peers' beats
// (RankLink::DrainBeats) four times an interval: task 0's, whose links are read only while a cell
// needs them.
class LinkBeat {
 public:
  explicit LinkBeat(std::vector<RankLink*> links, bool drain = false);
  ~LinkBeat();
  LinkBeat(const LinkBeat&) = delete;
  LinkBeat& operator=(const LinkBeat&) = delete;

 private:
  std::vector<RankLink*> links_;
  bool drain_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// What every task knows of the group before it forms.
struct GroupSettings {
  std::string addr;  // the rendezvous host: MASTER_ADDR, or the first host of SLURM_JOB_NODELIST
  int port = 0;      // launch::GroupPort
  int rank = 0;
  int world_size = 1;
  std::int64_t local_rank = 0;  // LOCAL_RANK / SLURM_LOCALID: the rank's device on its host
  std::string plan_hash;        // PlanHash of the task's own plan
  std::string resume;           // --resume's run (id or tag) as given; empty for a new run
  double join_timeout_s = 60;
  double silence_s = kDefaultGroupSilenceS;  // a peer heard from for no longer than this is gone
  // After a cell's own bounds (its timeout, then the graces of STOP and exit), how long task 0
  // still waits for a task's report of its rank before it gives up on it.
  double report_slack_s = 30;
};

// A TCP port that was free on every interface a moment ago (for a ddp cell's TCPStore, which
// rank 0's runner serves on every interface); kIo when none could be had.
Result<int> FreeTcpPort();

// Identifies a plan: the matrix text, the selection and the cells' ids in order, and the ids of
// those already finished (a resumed run's; none for a new run) (FNV-1a, hex).
std::string PlanHash(const std::string& matrix_text, const std::string& selection,
                     const std::vector<plan::Cell>& cells, const std::set<std::string>& finished = {});

// The plan task 0 runs, as it sends it to the tasks once it has its run (RankGroupLinks::AgreePlan):
// a resumed run's selection is the stored one, and its finished cells are skipped.
struct GroupPlan {
  std::int64_t run_id = 0;
  bool resumed = false;
  plan::Selection selection;
  std::set<std::string> finished;
  std::string plan_hash;  // PlanHash of the matrix, SelectionArgs(selection), the cells and finished
};

// A task as task 0 knows it. Its clock is related to task 0's once, when the group forms: the
// offset (its CLOCK_MONOTONIC minus task 0's) of the exchange with the shortest round trip of
// kClockPings, accurate to half that round trip.
struct GroupMember {
  int rank = 0;
  std::string host;  // its hostname
  std::int64_t local_rank = 0;
  std::int64_t clock_offset_ns = 0;
  std::int64_t clock_rtt_ns = 0;
  std::unique_ptr<RankLink> link;
};
inline constexpr int kClockPings = 8;

// Task 0's side of the group.
class RankGroupLinks {
 public:
  // Listens on addr:port (that address only, never the wildcard) and accepts the other
  // world_size - 1 tasks within join_timeout_s: each says its rank, world size, plan hash and the
  // run it resumes; a task whose plan, world size or resumed run differs, or a rank twice, is
  // refused (it is told why) and so is the group (kInvalidInput naming the task). Then relates
  // each task's clock and starts beating.
  static Result<std::unique_ptr<RankGroupLinks>> Form(const GroupSettings& settings);
  ~RankGroupLinks();
  RankGroupLinks(const RankGroupLinks&) = delete;
  RankGroupLinks& operator=(const RankGroupLinks&) = delete;

  int world_size() const { return world_size_; }
  const std::string& addr() const { return addr_; }            // as given (a name or a number)
  const std::string& bind_addr() const { return bind_addr_; }  // task 0's own, numeric
  const std::string& host() const { return host_; }
  std::int64_t local_rank() const { return local_rank_; }
  // The run the cells belong to (RunMatrix sets it): tasks name their log folder after it.
  std::int64_t run_id() const { return run_id_; }
  void set_run_id(std::int64_t id) { run_id_ = id; }
  // rank in 1..world_size - 1.
  GroupMember& member(int rank) { return members_[static_cast<std::size_t>(rank - 1)]; }
  std::int64_t silence_ns() const { return silence_ns_; }
  std::int64_t report_slack_ns() const { return report_slack_ns_; }
  // The number of the next cell order (1, 2, ...): every message about that cell carries it.
  std::int64_t NextCellSeq() { return ++cell_seq_; }
  // Sends every task the plan rank 0 runs and waits (up to join_timeout_s) for each to select the
  // same cells from its own matrix file (`plan_ok`); kInvalidInput with the task's reason when one
  // does not (`refused`), kIo when one is lost.
  Status AgreePlan(const GroupPlan& plan);
  // Tells every task the run ended (`ok`: its exit status is 0) and closes the connections.
  // Called by the destructor with ok false when not before.
  void End(bool ok, const std::string& message);

 private:
  RankGroupLinks() = default;
  int world_size_ = 1;
  std::string addr_;
  std::string bind_addr_;
  std::string host_;
  std::int64_t local_rank_ = 0;
  std::int64_t run_id_ = 0;
  std::int64_t silence_ns_ = 0;
  std::int64_t report_slack_ns_ = 0;
  double join_timeout_s_ = 60;
  std::int64_t cell_seq_ = 0;
  std::vector<GroupMember> members_;
  std::unique_ptr<LinkBeat> beat_;  // after members_: stops before the links close
  bool ended_ = false;
};

// A task's side: connects to task 0 (retrying until join_timeout_s: task 0 may start later),
// introduces itself and waits to be welcomed; kInvalidInput with task 0's reason when refused.
Result<std::unique_ptr<RankLink>> JoinGroup(const GroupSettings& settings);

// What a task needs to run its ranks: its plan's cells (the same as task 0's: the hashes agreed),
// the options of a cell as `run` makes them (log_dir is set per cell), and where a run's logs go.
struct TaskRequest {
  const std::vector<plan::Cell>* cells = nullptr;
  CellRunOptions options;
  std::function<std::string(std::int64_t run_id)> run_dir;
  // The task's plan under task 0's selection (GroupPlan): a resumed run's stored one may differ
  // from the options this task was given. Without it, the task's own cells must be the plan.
  std::function<Result<plan::SelectedPlan>(const plan::Selection&)> select_plan;
  int rank = 0;
  std::int64_t local_rank = 0;
  double silence_s = kDefaultGroupSilenceS;
};

// A task's life after JoinGroup: answers task 0's clock pings, checks task 0's plan against its
// own, runs its rank of each ddp cell it is told to (rank_task.cc), and returns when task 0 ends
// the run: Ok when task 0 said it ended well; kIo when the connection to task 0 was lost or task 0
// was silent for silence_s; kInvalidInput when the plans differ; kInternal with task 0's message
// otherwise.
Status ServeRankGroup(RankLink& link, const TaskRequest& request);

}  // namespace dlbench::orchestrator
