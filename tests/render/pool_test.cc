// The renderer pool with real halite-render processes: Jinja and YAML as Salt renders them,
// hostile templates answered with an error, and a pool that survives a renderer that crashes
// or never answers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "halite/render/renderer.h"
#include "render_testing.h"

namespace halite::render {
namespace {

using testing_support::Tree;

nlohmann::json Json(const wire::Value& v) { return nlohmann::json::parse(v.ToJson()); }
nlohmann::json Json(const char* text) { return nlohmann::json::parse(text); }

class PoolTest : public ::testing::Test {
 protected:
  static PoolOptions Options(int processes, std::chrono::milliseconds timeout) {
    PoolOptions o;
    o.program = testing_support::RendererProgram();
    o.processes = processes;
    o.timeout = timeout;
    o.allow_test_ops = true;
    return o;
  }
  std::unique_ptr<Renderer> Pool(int processes = 1,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20),
                                 std::size_t max_output = 1u << 20, RenderSettings settings = {}) {
    PoolOptions o = Options(processes, timeout);
    o.max_output_bytes = max_output;
    return MakeProcessPool(o, std::move(settings));
  }

  Result<wire::Value> Render(Renderer& r, const std::string& rel, const std::string& sls,
                             wire::Value grains = wire::Value::MapOf({{"id", "m1"}})) {
    RenderRequest req;
    req.file = tree_.root() + "/" + rel;
    req.searchpath = {tree_.root()};
    req.sls = sls;
    req.context = wire::Value::MapOf({{"grains", grains},
                                      {"pillar", wire::Value::EmptyMap()},
                                      {"opts", wire::Value::MapOf({{"id", "m1"}})}});
    return r.Render(req);
  }

  Tree tree_;
};

TEST_F(PoolTest, RendersJinjaThenYamlWithGrainsSaltFunctionsAndFilters) {
  tree_.Write("map.jinja",
              "{% set m = salt['grains.filter_by']({'Debian': {'pkg': 'apache2'}, "
              "'RedHat': {'pkg': 'httpd'}}, default='Debian') %}\n");
  tree_.Write("d/defaults.yaml", "port: 80\n");
  tree_.Write("web.sls",
              "{% from 'map.jinja' import m with context %}\n"
              "{% import_yaml 'd/defaults.yaml' as d %}\n"
              "id: {{ grains['id'] }}\n"
              "pkg: {{ m.pkg }}\n"
              "port: {{ d.port }}\n"
              "role: {{ salt['grains.get']('role', 'none') }}\n"
              "quoted: {{ 'a: b' | yaml_encode }}\n"
              "js: {{ {'k': [1, 2]} | json }}\n"
              "{% if grains.get('os_family') == 'RedHat' %}rh: true{% endif %}\n"
              "where: {{ sls }} {{ tpldir }} {{ saltenv }}\n");
  auto pool = Pool();
  auto v = Render(*pool, "web.sls", "web",
                  wire::Value::MapOf({{"id", "m1"}, {"os_family", "RedHat"}, {"role", "web"}}));
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(
      Json(*v),
      Json(
          R"({"id":"m1","pkg":"httpd","port":80,"role":"web","quoted":"a: b","js":{"k":[1,2]},"rh":true,"where":"web . base"})"));
}

TEST_F(PoolTest, SaltYamlRulesDuplicateKeysFailTimestampsStayStrings) {
  tree_.Write("dup.sls", "a: 1\na: 2\n");
  tree_.Write("scalars.sls", "#!yaml\nts: 2024-01-01\noct: 0755\nyes_: yes\nnull_: ~\n");
  auto pool = Pool();
  auto dup = Render(*pool, "dup.sls", "dup");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(dup.error().message.find("found conflicting ID 'a'"), std::string::npos)
      << dup.error().message;
  auto s = Render(*pool, "scalars.sls", "scalars");
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(Json(*s), Json(R"({"ts":"2024-01-01","oct":755,"yes_":true,"null_":null})"));
}

TEST_F(PoolTest, UndefinedVariablesAndUnknownSaltFunctionsFailTheFile) {
  tree_.Write("undef.sls", "a: {{ nosuch }}\n");
  tree_.Write("func.sls", "a: {{ salt['no.such']() }}\n");
  auto pool = Pool();
  auto u = Render(*pool, "undef.sls", "undef");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("'nosuch' is undefined"), std::string::npos)
      << u.error().message;
  auto f = Render(*pool, "func.sls", "func");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("no.such"), std::string::npos) << f.error().message;
}

