// Binding salt-run's arguments to a runner's Python signature, and the runner table.
#include "halite/runners/runner.h"

#include <gtest/gtest.h>

#include "halite/client/cli_args.h"

namespace halite::runners {
namespace {

using wire::Value;

const std::vector<Param> kLookup = {
    {"jid", std::nullopt}, {"ext_source", Value()}, {"returned", true}, {"missing", false}};

Result<BoundArgs> BindWords(const std::vector<Param>& params, bool kwargs,
                            const std::vector<std::string>& words) {
  return Bind("jobs.lookup_jid", params, kwargs, client::ParseCliArgs(words));
}

TEST(BindTest, PositionalThenKeywordArgumentsWithDefaults) {
  auto b = BindWords(kLookup, false, {"20250101000000000001", "missing=True"});
  ASSERT_TRUE(b.ok()) << b.error().message;
  // A 20-digit jid is beyond 64 bits, so the YAML reading leaves it text.
  EXPECT_EQ(b->Text("jid"), "20250101000000000001");
  EXPECT_EQ(b->Get("missing"), Value(true));
  EXPECT_EQ(b->Get("returned"), Value(true));
  EXPECT_TRUE(b->Get("ext_source").is_nil());
}

TEST(BindTest, MisfitsGetPythonsTypeErrorText) {
  struct Case {
    std::vector<std::string> words;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{}, "lookup_jid() missing 1 required positional argument: 'jid'"},
           {{"1", "2", "3", "4", "5"},
            "lookup_jid() takes from 1 to 4 positional arguments but 5 were given"},
           {{"1", "bogus=2"}, "lookup_jid() got an unexpected keyword argument 'bogus'"},
           {{"1", "jid=2"}, "lookup_jid() got multiple values for argument 'jid'"},
       }) {
    auto b = BindWords(kLookup, false, c.words);
    ASSERT_FALSE(b.ok()) << c.message;
    EXPECT_EQ(b.error().message, c.message);
  }
  auto two =
      Bind("m.f", {{"a", std::nullopt}, {"b", std::nullopt}, {"c", std::nullopt}}, false, {});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message, "f() missing 3 required positional arguments: 'a', 'b', and 'c'");
  auto none = Bind("manage.versions", {}, false, client::ParseCliArgs({"x"}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "versions() takes 0 positional arguments but 1 was given");
}

TEST(BindTest, KwargsRunnersKeepUnknownKeywords) {
  auto b = BindWords({{"tgt", std::nullopt}}, true, {"web*", "extra=1"});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->Text("tgt"), "web*");
  EXPECT_EQ(b->extra_kwargs(), Value::MapOf({{"extra", 1}}));
}

TEST(RunnerTableTest, DocsListAModuleAFunctionOrAGlob) {
  RunnerTable table = BuiltinRunners();
  auto names = [&](std::string_view arg) {
    std::vector<std::string> out;
    for (const Runner* r : table.Docs(arg)) out.push_back(r->name);
    return out;
  };
  EXPECT_EQ(names("fileserver"),
            (std::vector<std::string>{"fileserver.dir_list", "fileserver.empty_dir_list",
                                      "fileserver.envs", "fileserver.file_list",
                                      "fileserver.symlink_list"}));
  EXPECT_EQ(names("jobs.active"), (std::vector<std::string>{"jobs.active"}));
  EXPECT_EQ(
      names("manage.not_*"),
      (std::vector<std::string>{"manage.not_alived", "manage.not_allowed", "manage.not_joined",
                                "manage.not_present", "manage.not_reaped"}));
  // 6 jobs, 16 manage, 7 cache, 5 fileserver, 6 cluster (status, haproxy_config, members,
  // leave, haproxy_sync, import_to_etcd)
  EXPECT_EQ(names("").size(), 40u);
  EXPECT_EQ(table.Find("no.such"), nullptr);
  for (const Runner* r : table.Docs("")) {
    EXPECT_EQ(r->doc.rfind("\n    ", 0), 0u) << r->name << ": a docstring's layout";
    EXPECT_TRUE(r->fn) << r->name;
  }
}

}  // namespace
}  // namespace halite::runners
