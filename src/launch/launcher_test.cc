#include "launch/launcher.h"

#include <gtest/gtest.h>

namespace dlbench::launch {
namespace {

// The variables srun set for task 1 of `srun -n 2` on this machine (printed by `env` in the task).
Environment SrunTask1() {
  return {{"SLURM_JOB_ID", "1"},        {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", "1"},        {"SLURM_NTASKS", "2"},
          {"SLURM_LOCALID", "1"},       {"SLURM_NODEID", "0"},
          {"SLURM_JOB_NODELIST", "vm"}, {"SLURM_CONF", "/tmp/x/slurm.conf"}};
}

// Task 3 of `sbatch --array=1-7:2` (as printed there): index 2 of 4.
Environment ArrayTask5() {
  return {{"SLURM_JOB_ID", "9"},         {"SLURM_PROCID", "0"},           {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", "0"},         {"SLURM_JOB_NODELIST", "vm"},    {"SLURM_ARRAY_JOB_ID", "3"},
          {"SLURM_ARRAY_TASK_ID", "5"},  {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"},
          {"SLURM_ARRAY_TASK_MAX", "7"}, {"SLURM_ARRAY_TASK_STEP", "2"}};
}

Environment Torchrun(const std::string& rank, const std::string& world) {
  return {{"RANK", rank},           {"WORLD_SIZE", world},
          {"LOCAL_RANK", rank},     {"LOCAL_WORLD_SIZE", world},
          {"GROUP_RANK", "0"},      {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "none"}};
}

std::string ErrorOf(const Environment& env) {
  auto c = ReadLaunchContext(env);
  if (c.ok()) return "(no error)";
  EXPECT_EQ(c.error().kind, ErrorKind::kInvalidInput);
  return c.error().message;
}

TEST(LaunchContextTest, NoLauncherVariablesIsNoLauncherAndNoShard) {
  auto c = ReadLaunchContext({{"PATH", "/usr/bin"}, {"NCCL_DEBUG", "INFO"}, {"MASTER_ADDR", "h"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->launcher, Launcher::kNone);
  EXPECT_FALSE(c->rank);
  EXPECT_EQ(c->seen.at("MASTER_ADDR"), "h");
  auto shard = ShardFromLauncher(*c);
  ASSERT_FALSE(shard.ok());
  for (const char* name : {"RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_ARRAY_TASK_ID",
                           "SLURM_ARRAY_TASK_COUNT", "--shard K/N"})
    EXPECT_NE(shard.error().message.find(name), std::string::npos) << name << ": " << shard.error().message;
}

TEST(LaunchContextTest, SrunTaskIsItsProcIdOfItsTaskCount) {
  auto c = ReadLaunchContext(SrunTask1());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->launcher, Launcher::kSlurm);
  EXPECT_EQ(c->rank->value, 1);
  EXPECT_EQ(c->rank->from, "SLURM_PROCID");
  EXPECT_EQ(c->world_size->value, 2);
  EXPECT_EQ(c->world_size->from, "SLURM_NTASKS");
  EXPECT_EQ(c->local_rank->value, 1);
  EXPECT_EQ(c->node_rank->value, 0);
  EXPECT_EQ(*c->master_addr, "vm");
  EXPECT_EQ(c->master_addr_from, "SLURM_JOB_NODELIST (first host)");
  EXPECT_FALSE(c->master_port);
  EXPECT_EQ(c->seen.count("SLURM_CONF"), 0u) << "only the contract's variables are recorded";
  auto shard = ShardFromLauncher(*c);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(shard->index, 2);
  EXPECT_EQ(shard->count, 2);
  EXPECT_EQ(shard->from, "slurm: SLURM_PROCID + 1 of SLURM_NTASKS");
  const nlohmann::json j = ToJson(*c);
  EXPECT_EQ(j["launcher"], "slurm");
  EXPECT_EQ(j["rank"]["value"], 1);
  EXPECT_EQ(j["rank"]["from"], "SLURM_PROCID");
  EXPECT_EQ(j["master_addr"]["value"], "vm");
  EXPECT_EQ(j["seen"]["SLURM_NTASKS"], "2");
  EXPECT_FALSE(j.contains("master_port"));
}

TEST(LaunchContextTest, ABatchScriptOfSeveralTasksIsNotOneOfThem) {
  // What sbatch -n 2 gave its script here: SLURM_PROCID 0 of 2, but no step; it runs once.
  Environment env = SrunTask1();
  env.erase("SLURM_STEP_ID");
  env["SLURM_PROCID"] = "0";
  env["SLURM_LOCALID"] = "0";
  const std::string e = ErrorOf(env);
  EXPECT_NE(e.find("SLURM_NTASKS=2 but SLURM_STEP_ID is not set"), std::string::npos) << e;
  EXPECT_NE(e.find("srun"), std::string::npos) << e;
  env["SLURM_NTASKS"] = "1";  // a one-task batch job is the whole group
  auto c = ReadLaunchContext(env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->world_size->value, 1);
}

TEST(LaunchContextTest, AJobArrayTaskIsItsIndexAmongTheArraysTasks) {
  auto c = ReadLaunchContext(ArrayTask5());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->launcher, Launcher::kSlurmArray);
  EXPECT_EQ(c->rank->value, 2);  // 1, 3, 5, 7: 5 is the third
  EXPECT_EQ(c->world_size->value, 4);
  auto shard = ShardFromLauncher(*c);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(shard->index, 3);
  EXPECT_EQ(shard->count, 4);
  EXPECT_EQ(ToJson(*c)["launcher"], "slurm_array");
}

TEST(LaunchContextTest, SrunTasksInsideAnArrayTaskSplitItsShardFurther) {
  Environment env = ArrayTask5();
  env["SLURM_STEP_ID"] = "0";
  env["SLURM_NTASKS"] = "2";
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "1";
  auto c = ReadLaunchContext(env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rank->value, 2 * 2 + 1);
  EXPECT_EQ(c->world_size->value, 4 * 2);
}

TEST(LaunchContextTest, AnArrayOfIrregularIndicesCannotBeNumbered) {
  // sbatch --array=1,4,9 gave each task COUNT 3, MIN 1, MAX 9, STEP 1 here.
  Environment env = ArrayTask5();
  env["SLURM_ARRAY_TASK_ID"] = "4";
  env["SLURM_ARRAY_TASK_COUNT"] = "3";
  env["SLURM_ARRAY_TASK_MAX"] = "9";
  env["SLURM_ARRAY_TASK_STEP"] = "1";
  const std::string e = ErrorOf(env);
  EXPECT_NE(e.find("SLURM_ARRAY_TASK_ID=4"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot be numbered"), std::string::npos) << e;
  env = ArrayTask5();
  env["SLURM_ARRAY_TASK_ID"] = "4";  // between 3 and 5 of 1-7:2
  EXPECT_NE(ErrorOf(env).find("cannot be numbered"), std::string::npos);
  env = ArrayTask5();
  env.erase("SLURM_ARRAY_TASK_MIN");
  EXPECT_NE(ErrorOf(env).find("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN is not"),
            std::string::npos);
}

TEST(LaunchContextTest, TorchrunIsReadWithItsRendezvous) {
  auto c = ReadLaunchContext(Torchrun("1", "2"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->launcher, Launcher::kTorchrun);
  EXPECT_EQ(c->rank->value, 1);
  EXPECT_EQ(c->rank->from, "RANK");
  EXPECT_EQ(c->world_size->value, 2);
  EXPECT_EQ(c->local_rank->from, "LOCAL_RANK");
  EXPECT_EQ(c->node_rank->from, "GROUP_RANK");
  EXPECT_EQ(*c->master_addr, "127.0.0.1");
  EXPECT_EQ(c->master_port->value, 29500);
  EXPECT_TRUE(c->overridden.empty());
}

TEST(LaunchContextTest, TorchrunTakesPrecedenceOverSlurmAndSaysSo) {
  Environment env = SrunTask1();
  for (const auto& [k, v] : Torchrun("3", "4")) env[k] = v;
  env["LOCAL_RANK"] = "1";
  env["LOCAL_WORLD_SIZE"] = "2";
  auto c = ReadLaunchContext(env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->launcher, Launcher::kTorchrun);
  EXPECT_EQ(c->rank->value, 3);
  EXPECT_EQ(*c->master_addr, "127.0.0.1");
  bool procid_named = false;
  for (const std::string& o : c->overridden)
    procid_named = procid_named || o.rfind("SLURM_PROCID=1 ", 0) == 0;
  EXPECT_TRUE(procid_named);
  // Slurm's values are not judged when torchrun's are used.
  env["SLURM_PROCID"] = "junk";
  EXPECT_TRUE(ReadLaunchContext(env).ok());
}

TEST(LaunchContextTest, MalformedOrInconsistentValuesNameTheVariable) {
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  const Case torchrun_cases[] = {
      {"RANK", "2", "RANK=2 is not below WORLD_SIZE=2"},
      {"RANK", "-1", "RANK='-1': not a decimal integer"},
      {"RANK", "1x", "RANK='1x': not a decimal integer"},
      {"RANK", "", "RANK='': not a decimal integer"},
      {"RANK", " 1", "RANK=' 1': not a decimal integer"},
      {"WORLD_SIZE", "0", "WORLD_SIZE=0: out of range [1, 1048576]"},
      {"WORLD_SIZE", "99999999999999999999",
       "WORLD_SIZE='99999999999999999999': not a decimal integer of at most 18"},
      {"WORLD_SIZE", "1048577", "WORLD_SIZE=1048577: out of range [1, 1048576]"},
      {"LOCAL_RANK", "2", "LOCAL_RANK=2 is above RANK=1"},
      {"MASTER_PORT", "0", "MASTER_PORT=0: out of range [1, 65535]"},
      {"MASTER_PORT", "65536", "MASTER_PORT=65536: out of range [1, 65535]"},
      {"MASTER_ADDR", "", "MASTER_ADDR: empty or longer than 255"},
      {"GROUP_RANK", "a", "GROUP_RANK='a': not a decimal integer"},
  };
  for (const Case& k : torchrun_cases) {
    Environment env = Torchrun("1", "2");
    env[k.name] = k.value;
    const std::string e = ErrorOf(env);
    EXPECT_NE(e.find(k.expected), std::string::npos) << k.name << "=" << k.value << ": " << e;
  }
  const Case slurm_cases[] = {
      {"SLURM_PROCID", "2", "SLURM_PROCID=2 is not below SLURM_NTASKS=2"},
      {"SLURM_NTASKS", "two", "SLURM_NTASKS='two': not a decimal integer"},
      {"SLURM_LOCALID", "5", "SLURM_LOCALID=5 is above SLURM_PROCID=1"},
      {"SLURM_NODEID", "-3", "SLURM_NODEID='-3'"},
      {"SLURM_JOB_NODELIST", "n[01-02", "SLURM_JOB_NODELIST='n[01-02': a '[' without its ']'"},
      {"SLURM_JOB_NODELIST", "", "SLURM_JOB_NODELIST='': no host in the list"},
  };
  for (const Case& k : slurm_cases) {
    Environment env = SrunTask1();
    env[k.name] = k.value;
    const std::string e = ErrorOf(env);
    EXPECT_NE(e.find(k.expected), std::string::npos) << k.name << "=" << k.value << ": " << e;
  }
  Environment env = Torchrun("0", "1");
  env.erase("WORLD_SIZE");
  EXPECT_NE(ErrorOf(env).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  env = SrunTask1();
  env.erase("SLURM_PROCID");
  EXPECT_NE(ErrorOf(env).find("SLURM_NTASKS is set but SLURM_PROCID is not"), std::string::npos);
}

// The group port (run without --shard under a launcher): DLBENCH_GROUP_PORT, else torchrun's
// MASTER_PORT + 1, else srun's job and step; each malformed value named.
TEST(GroupPortTest, ComesFromTheVariableThenTorchrunThenTheSlurmJobStep) {
  auto torchrun = ReadLaunchContext(Torchrun("1", "2"));
  ASSERT_TRUE(torchrun.ok());
  auto port = GroupPort(*torchrun, Torchrun("1", "2"));
  ASSERT_TRUE(port.ok()) << port.error().message;
  EXPECT_EQ(port->value, 29501);
  EXPECT_EQ(port->from, "MASTER_PORT + 1");

  Environment slurm = SrunTask1();  // job 1, step 0
  auto srun = ReadLaunchContext(slurm);
  ASSERT_TRUE(srun.ok());
  port = GroupPort(*srun, slurm);
  ASSERT_TRUE(port.ok()) << port.error().message;
  EXPECT_EQ(port->value, 20064);  // 20000 + (1 x 64 + 0) mod 40000
  slurm["SLURM_JOB_ID"] = "1000";
  slurm["SLURM_STEP_ID"] = "3";
  srun = ReadLaunchContext(slurm);
  port = GroupPort(*srun, slurm);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(port->value, 20000 + (1000 * 64 + 3) % 40000);

  slurm["DLBENCH_GROUP_PORT"] = "31000";
  port = GroupPort(*srun, slurm);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(port->value, 31000);
  EXPECT_EQ(port->from, "DLBENCH_GROUP_PORT");
  slurm["DLBENCH_GROUP_PORT"] = "70000";
  port = GroupPort(*srun, slurm);
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.error().message.find("DLBENCH_GROUP_PORT=70000"), std::string::npos) << port.error().message;

  Environment high = Torchrun("0", "2");
  high["MASTER_PORT"] = "65535";
  auto top = ReadLaunchContext(high);
  ASSERT_TRUE(top.ok());
  port = GroupPort(*top, high);
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.error().message.find("DLBENCH_GROUP_PORT"), std::string::npos) << port.error().message;
  auto none = ReadLaunchContext({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(GroupPort(*none, {}).ok());
}

TEST(FirstHostTest, TakesTheFirstHostOfASlurmHostList) {
  EXPECT_EQ(*FirstHost("vm"), "vm");
  EXPECT_EQ(*FirstHost("node[01-04,07],gpu3"), "node01");
  EXPECT_EQ(*FirstHost("node[07,01-04]"), "node07");
  EXPECT_EQ(*FirstHost("a-[2-3]-ib,b1"), "a-2-ib");
  EXPECT_EQ(*FirstHost("rack[1-2]-n[001-004]"), "rack1-n001");
  EXPECT_EQ(*FirstHost("gpu3,node[01-04]"), "gpu3");
  EXPECT_FALSE(FirstHost("").ok());
  EXPECT_FALSE(FirstHost(",a").ok());
  EXPECT_FALSE(FirstHost("n[]").ok());
  EXPECT_FALSE(FirstHost("n]1").ok());
  EXPECT_FALSE(FirstHost(std::string(300, 'h')).ok());
}

TEST(LaunchContextTest, InheritedVariablesCoverEveryVariableTheContractReads) {
  // A runner must never see what this module reads: each of them matches the stripped list.
  Environment env = SrunTask1();
  for (const auto& [k, v] : ArrayTask5()) env[k] = v;
  for (const auto& [k, v] : Torchrun("0", "1")) env[k] = v;
  auto c = ReadLaunchContext(env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_GE(c->seen.size(), 20u);
  for (const auto& [name, value] : c->seen) {
    bool stripped = false;
    for (const std::string& p : InheritedLauncherVariables()) {
      stripped = stripped || (p.back() == '*' ? name.rfind(p.substr(0, p.size() - 1), 0) == 0 : name == p);
    }
    EXPECT_TRUE(stripped) << name;
  }
}

std::string SweepOf(const Environment& env) {
  auto c = ReadLaunchContext(env);
  if (!c.ok()) return "(context error) " + c.error().message;
  auto sweep = SweepFromLauncher(*c);
  if (!sweep.ok()) return "(error) " + sweep.error().message;
  return sweep->has_value() ? (*sweep)->id + " from " + (*sweep)->from : "(none)";
}

TEST(SweepFromLauncherTest, EachLaunchersJobNamesTheSweepItsTasksShare) {
  EXPECT_EQ(SweepOf(SrunTask1()), "slurm-1.0 from SLURM_JOB_ID.SLURM_STEP_ID");
  Environment other_task = SrunTask1();
  other_task["SLURM_PROCID"] = "0";
  other_task["SLURM_LOCALID"] = "0";
  EXPECT_EQ(SweepOf(other_task), SweepOf(SrunTask1()));
  Environment next_step = SrunTask1();
  next_step["SLURM_STEP_ID"] = "1";
  EXPECT_EQ(SweepOf(next_step), "slurm-1.1 from SLURM_JOB_ID.SLURM_STEP_ID") << "another srun, another sweep";
  // Every task of an array is a job of its own: the array's job id is the sweep.
  EXPECT_EQ(SweepOf(ArrayTask5()), "slurm-3 from SLURM_ARRAY_JOB_ID");
  Environment array_task7 = ArrayTask5();
  array_task7["SLURM_JOB_ID"] = "11";
  array_task7["SLURM_ARRAY_TASK_ID"] = "7";
  EXPECT_EQ(SweepOf(array_task7), "slurm-3 from SLURM_ARRAY_JOB_ID");
  // torchrun's default run id "none" is every torchrun's: no sweep.
  EXPECT_EQ(SweepOf(Torchrun("1", "2")), "(none)");
  Environment named = Torchrun("1", "2");
  named["TORCHELASTIC_RUN_ID"] = "job-17";
  EXPECT_EQ(SweepOf(named), "torchrun-job-17 from TORCHELASTIC_RUN_ID");
  named["TORCHELASTIC_RUN_ID"] = "a b";
  EXPECT_NE(SweepOf(named).find("(error) TORCHELASTIC_RUN_ID gives the sweep name 'torchrun-a b'"),
            std::string::npos)
      << SweepOf(named);
  EXPECT_EQ(SweepOf({{"PATH", "/usr/bin"}}), "(none)");
}

TEST(SweepFromLauncherTest, SweepNamesAreBoundedAndShellSafe) {
  EXPECT_TRUE(IsSweepName("nightly-2026.12_05"));
  EXPECT_TRUE(IsSweepName(std::string(kMaxSweepName, 'a')));
  EXPECT_FALSE(IsSweepName(std::string(kMaxSweepName + 1, 'a')));
  EXPECT_FALSE(IsSweepName(""));
  for (const char* bad : {"a b", "a:b", "a/b", "$x", "a'b"}) EXPECT_FALSE(IsSweepName(bad)) << bad;
}

TEST(LaunchContextTest, ProcessEnvironmentIsEnviron) {
  ASSERT_EQ(setenv("DLBENCH_LAUNCH_TEST", "a=b", 1), 0);
  const Environment env = ProcessEnvironment();
  unsetenv("DLBENCH_LAUNCH_TEST");
  EXPECT_EQ(env.at("DLBENCH_LAUNCH_TEST"), "a=b");
}

}  // namespace
}  // namespace dlbench::launch