TEST_F(PoolTest, TemplatesAskTheMasterForTheMineMidRender) {
  tree_.Write("mine.sls",
              "{% set run = salt['saltutil.runner'] %}\n"
              "a: {{ run('mine.get', tgt='web*', fun='role') | json }}\n"
              "b: {{ run('mine.get', arg=['db*', 'ip', 'glob']) | json }}\n"
              "local: {{ salt['mine.get']('*', 'role') | json }}\n");
  tree_.Write("loop.sls",
              "{% for i in range(5000) %}{% do salt['saltutil.runner']('mine.get', tgt='*', "
              "fun='x') %}{% endfor %}a: 1\n");
  tree_.Write("other.sls", "a: {{ salt['saltutil.runner']('jobs.list_jobs') }}\n");
  tree_.Write("missing.sls", "a: {{ salt['saltutil.runner']('mine.get', tgt='*') }}\n");
  auto pool = Pool();
  std::vector<std::string> asked;
  auto render = [&](const char* file, HostCall host) {
    RenderRequest req;
    req.file = tree_.root() + "/" + file;
    req.searchpath = {tree_.root()};
    req.sls = "x";
    req.context = wire::Value::MapOf({{"grains", wire::Value::MapOf({{"id", "m1"}})}});
    req.host = std::move(host);
    return pool->Render(req);
  };
  HostCall host = [&](const std::string& name, const wire::Value& args) -> Result<wire::Value> {
    asked.push_back(name + " " + args.ToJson());
    const std::string* tgt = args.FindStr("tgt");
    return wire::Value::MapOf({{*tgt, *args.FindStr("fun")}});
  };
  auto v = render("mine.sls", host);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(Json(*v), Json(R"({"a":{"web*":"role"},"b":{"db*":"ip"},"local":{}})"));
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(Json(asked[1].substr(9).c_str()),
            Json(R"({"tgt":"db*","fun":"ip","tgt_type":"glob"})"));

  // The master's refusal, no master at all, a template that would call it forever, a runner
  // halite does not have, and a missing argument: each fails the file, the pool goes on.
  auto refused =
      render("mine.sls", [](const std::string&, const wire::Value&) -> Result<wire::Value> {
        return Error::PermissionDenied("not for you");
      });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not for you"), std::string::npos)
      << refused.error().message;
  auto none = render("mine.sls", {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("needs the master"), std::string::npos)
      << none.error().message;
  asked.clear();
  auto loop = render("loop.sls", host);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().message.find("calls to the master"), std::string::npos)
      << loop.error().message;
  EXPECT_EQ(asked.size(), 1000u);
  auto other = render("other.sls", host);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("jobs.list_jobs"), std::string::npos);
  auto missing = render("missing.sls", host);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'fun'"), std::string::npos) << missing.error().message;
  auto again = render("mine.sls", host);
  EXPECT_TRUE(again.ok()) << again.error().ToString();
}

TEST_F(PoolTest, ImportsCannotLeaveTheRoots) {
  tree_.Write("../outside.jinja", "{% set secret = 'leaked' %}\n");
  tree_.Symlink("../outside.jinja", "link.jinja");
  tree_.Write("abs.sls", "{% include '/etc/passwd' %}\n");
  tree_.Write("up.sls", "{% from '../outside.jinja' import secret %}a: {{ secret }}\n");
  tree_.Write("rel.sls", "{% from './../outside.jinja' import secret %}a: {{ secret }}\n");
  tree_.Write("sym.sls", "{% from 'link.jinja' import secret %}a: {{ secret }}\n");
  auto pool = Pool();
  for (const char* f : {"abs.sls", "up.sls", "rel.sls", "sym.sls"}) {
    auto v = Render(*pool, f, std::string(f).substr(0, std::string(f).size() - 4));
    ASSERT_FALSE(v.ok()) << f << " rendered " << v->ToJson();
    EXPECT_EQ(v.error().code, ErrorCode::kInvalidArgument) << f;
    EXPECT_EQ(v.error().message.find("leaked"), std::string::npos) << f;
    EXPECT_EQ(v.error().message.find("root:"), std::string::npos) << f;
  }
}

