// The master's file server (src/master/fileserver.cc) over its real request port, asked what
// a minion's cp.get_file / state.apply asks: nothing outside file_roots is served, whatever
// the path says or wherever a symlink in the root points, and large files come back whole
// in chunks.
#include <gtest/gtest.h>

#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"
#include "harness.h"
#include "raw_client.h"

namespace halite::testing {
namespace {

namespace fs = std::filesystem;

// Minion web1, with a fresh key, signed in to `master` (auto_accept).
void SignInWeb1(zmq::context_t& ctx, const MasterUnderTest& master,
                std::unique_ptr<RawMinion>& minion, std::optional<wire::Crypticle>& session) {
  auto text = keys::ReadFile(master.dir() / "pki" / "master.pub");
  ASSERT_TRUE(text.ok());
  auto key = wire::RsaPrivateKey::Generate(2048);
  ASSERT_TRUE(key.ok());
  minion = std::make_unique<RawMinion>("web1", *key, "tcp://" + master.ip() + ":4506");
  auto auth = minion->Auth(ctx, *wire::RsaPublicKey::FromPem(*text));
  ASSERT_TRUE(auth.ok() && auth->session);
  session = *auth->session;
}

class FileserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path() / "roots" / "base";
    dev_ = tmp_.path() / "roots" / "dev";
    outside_ = tmp_.path() / "outside";
    WriteFile(base_ / "top.sls", "base:\n  '*':\n    - web\n");
    WriteFile(base_ / "web" / "init.sls", "nginx:\n  pkg.installed\n");
    WriteFile(dev_ / "only-dev.sls", "dev: true\n");
    WriteFile(outside_ / "secret.txt", "SECRET");
    WriteFile(outside_ / "dir" / "inner.txt", "INNER SECRET");
    fs::create_symlink(outside_ / "secret.txt", base_ / "escape.sls");
    fs::create_directory_symlink(outside_ / "dir", base_ / "linked");
    fs::create_symlink("web/init.sls", base_ / "alias.sls");  // stays in the root
    big_.resize(2 * 1048576 + 12345);
    for (std::size_t i = 0; i < big_.size(); ++i) big_[i] = static_cast<char>('a' + i * 7 % 26);
    WriteFile(base_ / "big.bin", big_);

    MasterSpec spec;
    spec.auto_accept = true;
    spec.file_roots = "  base: [" + base_.string() + "]\n  dev: [" + dev_.string() + "]\n";
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    master_->Start();
    SignInWeb1(ctx_, *master_, minion_, session_);
  }

  wire::Value Ask(wire::Value load) {
    load.Set("id", "web1");
    auto r = minion_->Request(ctx_, *session_, std::move(load));
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? *r : wire::Value();
  }
  // One `_serve_file` chunk: {data, dest}.
  wire::Value Serve(const std::string& path, const std::string& saltenv = "base",
                    std::int64_t loc = 0) {
    return Ask(wire::Value::MapOf(
        {{"cmd", "_serve_file"}, {"path", path}, {"saltenv", saltenv}, {"loc", loc}}));
  }
  static std::string Data(const wire::Value& chunk) {
    const std::string* d = chunk.FindStr("data");
    return d ? *d : "<no data>";
  }
  // Asserts that `path` is answered as a missing file by every file command.
  void ExpectNotServed(const std::string& path, const std::string& saltenv = "base") {
    SCOPED_TRACE(path + " in " + saltenv);
    wire::Value served = Serve(path, saltenv);
    EXPECT_EQ(Data(served), "");
    EXPECT_EQ(*served.FindStr("dest"), "");
    EXPECT_EQ(Ask(wire::Value::MapOf({{"cmd", "_file_hash"}, {"path", path}, {"saltenv", saltenv}}))
                  .ToJson(),
              "\"\"");
    wire::Value found =
        Ask(wire::Value::MapOf({{"cmd", "_file_find"}, {"path", path}, {"saltenv", saltenv}}));
    EXPECT_EQ(*found.FindStr("path"), "") << found.ToJson();
  }

  TempDir tmp_;
  zmq::context_t ctx_;
  fs::path base_, dev_, outside_;
  std::string big_;
  std::unique_ptr<MasterUnderTest> master_;
  std::unique_ptr<RawMinion> minion_;
  std::optional<wire::Crypticle> session_;
};

