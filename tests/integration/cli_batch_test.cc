// `halite -b`, -s, --out-file and salt's exit codes as an operator meets them (issue 15 items
// 3 and 4), against four real halite-minions: one master and its minions for every case, so
// the real-server cost is paid once. The expected texts and codes are stock salt 3007.8's for
// the same commands (the transcripts are in docs/cli.md).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

// Each minion appends "start ID" and "end ID" to a log around its job; b1's job ends only once
// b3's has started. In a sliding window of two, b2's return frees the slot b3 starts in while
// b1 still runs; with fixed groups (b1, b2 then b3, b4) b1 would wait for b3 forever (its loop
// gives up after 30 s and logs "gave-up"). The minion's id comes from its command line
// (.../minion-ID/minion.conf), an ancestor of the shell cmd.run starts.
constexpr const char* kJob =
    "log=$1\n"
    "p=$PPID; me=\n"
    "while [ -z \"$me\" ] && [ \"$p\" -gt 1 ]; do\n"
    "  me=$(tr '\\0' '\\n' < /proc/$p/cmdline | sed -n "
    "'s|.*/minion-\\([^/]*\\)/minion.conf$|\\1|p')\n"
    "  p=$(cut -d' ' -f4 /proc/$p/stat)\n"
    "done\n"
    "echo \"start $me\" >> \"$log\"\n"
    "if [ \"$me\" = b1 ]; then\n"
    "  n=0\n"
    "  until grep -q '^start b3$' \"$log\"; do\n"
    "    n=$((n+1)); [ $n -gt 600 ] && { echo \"gave-up $me\" >> \"$log\"; break; }\n"
    "    sleep 0.05\n"
    "  done\n"
    "fi\n"
    "echo \"end $me\" >> \"$log\"\n";

class CliBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml = "gather_job_timeout: 1\n";
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    master_->Start();
    for (const char* id : {"b1", "b2", "b3", "b4"}) {
      MinionSpec m;
      m.id = id;
      m.master_ip = master_->ip();
      minions_.push_back(std::make_unique<MinionUnderTest>(tmp_.path(), m));
      minions_.back()->Start();
    }
    std::string last;
    ASSERT_TRUE(EveryMinionAnswers(*master_, "*", {"test.ping"}, 4, &last)) << last;
  }
  CommandResult Halite(const std::vector<std::string>& args) {
    return master_->Cli("halite", args, 120s);
  }
  // The stdout with every "jid:\n    <20 digits>\n" replaced by "jid:\n    JID\n".
  static std::string WithoutJids(const std::string& out) {
    return std::regex_replace(out, std::regex("jid:\n    [0-9]{20}\n"), "jid:\n    JID\n");
  }

  TempDir tmp_;
  std::unique_ptr<MasterUnderTest> master_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

