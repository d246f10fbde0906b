// external_auth ACLs in Salt's forms, with expectations read off salt/utils/minions.py
// (CkMinions.auth_check, spec_check, fill_auth_list) and salt/netapi sum_permissions.
#include "halite/auth/acl.h"

#include <gtest/gtest.h>

#include "halite/auth/eauth.h"
#include "halite/config/yaml.h"
#include "halite/wire/glob.h"

namespace halite::auth {
namespace {

wire::Value Yaml(const std::string& text) {
  auto node = config::ParseYaml(text);
  EXPECT_TRUE(node.ok());
  return AclYamlToValue(*node);
}

wire::Array List(const std::string& text) { return *Yaml(text).array(); }

// web1, web2 and db1; compound targets as "L@a,b" or a glob.
Result<std::set<std::string>> Resolve(const wire::Value& tgt, std::string_view type) {
  const std::set<std::string> all{"web1", "web2", "db1"};
  std::set<std::string> out;
  const std::string t = *tgt.str();
  for (const auto& id : all) {
    if ((type == "list" || t.rfind("L@", 0) == 0)) {
      std::string items = t.rfind("L@", 0) == 0 ? t.substr(2) : t;
      if (("," + items + ",").find("," + id + ",") != std::string::npos) out.insert(id);
    } else if (wire::GlobMatch(t, id)) {
      out.insert(id);
    }
  }
  return out;
}

TEST(AclTest, FunctionRegexesMatchAtTheStartOnly) {
  const wire::Array acl = List("['test.*', 'grains.item']");
  EXPECT_TRUE(AuthCheck(acl, "test.ping", wire::Value::EmptyArray(), "*", "glob", Resolve));
  EXPECT_TRUE(AuthCheck(acl, "grains.items", wire::Value::EmptyArray(), "*", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", wire::Value::EmptyArray(), "*", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "xtest.ping", wire::Value::EmptyArray(), "*", "glob", Resolve));
  EXPECT_FALSE(AuthCheck({}, "test.ping", wire::Value::EmptyArray(), "*", "glob", Resolve));
}

TEST(AclTest, TargetScopedEntriesAllowOnlyTheirMinions) {
  const wire::Array acl = List("[{'web*': ['cmd.run', 'test.*']}]");
  EXPECT_TRUE(AuthCheck(acl, "cmd.run", Yaml("[ls]"), "web1", "glob", Resolve));
  EXPECT_TRUE(AuthCheck(acl, "cmd.run", Yaml("[ls]"), "web*", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", Yaml("[ls]"), "*", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", Yaml("[ls]"), "db1", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "pkg.install", Yaml("[vim]"), "web1", "glob", Resolve));
}

TEST(AclTest, ArgumentConditionsAreRegexesAndNullAllowsAny) {
  const wire::Array acl =
      List("[{'*': [{'cmd.run': {'args': ['ls.*', null], 'kwargs': {'cwd': '/tmp'}}}]}]");
  auto kw = [](const char* cwd) { return wire::Value::MapOf({{"__kwarg__", true}, {"cwd", cwd}}); };
  wire::Value good(wire::Array{"ls -l", "anything", kw("/tmp")});
  wire::Value bad_arg(wire::Array{"rm -rf /", "x", kw("/tmp")});
  wire::Value bad_kwarg(wire::Array{"ls", "x", kw("/etc")});
  wire::Value too_few(wire::Array{"ls", kw("/tmp")});
  EXPECT_TRUE(AuthCheck(acl, "cmd.run", good, "web1", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", bad_arg, "web1", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", bad_kwarg, "web1", "glob", Resolve));
  EXPECT_FALSE(AuthCheck(acl, "cmd.run", too_few, "web1", "glob", Resolve));
}

TEST(AclTest, ACompoundJobNeedsOneAllowedFunction) {
  // Salt's auth_check returns True at the first function an entry allows.
  const wire::Array acl = List("['test.*']");
  wire::Value funs(wire::Array{"test.ping", "cmd.run"});
  wire::Value args(wire::Array{wire::Value::EmptyArray(), wire::Value(wire::Array{"id"})});
  EXPECT_TRUE(AuthCheck(acl, funs, args, "*", "glob", Resolve));
  wire::Value none(wire::Array{"cmd.run", "pkg.install"});
  EXPECT_FALSE(AuthCheck(acl, none, args, "*", "glob", Resolve));
}

TEST(AclTest, AResolverFailureDenies) {
  const wire::Array acl = List("[{'web*': ['.*']}]");
  auto failing = [](const wire::Value&, std::string_view) -> Result<std::set<std::string>> {
    return Error::Unavailable("disk");
  };
  EXPECT_FALSE(AuthCheck(acl, "test.ping", wire::Value::EmptyArray(), "web1", "glob", failing));
}

TEST(AclTest, SpecCheckReadsRunnerAndWheelForms) {
  const wire::Value none;
  EXPECT_TRUE(*SpecCheck(List("['@runner']"), "jobs.list_jobs", none, none, SpecForm::kRunner));
  EXPECT_TRUE(*SpecCheck(List("['@runners']"), "manage.up", none, none, SpecForm::kRunner));
  EXPECT_FALSE(*SpecCheck(List("['@runner']"), "key.list_all", none, none, SpecForm::kWheel));
  EXPECT_TRUE(*SpecCheck(List("['@wheel']"), "key.list_all", none, none, SpecForm::kWheel));
  // @jobs names the runner module.
  EXPECT_TRUE(*SpecCheck(List("['@jobs']"), "jobs.lookup_jid", none, none, SpecForm::kRunner));
  EXPECT_FALSE(*SpecCheck(List("['@jobs']"), "manage.up", none, none, SpecForm::kRunner));
  // {"@runner": [regex on module.function]}, {"@jobs": [regex on the function]}.
  const wire::Array scoped = List("[{'@runner': ['jobs\\.list_.*']}, {'@manage': ['up']}]");
  EXPECT_TRUE(*SpecCheck(scoped, "jobs.list_jobs", none, none, SpecForm::kRunner));
  EXPECT_FALSE(*SpecCheck(scoped, "jobs.lookup_jid", none, none, SpecForm::kRunner));
  EXPECT_TRUE(*SpecCheck(scoped, "manage.up", none, none, SpecForm::kRunner));
  EXPECT_FALSE(*SpecCheck(scoped, "manage.down", none, none, SpecForm::kRunner));
  // Function ACLs do not open runners, and no list allows nothing.
  EXPECT_FALSE(*SpecCheck(List("['.*']"), "manage.up", none, none, SpecForm::kRunner));
  EXPECT_FALSE(*SpecCheck({}, "manage.up", none, none, SpecForm::kRunner));
  auto bad = SpecCheck(List("['@runner']"), "nodot", none, none, SpecForm::kRunner);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "A command invocation error occurred: Check syntax.");
}

TEST(AclTest, FillAuthListTakesNamesGroupsAndStarOnlyWithoutAName) {
  const wire::Value provider = Yaml(
      "alice: ['test.*']\n"
      "'dev.*': ['grains.*']\n"
      "ops%: ['cmd.run']\n"
      "'*': ['status.*']\n"
      "^filename: /etc/x\n");
  EXPECT_EQ(FillAuthList(provider, "alice", {}, false), List("['test.*']"));
  EXPECT_EQ(FillAuthList(provider, "dev1", {"ops"}, false), List("['grains.*', 'cmd.run']"));
  EXPECT_EQ(FillAuthList(provider, "carol", {}, false), List("['status.*']"));
  EXPECT_EQ(FillAuthList(provider, "carol", {"ops"}, false), List("['cmd.run', 'status.*']"));
  EXPECT_EQ(FillAuthList(provider, "alice", {}, true), List("['test.*', 'status.*']"));
  EXPECT_TRUE(FillAuthList(provider, "filename", {}, false) == List("['status.*']"));
}

TEST(AclTest, LoginPermissionsAreSortedAndDeduplicated) {
  const wire::Value provider = Yaml(
      "alice: ['test.*', '@wheel', {'web*': ['cmd.run']}]\n"
      "'*': ['test.*', 'grains.items']\n"
      "ops%: ['@runner']\n");
  EXPECT_EQ(LoginPermissions(provider, "alice", {"ops"}),
            List("['@runner', '@wheel', 'grains.items', 'test.*', {'web*': ['cmd.run']}]"));
}

TEST(AclTest, ExprMatchIsEqualityGlobOrFullRegex) {
  EXPECT_TRUE(ExprMatch("alice", "alice"));
  EXPECT_TRUE(ExprMatch("dev7", "dev*"));
  EXPECT_TRUE(ExprMatch("dev7", "dev[0-9]"));
  EXPECT_TRUE(ExprMatch("dev77", "dev\\d+"));
  EXPECT_FALSE(ExprMatch("xdev7", "dev\\d+"));
  EXPECT_FALSE(ExprMatch("dev7x", "dev\\d+"));
}

}  // namespace
}  // namespace halite::auth