TEST_F(FileserverTest, ServesFilesUnderTheRootWithTheirHash) {
  wire::Value chunk = Serve("web/init.sls");
  EXPECT_EQ(Data(chunk), "nginx:\n  pkg.installed\n");
  EXPECT_EQ(*chunk.FindStr("dest"), "web/init.sls");
  EXPECT_EQ(Data(Serve("salt://web/init.sls")), "nginx:\n  pkg.installed\n");
  wire::Value hash = Ask(
      wire::Value::MapOf({{"cmd", "_file_hash"}, {"path", "web/init.sls"}, {"saltenv", "base"}}));
  EXPECT_EQ(*hash.FindStr("hsum"), wire::Sha256Hex("nginx:\n  pkg.installed\n"));
  EXPECT_EQ(*hash.FindStr("hash_type"), "sha256");
}

TEST_F(FileserverTest, DotDotAndAbsolutePathsServeNothing) {
  // The file is there to be had: proof that the refusals below are refusals.
  ASSERT_TRUE(fs::exists(outside_ / "secret.txt"));
  for (const std::string& path :
       {std::string("../../outside/secret.txt"), std::string("web/../../../outside/secret.txt"),
        std::string("salt://../../outside/secret.txt"), (outside_ / "secret.txt").string(),
        "salt://" + (outside_ / "secret.txt").string(), std::string("/etc/passwd"),
        std::string("web/../top.sls")}) {
    ExpectNotServed(path);
  }
}

TEST_F(FileserverTest, SymlinksOutOfTheRootServeNothingAndAreNotListed) {
  // A link that stays in the root is followed (as Salt's roots backend does), so the
  // refusals below are about where the links point, not about links.
  EXPECT_EQ(Data(Serve("alias.sls")), "nginx:\n  pkg.installed\n");
  ASSERT_TRUE(fs::exists(base_ / "escape.sls"));
  ASSERT_TRUE(fs::exists(base_ / "linked" / "inner.txt"));
  ExpectNotServed("escape.sls");
  ExpectNotServed("linked/inner.txt");
  EXPECT_EQ(Ask(wire::Value::MapOf({{"cmd", "_file_list"}, {"saltenv", "base"}, {"prefix", ""}}))
                .ToJson(),
            R"(["alias.sls", "big.bin", "top.sls", "web/init.sls"])");
  EXPECT_EQ(
      Ask(wire::Value::MapOf({{"cmd", "_dir_list"}, {"saltenv", "base"}, {"prefix", ""}})).ToJson(),
      R"(["web"])");
}

TEST_F(FileserverTest, SaltenvPicksTheRootAndAnUnknownOneServesNothing) {
  ExpectNotServed("only-dev.sls", "base");
  EXPECT_EQ(Data(Serve("only-dev.sls", "dev")), "dev: true\n");
  // The query form of salt:// URLs overrides the load's saltenv.
  EXPECT_EQ(Data(Serve("salt://only-dev.sls?saltenv=dev", "base")), "dev: true\n");
  ExpectNotServed("web/init.sls", "dev");
  ExpectNotServed("web/init.sls", "nope");
  EXPECT_EQ(Ask(wire::Value::MapOf({{"cmd", "_file_envs"}})).ToJson(), "[\"base\", \"dev\"]");
  wire::Value listed =
      Ask(wire::Value::MapOf({{"cmd", "_file_list"}, {"saltenv", "dev"}, {"prefix", ""}}));
  EXPECT_EQ(listed.ToJson(), "[\"only-dev.sls\"]");
}

TEST_F(FileserverTest, ALargeFileComesBackWholeInChunks) {
  std::string got;
  int chunks = 0;
  for (;;) {
    wire::Value chunk = Serve("big.bin", "base", static_cast<std::int64_t>(got.size()));
    const std::string data = Data(chunk);
    ASSERT_NE(data, "<no data>");
    if (data.empty()) break;
    ASSERT_LE(data.size(), 1048576u);
    got += data;
    ++chunks;
    ASSERT_LE(chunks, 10) << "the transfer does not end";
  }
  EXPECT_EQ(chunks, 3);
  EXPECT_EQ(got.size(), big_.size());
  EXPECT_TRUE(got == big_) << "the chunks do not add up to the file";
  // A chunk from the middle starts where it was asked to.
  EXPECT_EQ(Data(Serve("big.bin", "base", 1048576)).substr(0, 100), big_.substr(1048576, 100));
}

// cp.push (salt-wire 6: `_file_recv`), as a stock minion sends it: the file arrives whole under
// <cachedir>/minions/<id>/files; whatever the path says, a symlink planted there, a gap or a
// size over file_recv_max_size, nothing is written elsewhere; with file_recv off, nothing at all.
// A master (with `extra_yaml`) and minion web1 signed in to it.
class FileRecvTest : public ::testing::Test {
 protected:
  void Start(const std::string& extra_yaml) {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml = extra_yaml;
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    master_->Start();
    SignInWeb1(ctx_, *master_, minion_, session_);
  }
  Result<wire::Value> Request(wire::Value load) {
    return minion_->Request(ctx_, *session_, std::move(load));
  }
  fs::path Files() const { return master_->dir() / "cache" / "minions" / "web1" / "files"; }

