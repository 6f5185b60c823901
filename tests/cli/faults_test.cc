// Faults around outputs, run on the real binary: an --out that cannot be
// written (a file, a folder that cannot be created, a full disk injected with
// CAPPLAN_FAULT_ENOSPC_AT) gives one line and exit 1 and leaves earlier
// results as they were; SIGINT and SIGTERM leave no partial files; an
// interrupted sweep resumes to the same bytes as an uninterrupted one.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util/shell.h"

namespace capplan::cli {
namespace {

namespace fs = std::filesystem;
using test_util::ReadText;
using test_util::Sh;

const std::string kBin = CAPPLAN_BIN;
const std::string kScenario = std::string(CAPPLAN_SOURCE_DIR) + "/tests/sim/sweep/data/small_open_loop.json";

// A fresh empty folder in the test's own scratch directory.
std::string Fresh(const std::string& name) {
  const std::string p = test_util::TestTempPath(name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

bool OneLine(const std::string& out) {
  return !out.empty() && out.find('\n') == out.size() - 1;
}

// Names in `dir`, sorted (hidden temporaries included).
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Faults, OutThatIsAFileIsOneLineError) {
  const std::string dir = Fresh("out_file");
  const std::string file = dir + "/taken";
  std::ofstream(file) << "keep me";
  std::string out;
  EXPECT_EQ(Sh(kBin + " simulate " + kScenario + " --out " + file, &out), 1) << out;
  EXPECT_TRUE(OneLine(out)) << out;
  EXPECT_NE(out.find("not a folder"), std::string::npos) << out;
  EXPECT_EQ(ReadText(file), "keep me");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"taken"});
}

TEST(Faults, OutWhereNoFolderCanBeMadeIsOneLineError) {
  std::string out;
  // /proc refuses new folders even to root.
  EXPECT_EQ(Sh(kBin + " simulate " + kScenario + " --out /proc/capplan_faults_test", &out), 1)
      << out;
  EXPECT_TRUE(OneLine(out)) << out;
  EXPECT_FALSE(fs::exists("/proc/capplan_faults_test"));
}

TEST(Faults, OutInAReadOnlyFolderIsOneLineError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders";
  const std::string dir = Fresh("read_only");
  ::chmod(dir.c_str(), 0555);
  std::string out;
  EXPECT_EQ(Sh(kBin + " simulate " + kScenario + " --out " + dir + "/run", &out), 1) << out;
  EXPECT_TRUE(OneLine(out)) << out;
  ::chmod(dir.c_str(), 0755);
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(Faults, DiskFullKeepsTheEarlierResultAndLeavesNothingElse) {
  const std::string dir = Fresh("disk_full");
  const std::string run = dir + "/run";
  std::string out;
  ASSERT_EQ(Sh(kBin + " simulate " + kScenario + " --out " + run, &out), 0) << out;
  const std::string summary = ReadText(run + "/summary.json");
  const std::string csv = ReadText(run + "/requests.csv");
  ASSERT_FALSE(summary.empty());
  // The second file of the new result (requests.csv) hits a full disk.
  for (const char* at : {"1", "2"}) {
    EXPECT_EQ(Sh("CAPPLAN_FAULT_ENOSPC_AT=" + std::string(at) + " " + kBin + " simulate " +
                     kScenario + " --set workload.seed=99 --out " + run,
                 &out),
              1)
        << out;
    EXPECT_TRUE(OneLine(out)) << out;
    EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
    EXPECT_EQ(ReadText(run + "/summary.json"), summary);
    EXPECT_EQ(ReadText(run + "/requests.csv"), csv);
    EXPECT_EQ(Entries(dir), std::vector<std::string>{"run"});
    EXPECT_EQ(Entries(run), (std::vector<std::string>{"requests.csv", "summary.json"}));
  }
  // A first result that cannot be completed leaves no folder at all.
  EXPECT_EQ(Sh("CAPPLAN_FAULT_ENOSPC_AT=2 " + kBin + " simulate " + kScenario + " --out " + dir +
                   "/new",
               &out),
            1)
      << out;
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"run"});
  // And a successful rerun replaces the earlier result whole.
  ASSERT_EQ(Sh(kBin + " simulate " + kScenario + " --set workload.seed=99 --out " + run, &out), 0)
      << out;
  EXPECT_NE(ReadText(run + "/summary.json"), summary);
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"run"});
}

TEST(Faults, DiskFullOnTraceOutKeepsTheEarlierFile) {
  const std::string dir = Fresh("trace_full");
  const std::string trace = dir + "/trace.json";
  std::ofstream(trace) << "earlier";
  std::string out;
  EXPECT_EQ(Sh("CAPPLAN_FAULT_ENOSPC_AT=1 " + kBin + " simulate " + kScenario + " --trace-out " +
                   trace,
               &out),
            1)
      << out;
  EXPECT_TRUE(OneLine(out)) << out;
  EXPECT_EQ(ReadText(trace), "earlier");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"trace.json"});
}

