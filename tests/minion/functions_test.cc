#include "halite/minion/functions.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "halite/minion/process.h"
#include "halite/version.h"
#include "test_util.h"

namespace halite::minion {
namespace {

using testing::Wire;
using wire::Value;

class FunctionsTest : public ::testing::Test {
 protected:
  FunctionResult Run(std::string_view fun, Value arg = Value::EmptyArray(),
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    JobCall call = ParseJobCall("20250101120000000001", fun, arg);
    const FunctionTable::Entry* entry = table_.Find(fun);
    if (entry == nullptr) return FunctionResult{NotAvailable(fun), {}};
    JobContext ctx;
    ctx.minion_id = "m1";
    ctx.grains = &grains_;
    ctx.functions = &table_;
    if (timeout.count() > 0) ctx.deadline = std::chrono::steady_clock::now() + timeout;
    ctx.find_job = [](std::string_view jid) {
      return jid == "running" ? Value::MapOf({{"jid", "running"}, {"fun", "test.sleep"}})
                              : Value::EmptyMap();
    };
    return entry->fn(call, ctx);
  }
  Value Kwargs(std::initializer_list<std::pair<std::string_view, Value>> items) {
    Value m = Value::MapOf(items);
    m.Set("__kwarg__", true);
    return m;
  }

  FunctionTable table_ = BuiltinFunctions();
  Value grains_ = Value::MapOf({{"id", "m1"},
                                {"os", "Debian"},
                                {"num_cpus", 2},
                                {"nested", Value::MapOf({{"a", Value::MapOf({{"b", "deep"}})}})}});
};

TEST_F(FunctionsTest, ParseJobCallSplitsKwargs) {
  JobCall call = ParseJobCall("1", "test.arg",
                              Value(wire::Array{"a", 2, "key=value", "not a=kwarg", "x==y",
                                                Kwargs({{"cwd", "/tmp"}, {"n", 3}})}));
  EXPECT_EQ(Wire(Value(call.args)), Wire(Value(wire::Array{"a", 2, "not a=kwarg", "x==y"})));
  EXPECT_EQ(Wire(call.kwargs), Wire(Value::MapOf({{"key", "value"}, {"cwd", "/tmp"}, {"n", 3}})));
}

TEST_F(FunctionsTest, TestFunctions) {
  EXPECT_EQ(Wire(Run("test.ping").result.ret), Wire(true));
  EXPECT_EQ(Wire(Run("test.echo", Value(wire::Array{"hello"})).result.ret), Wire("hello"));
  EXPECT_EQ(*Run("test.version").result.ret.str(), std::string("halite ") + kVersion);
  FunctionResult arg =
      Run("test.arg", Value(wire::Array{"a", 1, Kwargs({{"k", "v"}, {"__pub_jid", "1"}})}));
  EXPECT_EQ(Wire(arg.result.ret), Wire(Value::MapOf({{"args", Value(wire::Array{"a", 1})},
                                                     {"kwargs", Value::MapOf({{"k", "v"}})}})));
  FunctionResult sleep = Run("test.sleep", Value(wire::Array{"2"}));
  EXPECT_EQ(sleep.delay, std::chrono::milliseconds(2000));
  EXPECT_TRUE(sleep.result.success);
  FunctionResult bad_sleep = Run("test.sleep", Value(wire::Array{"soon"}));
  EXPECT_FALSE(bad_sleep.result.success);
  EXPECT_EQ(bad_sleep.result.retcode, 1);
}

TEST_F(FunctionsTest, UnknownFunctionIsNotAvailable) {
  JobResult r = Run("no.such").result;
  EXPECT_EQ(*r.ret.str(), "'no.such' is not available.");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.retcode, 1);
  EXPECT_EQ(r.out, "nested");
}

TEST_F(FunctionsTest, GrainsFunctions) {
  EXPECT_EQ(Wire(Run("grains.items").result.ret), Wire(grains_));
  EXPECT_EQ(Wire(Run("grains.item", Value(wire::Array{"os", "missing", "nested:a:b"})).result.ret),
            Wire(Value::MapOf({{"os", "Debian"}, {"missing", ""}, {"nested:a:b", "deep"}})));
  EXPECT_EQ(Wire(Run("grains.get", Value(wire::Array{"nested:a"})).result.ret),
            Wire(Value::MapOf({{"b", "deep"}})));
  EXPECT_EQ(Wire(Run("grains.get", Value(wire::Array{"nope", "dflt"})).result.ret), Wire("dflt"));
}

TEST_F(FunctionsTest, ListFunctionsAndFindJob) {
  Value all = Run("sys.list_functions").result.ret;
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.array()->size(), table_.Names().size());
  Value test = Run("sys.list_functions", Value(wire::Array{"test"})).result.ret;
  EXPECT_EQ(Wire(test), Wire(Value(wire::Array{"test.arg", "test.echo", "test.false", "test.ping",
                                               "test.sleep", "test.true", "test.version"})));
  Value cmd = Run("sys.list_functions", Value(wire::Array{"cmd.*"})).result.ret;
  EXPECT_EQ(Wire(cmd), Wire(Value(wire::Array{"cmd.run", "cmd.run_all"})));
  EXPECT_EQ(*Run("saltutil.find_job", Value(wire::Array{"running"})).result.ret.FindStr("fun"),
            "test.sleep");
  EXPECT_TRUE(Run("saltutil.find_job", Value(wire::Array{"other"})).result.ret.map()->empty());
}