TEST_F(PoolTest, HostileTemplatesGetAnErrorAndThePoolKeepsServing) {
  tree_.Write("ok.sls", "a: 1\n");
  tree_.Write("recurse.sls", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}a: {{ f(0) }}\n");
  tree_.Write("huge.sls", "a: {{ 'x' * 3000000 }}\n");
  tree_.Write("loop.sls",
              "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}"
              "{% endfor %}{% endfor %}{% endfor %}a: 1\n");
  tree_.Write("private.sls", "a: {{ ''.__class__.__mro__ }}\n");
  auto pool = Pool(1, std::chrono::seconds(3));
  auto r = Render(*pool, "recurse.sls", "recurse");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().ToString();
  auto h = Render(*pool, "huge.sls", "huge");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("limit"), std::string::npos) << h.error().ToString();
  auto p = Render(*pool, "private.sls", "private");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("unsafe"), std::string::npos) << p.error().ToString();
  const auto before = StatsOf(*pool);
  auto l = Render(*pool, "loop.sls", "loop");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kDeadlineExceeded) << l.error().ToString();
  EXPECT_EQ(StatsOf(*pool).timeouts, before.timeouts + 1);
  auto ok = Render(*pool, "ok.sls", "ok");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(Json(*ok), Json(R"({"a":1})"));
  EXPECT_EQ(StatsOf(*pool).spawns, before.spawns + 1);  // a fresh renderer replaced the killed one
}

TEST_F(PoolTest, ARendererThatCrashesIsReplaced) {
  tree_.Write("ok.sls", "a: 1\n");
  auto pool = Pool(1);
  ASSERT_TRUE(Render(*pool, "ok.sls", "ok").ok());
  auto crash = SendTestOp(*pool, "crash");
  ASSERT_FALSE(crash.ok());
  EXPECT_EQ(crash.error().code, ErrorCode::kUnavailable) << crash.error().ToString();
  EXPECT_NE(crash.error().message.find("exited with status 70"), std::string::npos)
      << crash.error().message;
  EXPECT_EQ(StatsOf(*pool).crashes, 1u);
  auto again = Render(*pool, "ok.sls", "ok");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(StatsOf(*pool).spawns, 2u);
}

TEST_F(PoolTest, ARendererThatNeverAnswersIsKilledAtTheDeadline) {
  tree_.Write("ok.sls", "a: 1\n");
  auto pool = Pool(1, std::chrono::milliseconds(1500));
  auto spin = SendTestOp(*pool, "spin");
  ASSERT_FALSE(spin.ok());
  EXPECT_EQ(spin.error().code, ErrorCode::kDeadlineExceeded) << spin.error().ToString();
  auto ok = Render(*pool, "ok.sls", "ok");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
}

// A renderer's start-up is not the file's time. A wrapper that sleeps 1.5 s before it execs
// halite-render stands for a loaded machine: a file still renders within a 500 ms
// render_timeout, on the first renderer and on the one that replaces a killed one, and a
// renderer that spins is still killed at 500 ms.
TEST_F(PoolTest, ARenderersStartUpIsNotChargedToTheFile) {
  tree_.Write("ok.sls", "a: 1\n");
  tree_.Write("slow-start.sh",
              "#!/bin/sh\nsleep 1.5\nexec " + testing_support::RendererProgram() + "\n");
  const std::string wrapper = tree_.root() + "/slow-start.sh";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  PoolOptions o = Options(1, std::chrono::milliseconds(500));
  o.program = wrapper;
  auto pool = MakeProcessPool(o, RenderSettings{});
  auto first = Render(*pool, "ok.sls", "ok");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(Json(*first), Json(R"({"a":1})"));
  const auto start = std::chrono::steady_clock::now();
  auto spin = SendTestOp(*pool, "spin");
  ASSERT_FALSE(spin.ok());
  EXPECT_EQ(spin.error().code, ErrorCode::kDeadlineExceeded) << spin.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  auto again = Render(*pool, "ok.sls", "ok");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(StatsOf(*pool).spawns, 2u);
}