  TempDir tmp_;
  zmq::context_t ctx_;
  std::unique_ptr<MasterUnderTest> master_;
  std::unique_ptr<RawMinion> minion_;
  std::optional<wire::Crypticle> session_;
};

TEST_F(FileRecvTest, PushedFilesLandOnlyUnderTheMinionsFilesDirectory) {
  Start("file_recv: True\nfile_recv_max_size: 1\n");
  const TempDir& tmp = tmp_;
  auto push = [&](std::vector<std::string> path, std::int64_t loc, const std::string& data,
                  std::int64_t size) {
    wire::Array p;
    for (auto& c : path) p.emplace_back(c);
    wire::Value load = wire::Value::MapOf({{"cmd", "_file_recv"}, {"id", "web1"}});
    load.Set("path", wire::Value(std::move(p)));
    load.Set("loc", loc);
    load.Set("size", size);
    load.Set("data", wire::Value::Bin(data));
    auto r = Request(std::move(load));
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() && r->boolean().value_or(false);
  };
  const fs::path files = Files();

  // A file in three chunks, as cp.push sends it (file_buffer_size chunks, loc = offset).
  std::string body(300000, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i * 31 % 251);
  const auto size = static_cast<std::int64_t>(body.size());
  EXPECT_TRUE(push({"var", "log", "app.log"}, 0, body.substr(0, 131072), size));
  EXPECT_TRUE(push({"var", "log", "app.log"}, 131072, body.substr(131072, 131072), size));
  EXPECT_TRUE(push({"var", "log", "app.log"}, 262144, body.substr(262144), size));
  EXPECT_TRUE(ReadFileOrEmpty(files / "var" / "log" / "app.log") == body);
  // Pushed again from the start, it is replaced, not appended to.
  EXPECT_TRUE(push({"var", "log", "app.log"}, 0, "short", 5));
  EXPECT_EQ(ReadFileOrEmpty(files / "var" / "log" / "app.log"), "short");

  // Paths that leave the directory, after normalising as Salt does.
  const fs::path victim = tmp.path() / "victim";
  WriteFile(victim, "untouched");
  const std::string rel_to_victim = fs::relative(victim, files).string();
  EXPECT_FALSE(push({"..", "..", "..", "x"}, 0, "evil", 4));
  EXPECT_FALSE(push({"a", "..", "..", "..", "..", "x"}, 0, "evil", 4));
  EXPECT_FALSE(push({"/", "etc", "x"}, 0, "evil", 4));
  EXPECT_FALSE(push({rel_to_victim}, 0, "evil", 4));
  EXPECT_FALSE(push({std::string("a\0b", 3)}, 0, "evil", 4));
  // A symlink planted under the directory (by anyone) is never followed, as a directory or as
  // the file.
  fs::create_directories(files);
  fs::create_symlink(tmp.path(), files / "out");
  fs::create_symlink(victim, files / "leaf");
  EXPECT_FALSE(push({"out", "victim"}, 0, "evil", 4));
  EXPECT_FALSE(push({"leaf"}, 0, "evil", 4));
  EXPECT_EQ(ReadFileOrEmpty(victim), "untouched");
  // A chunk past the end (a hole) and a file over file_recv_max_size (1 MiB) are refused.
  EXPECT_FALSE(push({"gap"}, 4096, "x", 4097));
  EXPECT_FALSE(fs::exists(files / "gap") && fs::file_size(files / "gap") > 0);
  EXPECT_FALSE(push({"huge"}, 1048576 - 10, std::string(11, 'x'), 1048577));
  EXPECT_TRUE(push({"fits"}, 0, std::string(1048576, 'x'), 1048576));
  EXPECT_EQ(fs::file_size(files / "fits"), 1048576u);
  EXPECT_FALSE(fs::exists(tmp.path() / "x"));
}

TEST_F(FileRecvTest, OffByDefault) {
  Start("");
  wire::Value load = wire::Value::MapOf({{"cmd", "_file_recv"}, {"id", "web1"}, {"loc", 0}});
  load.Set("path", wire::Value(wire::Array{wire::Value("f")}));
  load.Set("data", wire::Value::Bin("x"));
  auto r = Request(std::move(load));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->boolean(), std::optional<bool>(false));
  EXPECT_FALSE(fs::exists(Files()));
}

}  // namespace
}  // namespace halite::testing