TEST_F(FunctionsTest, CmdRunMergesStderrAndStripsTrailingWhitespace) {
  JobResult r = Run("cmd.run", Value(wire::Array{"echo out; echo err >&2; echo; exit 3"})).result;
  EXPECT_EQ(*r.ret.str(), "out\nerr");
  EXPECT_EQ(r.retcode, 3);
  EXPECT_FALSE(r.success);
  JobResult ok = Run("cmd.run", Value(wire::Array{"pwd", Kwargs({{"cwd", "/"}})})).result;
  EXPECT_EQ(*ok.ret.str(), "/");
  EXPECT_EQ(ok.retcode, 0);
  EXPECT_TRUE(ok.success);
}

TEST_F(FunctionsTest, CmdRunAllSeparatesStreams) {
  JobResult r =
      Run("cmd.run_all", Value(wire::Array{"printf 'a\\n'; printf 'b\\n' >&2; exit 1"})).result;
  ASSERT_TRUE(r.ret.is_map());
  EXPECT_EQ(*r.ret.FindStr("stdout"), "a");
  EXPECT_EQ(*r.ret.FindStr("stderr"), "b");
  EXPECT_EQ(r.ret.Find("retcode")->int64(), 1);
  EXPECT_GT(r.ret.Find("pid")->int64().value_or(0), 0);
  EXPECT_EQ(r.retcode, 1);
}

TEST_F(FunctionsTest, CmdRunTimeoutKillsTheCommand) {
  auto start = std::chrono::steady_clock::now();
  JobResult r = Run("cmd.run", Value(wire::Array{"sleep 30", Kwargs({{"timeout", 1}})})).result;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(*r.ret.str(), "sleep 30 : Timed out after 1 seconds");
  EXPECT_EQ(r.retcode, 1);
  // The job deadline works the same way.
  JobResult job =
      Run("cmd.run_all", Value(wire::Array{"sleep 30"}), std::chrono::milliseconds(500)).result;
  EXPECT_EQ(job.retcode, 1);
  EXPECT_NE(job.ret.FindStr("stdout")->find("Timed out"), std::string::npos);
}

TEST(ProcessTest, DeadlineKillsTheWholeProcessGroup) {
  testing::TempDir dir;
  std::string pid_file = (dir.path() / "pid").string();
  ProcessOptions o;
  // The grandchild (the backgrounded sleep) would keep the pipe open if it survived.
  o.command = "sleep 60 & echo $! > " + pid_file + "; wait";
  o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  auto r = RunShell(o);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->timed_out);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(testing::WaitFor([&] { return kill(grandchild, 0) != 0; }));
}

TEST(ProcessTest, CancelStopsTheCommand) {
  std::atomic<bool> cancelled{true};  // e.g. the minion is stopping
  ProcessOptions o;
  o.command = "sleep 60";
  o.cancelled = &cancelled;
  auto start = std::chrono::steady_clock::now();
  auto r = RunShell(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(ProcessTest, MissingDirectoryIsAnError) {
  ProcessOptions o;
  o.command = "true";
  o.cwd = "/nonexistent/dir";
  EXPECT_FALSE(RunShell(o).ok());
  EXPECT_EQ(RStrip("a b \n\t "), "a b");
}

}  // namespace
}  // namespace halite::minion