TEST_F(PoolTest, ConcurrentCallersShareAFewRenderers) {
  tree_.Write("n.sls", "n: {{ grains['n'] }}\n");
  auto pool = Pool(2);
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto v = Render(*pool, "n.sls", "n", wire::Value::MapOf({{"id", "m"}, {"n", t * 100 + i}}));
        if (v.ok() && Json(*v) == Json(("{\"n\":" + std::to_string(t * 100 + i) + "}").c_str())) {
          good++;
        } else if (!v.ok()) {
          ADD_FAILURE() << v.error().ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 60);
  EXPECT_LE(StatsOf(*pool).spawns, 2u);
}

TEST_F(PoolTest, PyFilesRunWithSaltsDunders) {
  tree_.Write("gen.sls",
              "#!py\n"
              "def run():\n"
              "    return {'id': __grains__['id'], 'sls': __sls__,\n"
              "            'role': __salt__['grains.get']('role', 'none'), 'n': [i * i for i in "
              "range(3)]}\n");
  tree_.Write("norun.sls", "#!py\nx = 1\n");
  auto pool = Pool();
  auto v = Render(*pool, "gen.sls", "gen", wire::Value::MapOf({{"id", "m1"}, {"role", "db"}}));
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(Json(*v), Json(R"({"id": "m1", "sls": "gen", "role": "db", "n": [0, 1, 4]})"));
  auto n = Render(*pool, "norun.sls", "norun");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("no run() function"), std::string::npos) << n.error().message;
}

TEST_F(PoolTest, GpgBlocksAreDecryptedWithTheKeydir) {
  // A real key in a throwaway keyring (gpg from Debian), a secret encrypted to it, an sls with
  // `#!yaml|gpg` that holds the armored block.
  const std::string keydir = tree_.Root("gpgkeys");
  std::filesystem::create_directories(keydir);
  std::filesystem::permissions(keydir, std::filesystem::perms::owner_all);
  const std::string gpg =
      "gpg --batch --homedir " + keydir + " --pinentry-mode loopback --passphrase ''";
  ASSERT_EQ(
      std::system((gpg + " --quick-gen-key 'halite test' future-default default never 2>/dev/null")
                      .c_str()),
      0);
  const std::string armored = tree_.Root("secret.asc");
  ASSERT_EQ(std::system(("printf 'hunter2' | " + gpg +
                         " --trust-model always -ea -r 'halite test' > " + armored + " 2>/dev/null")
                            .c_str()),
            0);
  std::ifstream in(armored);
  std::string block((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string indented;
  for (char c : block) indented += (c == '\n') ? std::string("\n  ") : std::string(1, c);
  tree_.Write("secret.sls", "#!yaml|gpg\npassword: |\n  " + indented + "\nplain: visible\n");
  RenderSettings settings;
  settings.gpg_keydir = keydir;
  auto pool = Pool(1, std::chrono::seconds(30), 1u << 20, settings);
  auto v = Render(*pool, "secret.sls", "secret");
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(Json(*v), Json(R"({"password": "hunter2", "plain": "visible"})"));
  // Without a keydir the block is an error, never served encrypted-as-plain by accident.
  auto none = Render(*Pool(), "secret.sls", "secret");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("gpg_keydir"), std::string::npos) << none.error().message;
  std::system(("gpgconf --homedir " + keydir + " --kill all 2>/dev/null").c_str());
}

TEST_F(PoolTest, CheckReportsSyntaxErrorsWithoutRendering) {
  tree_.Write("good.sls", "a: {{ grains['never_set'] }}\n");  // fine until rendered
  tree_.Write("bad.sls", "{% if %}\n");
  tree_.Write("bad.yaml.sls", "#!yaml\na: [\n");
  auto pool = Pool();
  EXPECT_TRUE(pool->Check(tree_.root() + "/good.sls", {tree_.root()}).ok());
  auto bad = pool->Check(tree_.root() + "/bad.sls", {tree_.root()});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("Jinja syntax error"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(pool->Check(tree_.root() + "/bad.yaml.sls", {tree_.root()}).ok());
}

}  // namespace
}  // namespace halite::render