// Starts `cmd` (argv) in its own process, with `env` ("NAME=value") added to
// its environment when given; returns its pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& env = "") {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!env.empty()) ::putenv(const_cast<char*>(env.c_str()));
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    // Quiet: the test reads files, not output.
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid`; the signal that ended it, or 0 when it exited.
int WaitSignal(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

bool HasTemporaries(const std::string& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

TEST(Faults, InterruptedSimulateLeavesACompleteResultOrNone) {
  for (int sig : {SIGINT, SIGTERM}) {
    // Signals at several points of the run, the write included.
    for (int delay_ms : {50, 200, 400, 800}) {
      const std::string dir = Fresh("sim_signal");
      const pid_t pid = Spawn({kBin, "simulate", kScenario, "--set", "workload.num_requests=20000",
                               "--out", dir + "/run", "--trace-out", dir + "/trace.json"});
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      ::kill(pid, sig);
      const int got = WaitSignal(pid);
      EXPECT_TRUE(got == sig || got == 0) << got;
      EXPECT_FALSE(HasTemporaries(dir)) << "signal " << sig << " at " << delay_ms << " ms";
      if (fs::exists(dir + "/run")) {
        EXPECT_EQ(Entries(dir + "/run"), (std::vector<std::string>{"requests.csv", "summary.json"}));
        EXPECT_FALSE(ReadText(dir + "/run/summary.json").empty());
      }
    }
  }
}

std::vector<std::string> SweepArgs(const std::string& out, int jobs) {
  return {kBin,     "sweep", kScenario, "--grid", "workload.request_rate=1,2,4,8",
          "--grid", "deployment.kv_cache=bf16,fp8", "--set", "workload.num_requests=3000",
          "--jobs", std::to_string(jobs), "--out", out};
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Every file of `dir` by name, with its bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& name : Entries(dir)) files[name] = ReadText(dir + "/" + name);
  return files;
}

TEST(Faults, InterruptedSweepResumesToTheSameBytes) {
  const std::string root = Fresh("sweep_signal");
  std::string out;
  ASSERT_EQ(Sh(Joined(SweepArgs(root + "/whole", 1)), &out), 0) << out;
  const auto whole = Files(root + "/whole");
  ASSERT_EQ(whole.size(), 8u + 2u);  // 8 points, manifest.jsonl, sweep.csv

  const std::string cut = root + "/cut";
  // Interrupted once some points, but not all, are written: SIGINT arrives
  // at the 4th file (after the manifest and two points), whatever the
  // machine's speed.
  const pid_t pid = Spawn(SweepArgs(cut, 1), "CAPPLAN_FAULT_SIGINT_AT=4");
  EXPECT_EQ(WaitSignal(pid), SIGINT) << "the sweep finished before the signal; make it longer";
  EXPECT_FALSE(HasTemporaries(cut));
  EXPECT_FALSE(fs::exists(cut + "/sweep.csv"));
  const size_t kept = Entries(cut).size();
  EXPECT_LT(kept, whole.size());

  ASSERT_EQ(Sh(Joined(SweepArgs(cut, 1)), &out), 0) << out;
  EXPECT_EQ(Files(cut), whole);
}

TEST(Faults, SweepWithOneOrTwoJobsWritesTheSameFiles) {
  const std::string root = Fresh("sweep_jobs");
  std::string out;
  ASSERT_EQ(Sh(Joined(SweepArgs(root + "/one", 1)), &out), 0) << out;
  ASSERT_EQ(Sh(Joined(SweepArgs(root + "/two", 2)), &out), 0) << out;
  EXPECT_EQ(Files(root + "/one"), Files(root + "/two"));
}

TEST(Faults, ReportReadsARealSweepFolder) {
  const std::string root = Fresh("sweep_report");
  std::string out;
  ASSERT_EQ(Sh(Joined(SweepArgs(root + "/sweep", 2)), &out), 0) << out;
  ASSERT_EQ(Sh(kBin + " report " + root + "/sweep --out " + root + "/report.md", &out), 0) << out;
  EXPECT_FALSE(ReadText(root + "/report.md").empty());
}

TEST(Faults, SimulateErrorsDoNotNameAnotherCommandsFlag) {
  std::string out;
  // A prompt far beyond what the KV pool holds.
  EXPECT_NE(Sh(kBin + " simulate " + kScenario +
                   " --set workload.input_tokens.value=900000000 --set workload.num_requests=2",
               &out),
            0)
      << out;
  EXPECT_TRUE(OneLine(out)) << out;
  EXPECT_EQ(out.find("--context-tokens"), std::string::npos) << out;
}

}  // namespace
}  // namespace capplan::cli