TEST_F(CliBatchTest, BatchStaticOutFileAndExitCodesAreSalts) {
  {
    SCOPED_TRACE("-b 50%: a sliding window of two (50% of the four that answered the ping)");
    const auto script = tmp_.path() / "job.sh";
    const auto log = tmp_.path() / "job.log";
    WriteFile(script, kJob);
    auto r = Halite({"-b", "50%", "*", "cmd.run", "sh " + script.string() + " " + log.string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::istringstream lines(ReadFileOrEmpty(log));
    int running = 0;
    int most = 0;
    std::vector<std::string> started;
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.rfind("gave-up", 0), std::string::npos) << "fixed groups, not a window";
      if (line.rfind("start ", 0) == 0) {
        started.push_back(line.substr(6));
        most = std::max(most, ++running);
      } else if (line.rfind("end ", 0) == 0) {
        --running;
      }
    }
    EXPECT_EQ(most, 2) << ReadFileOrEmpty(log);
    std::sort(started.begin(), started.end());
    EXPECT_EQ(started, (std::vector<std::string>{"b1", "b2", "b3", "b4"}));
    // Salt's per-group lines: the first two together, then one at a time as slots free.
    EXPECT_EQ(r.out.find("\nExecuting run on ['b1', 'b2']\n\n"), 0u) << r.out;
    EXPECT_NE(r.out.find("\nExecuting run on ['b3']\n\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\nExecuting run on ['b4']\n\n"), std::string::npos) << r.out;
  }
  {
    SCOPED_TRACE("-b 1: one at a time, each return as salt's batch prints it");
    auto r = Halite({"-b", "1", "*", "test.ping"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string expected;
    for (const char* id : {"b1", "b2", "b3", "b4"}) {
      // Salt's nested sorts the keys: "b1" before "jid" (stock minions m001.. come after it).
      expected += std::string("\nExecuting run on ['") + id + "']\n\n" + id +
                  ":\n    True\njid:\n    JID\nretcode:\n    0\n";
    }
    EXPECT_EQ(WithoutJids(r.out), expected) << r.out;
  }
  {
    SCOPED_TRACE("batch exit code: the highest retcode; --failhard stops at the first");
    auto r = Halite({"-b", "2", "*", "cmd.run", "exit 3"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_EQ(r.err.find("ERROR: Minions returned"), std::string::npos) << r.err;
    auto hard = Halite({"-b", "1", "--failhard", "*", "cmd.run", "exit 3"});
    EXPECT_EQ(hard.exit_code, 3) << hard.out << hard.err;
    EXPECT_EQ(WithoutJids(hard.out),
              "\nExecuting run on ['b1']\n\nb1:\njid:\n    JID\nretcode:\n    3\n");
    EXPECT_NE(hard.err.find("Minion b1 returned with non-zero exit code. Batch run stopped due to "
                            "failhard"),
              std::string::npos)
        << hard.err;
    auto none = Halite({"-b", "1", "nobody*", "test.ping"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_EQ(none.out,
              "No minions matched the target. No command was sent, no jid was assigned.\n"
              "No minions matched the target.\n");
  }
  {
    SCOPED_TRACE("-s: every return at once (nested sorts the ids); --out-file");
    auto r = Halite({"-s", "*", "test.ping"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "b1:\n    True\nb2:\n    True\nb3:\n    True\nb4:\n    True\n");
    const auto file = tmp_.path() / "out.txt";
    WriteFile(file, "old text\n");
    auto to_file = Halite({"--out-file", file.string(), "-L", "b1,b2", "test.echo", "hi"});
    EXPECT_EQ(to_file.exit_code, 0) << to_file.err;
    EXPECT_EQ(to_file.out, "");
    const std::string first = ReadFileOrEmpty(file);
    EXPECT_TRUE(first == "b1:\n    hi\nb2:\n    hi\n" || first == "b2:\n    hi\nb1:\n    hi\n")
        << first;
    auto appended = Halite({"--out-file", file.string(), "--out-file-append", "b3", "test.ping"});
    EXPECT_EQ(appended.exit_code, 0) << appended.err;
    EXPECT_EQ(ReadFileOrEmpty(file), first + "b3:\n    True\n");
  }
  {
    SCOPED_TRACE("exit codes without -b");
    auto failed = Halite({"b1", "cmd.run", "exit 3"});
    EXPECT_EQ(failed.exit_code, 1) << failed.out;
    EXPECT_EQ(failed.err, "ERROR: Minions returned with non-zero exit code\n");
    auto falsy = Halite({"b1", "test.false"});  // False is a return, not a failure (retcode 0)
    EXPECT_EQ(falsy.exit_code, 0) << falsy.err;
    EXPECT_EQ(falsy.out, "b1:\n    False\n");
    auto none = Halite({"nobody*", "test.ping"});
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_EQ(none.out,
              "No minions matched the target. No command was sent, no jid was assigned.\n");
    EXPECT_EQ(none.err, "ERROR: No return received\n");
    // -p off a terminal: a line per return on stderr, then the summary and no returns.
    auto progress = Halite({"-p", "-L", "b1,b2", "test.ping"});
    EXPECT_EQ(progress.exit_code, 0) << progress.err;
    EXPECT_EQ(progress.err, "Returns: [1/2]\nReturns: [2/2]\n");
    EXPECT_EQ(progress.out,
              "\n\n-------------------------------------------\nSummary\n"
              "-------------------------------------------\n"
              "# of minions targeted: 2\n# of minions returned: 2\n"
              "# of minions that did not return: 0\n# of minions with errors: 0\n"
              "-------------------------------------------\n");
  }
  {
    SCOPED_TRACE(
        "--batch-safe-limit: at least the limit targeted runs as -b SIZE; --preview-target");
    auto r = Halite({"--batch-safe-limit", "3", "--batch-safe-size", "3", "*", "test.ping"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("\nNOTICE: Too many minions targeted, switching to batch execution.\n"
                         "\nExecuting run on ['b1', 'b2', 'b3']\n\n"),
              0u)
        << r.out;
    EXPECT_NE(r.out.find("\nExecuting run on ['b4']\n\n"), std::string::npos) << r.out;
    auto below = Halite({"--batch-safe-limit", "5", "-L", "b1,b2", "test.ping"});
    EXPECT_EQ(below.exit_code, 0) << below.err;
    EXPECT_TRUE(below.out == "b1:\n    True\nb2:\n    True\n" ||
                below.out == "b2:\n    True\nb1:\n    True\n")
        << below.out;
    auto preview = Halite({"--preview-target", "-L", "b1,b3,nobody", "test.ping"});
    EXPECT_EQ(preview.exit_code, 0) << preview.err;
    EXPECT_EQ(preview.out, "- b1\n- b3\n");
  }
  {
    SCOPED_TRACE("a minion that does not answer");
    minions_.back()->Kill();  // b4
    auto r = Halite({"-t", "1", "*", "test.ping"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("b4:\n    Minion did not return. [No response]\n    The minions may not "
                         "have all finished running"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.err, "ERROR: Minions returned with non-zero exit code\n");
    auto hidden = Halite({"--hide-timeout", "-t", "1", "*", "test.ping"});
    EXPECT_EQ(hidden.exit_code, 0) << hidden.out << hidden.err;
    EXPECT_EQ(hidden.out.find("b4"), std::string::npos) << hidden.out;
    auto summary = Halite({"--summary", "--hide-timeout", "-t", "1", "-L", "b1,b2", "test.ping"});
    EXPECT_NE(summary.out.find("\n\n\n-------------------------------------------\nSummary\n"
                               "-------------------------------------------\n"
                               "# of minions targeted: 2\n# of minions returned: 2\n"
                               "# of minions that did not return: 0\n"
                               "# of minions with errors: 0\n"
                               "-------------------------------------------\n"),
              std::string::npos)
        << summary.out;
    auto batch = Halite({"-b", "2", "-t", "1", "*", "test.ping"});
    EXPECT_EQ(batch.exit_code, 0) << batch.out << batch.err;
    EXPECT_EQ(batch.out.find("Minion b4 did not respond. No job will be sent.\n\nExecuting run on "
                             "['b1', 'b2']\n"),
              0u)
        << batch.out;
  }
}

}  // namespace
}  // namespace halite::testing
