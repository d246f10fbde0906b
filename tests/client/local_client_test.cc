// LocalClient (src/client/local_client.cc) against a scripted master on a real ipc socket in
// a temp dir: what it sends, and which error code each kind of reply becomes (the CLIs turn
// those codes into their exit codes). Also Salt's CLI argument habits (ParseCliArgs).
#include "halite/client/local_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "halite/client/batch.h"
#include "halite/wire/event.h"
#include "scratch_dir.h"

namespace halite::client {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ParseCliArgsTest, PositionalArgsKeepTheirOrderAndScalarsAreTyped) {
  wire::Array args =
      ParseCliArgs({"echo hi", "42", "-7", "true", "False", "None", "~", "4.5", "12abc", ""});
  EXPECT_EQ(wire::Value(args).ToJson(),
            R"(["echo hi", 42, -7, true, false, null, null, 4.5, "12abc", ""])");
}

TEST(ParseCliArgsTest, KeyValueArgsBecomeOneTrailingKwargMap) {
  wire::Array args = ParseCliArgs({"name=web", "first", "count=3", "ok=True", "last"});
  EXPECT_EQ(wire::Value(args).ToJson(),
            R"(["first", "last", {"__kwarg__": true, "name": "web", "count": 3, "ok": true}])");
  // As Salt's parse_input: a key is a letter or '_' then letters, digits, '_', '.' or '-';
  // anything else before '=' is a positional string.
  EXPECT_EQ(wire::Value(ParseCliArgs({"=x", "a-b=1", "x y=2", "cmd=ls -l=x"})).ToJson(),
            R"(["=x", "x y=2", {"__kwarg__": true, "a-b": 1, "cmd": "ls -l=x"}])");
  EXPECT_EQ(wire::Value(ParseCliArgs({})).ToJson(), "[]");
}

// A master's request socket (ROUTER on <sock_dir>/halite_req.ipc) that answers each request
// with `answer(load)`, or not at all when it returns nullopt. Its socket lives on its thread.
class ScriptedMaster {
 public:
  using Answer = std::function<std::optional<wire::Value>(const wire::Value& load)>;
  // with_events: also the event bus (PUB on <sock_dir>/halite_event_pub.ipc), which echoes
  // `_halite_probe` as the real master does, so that SubscribeEvents succeeds.
  ScriptedMaster(const fs::path& sock_dir, Answer answer, bool with_events = false)
      : answer_(std::move(answer)), sock_dir_(sock_dir), with_events_(with_events) {
    std::promise<void> bound;
    thread_ = std::thread([this, endpoint = "ipc://" + (sock_dir / "halite_req.ipc").string(),
                           &bound] { Run(endpoint, bound); });
    bound.get_future().wait();
  }
  ~ScriptedMaster() {
    stop_ = true;
    thread_.join();
  }
  std::vector<wire::Value> Loads() {
    std::lock_guard lock(mu_);
    return loads_;
  }

 private:
  void Run(const std::string& endpoint, std::promise<void>& bound) {
    zmq::context_t context;
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind(endpoint);
    zmq::socket_t events(context, zmq::socket_type::pub);
    events.set(zmq::sockopt::linger, 0);
    if (with_events_) events.bind("ipc://" + (sock_dir_ / "halite_event_pub.ipc").string());
    bound.set_value();
    while (!stop_) {
      zmq::pollitem_t item{static_cast<void*>(router), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t id, delimiter, body;
      (void)router.recv(id);
      (void)router.recv(delimiter);
      (void)router.recv(body);
      auto envelope = wire::Unpack(body.to_string_view());
      wire::Value load =
          envelope.ok() && envelope->Find("load") ? *envelope->Find("load") : wire::Value();
      {
        std::lock_guard lock(mu_);
        loads_.push_back(load);
      }
      const std::string* cmd = load.FindStr("cmd");
      const std::string* nonce = load.FindStr("nonce");
      if (with_events_ && cmd && *cmd == "_halite_probe" && nonce) {
        events.send(
            zmq::buffer(wire::PackEvent("halite/probe/" + *nonce, wire::Value::EmptyMap())));
      }
      std::optional<wire::Value> reply = answer_(load);
      if (!reply) continue;
      router.send(id, zmq::send_flags::sndmore);
      router.send(zmq::message_t(), zmq::send_flags::sndmore);
      router.send(zmq::buffer(wire::Pack(*reply)));
    }
  }

  Answer answer_;
  fs::path sock_dir_;
  bool with_events_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<wire::Value> loads_;  // guarded by mu_
  std::thread thread_;
};

class LocalClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sock_dir = dir_.string();
    options_.cachedir = dir_.string();
    options_.request_timeout = 2000ms;
  }
  void WriteRootKey(const std::string& key) { std::ofstream(dir_ / ".root_key") << key; }
  std::unique_ptr<LocalClient> Connect() {
    auto client = LocalClient::Connect(options_);
    EXPECT_TRUE(client.ok()) << client.error().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  halite::testing::ScratchDir scratch_{"halite-client"};
  const fs::path dir_ = scratch_.path();
  ClientOptions options_;
};

TEST_F(LocalClientTest, WithoutTheRootKeyConnectIsPermissionDenied) {
  auto client = LocalClient::Connect(options_);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(client.error().message.find(".root_key"), std::string::npos);
}

TEST_F(LocalClientTest, CallPresentsTheRootKeyAndReturnsTheReplysLoad) {
  WriteRootKey("ROOTKEY");
  ScriptedMaster master(dir_, [](const wire::Value&) {
    return wire::Value::MapOf({{"enc", "clear"}, {"load", wire::Value::MapOf({{"ret", 5}})}});
  });
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto reply = client->Call(wire::Value::MapOf({{"cmd", "runner"}, {"fun", "manage.up"}}));
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_EQ(reply->ToJson(), R"({"ret": 5})");
  ASSERT_EQ(master.Loads().size(), 1u);
  EXPECT_EQ(master.Loads()[0].ToJson(),
            R"({"cmd": "runner", "fun": "manage.up", "key": "ROOTKEY"})");
}

TEST_F(LocalClientTest, EachKindOfRefusalHasItsOwnErrorCode) {
  WriteRootKey("ROOTKEY");
  ScriptedMaster master(dir_, [](const wire::Value& load) -> std::optional<wire::Value> {
    const std::string* cmd = load.FindStr("cmd");
    if (*cmd == "auth") {
      return wire::Value::MapOf({{"error", wire::Value::MapOf({{"name", "AuthenticationError"},
                                                               {"message", "bad root key"}})}});
    }
    if (*cmd == "refused") {
      return wire::Value::MapOf({{"load", wire::Value::MapOf({{"error", "no such job"}})}});
    }
    if (*cmd == "garbled") return wire::Value::MapOf({{"what", 1}});
    return std::nullopt;  // "silent": never answered
  });
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto call = [&](const char* cmd) { return client->Call(wire::Value::MapOf({{"cmd", cmd}})); };

  auto auth = call("auth");
  ASSERT_FALSE(auth.ok());
  EXPECT_EQ(auth.error().code, ErrorCode::kUnauthenticated);
  EXPECT_EQ(auth.error().message, "AuthenticationError: bad root key");
  auto refused = call("refused");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().message, "no such job");
  auto garbled = call("garbled");
  ASSERT_FALSE(garbled.ok());
  EXPECT_EQ(garbled.error().code, ErrorCode::kInternal);

  options_.request_timeout = 300ms;
  client = Connect();
  auto silent = call("silent");
  ASSERT_FALSE(silent.ok());
  EXPECT_EQ(silent.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_NE(silent.error().message.find(dir_.string()), std::string::npos);
  // The REQ socket was reset: the next request is sent and answered, not refused by state.
  auto after = call("refused");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(master.Loads().size(), 5u);
}

// A return whose event never reached this master (its minion's master stored it but could
// not forward the event) is found in the job cache once the events go quiet, long before the
// timeout: no find_job is ever published. Without the lookups while waiting, the client
// would sit out the 20 s timeout and publish find_job before its last look.
TEST_F(LocalClientTest, ReturnsOnlyInTheJobCacheArriveWithoutWaitingOutTheTimeout) {
  WriteRootKey("ROOTKEY");
  std::atomic<int> lookups{0};
  auto ret = [](bool value) {
    return wire::Value::MapOf({{"return", value}, {"retcode", 0}, {"success", true}});
  };
  ScriptedMaster master(
      dir_,
      [&](const wire::Value& load) -> std::optional<wire::Value> {
        wire::Value out = wire::Value::MapOf({{"ok", true}});
        if (*load.FindStr("cmd") == "_halite_lookup_jid") {
          // m1 is stored from the first look on, m2 only from the second.
          wire::Value rets = wire::Value::MapOf({{"m1", ret(true)}});
          if (++lookups >= 2) rets.Set("m2", ret(false));
          out = wire::Value::MapOf({{"jid", *load.FindStr("jid")}, {"returns", rets}});
        }
        return wire::Value::MapOf({{"enc", "clear"}, {"load", out}});
      },
      /*with_events=*/true);
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->SubscribeEvents().ok());
  PublishReply job{"20261202030405123456", {"m1", "m2"}, {}};
  WaitOptions wait;
  wait.timeout = 20s;
  std::vector<std::string> got;
  auto missing =
      client->WaitForReturns(job, wait, [&](const MinionReturn& r) { got.push_back(r.id); });
  ASSERT_TRUE(missing.ok()) << missing.error().ToString();
  EXPECT_TRUE(missing->empty());
  EXPECT_EQ(got, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(lookups.load(), 2);
  for (const auto& load : master.Loads()) {
    const std::string cmd = *load.FindStr("cmd");
    EXPECT_TRUE(cmd == "_halite_probe" || cmd == "_halite_lookup_jid") << load.ToJson();
  }
}

}  // namespace
}  // namespace halite::client

namespace halite::client {
namespace {

// salt's _prep_pub: `ret` in the load, ret_config and metadata (YAML-loaded) in its kwargs.
TEST_F(LocalClientTest, PublishCarriesReturnersAndMetadataAsSaltDoes) {
  WriteRootKey("ROOTKEY");
  ScriptedMaster master(dir_, [](const wire::Value&) {
    return wire::Value::MapOf(
        {{"enc", "clear"},
         {"load", wire::Value::MapOf({{"jid", "20261202030405123456"},
                                      {"minions", wire::Value(wire::Array{"m1"})}})}});
  });
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  PublishRequest request;
  request.tgt = "*";
  request.fun = "test.ping";
  request.ret = "syslog";
  request.show_timeout = false;
  request.extra_kwargs.emplace_back("ret_config", "alt");
  request.extra_kwargs.emplace_back("metadata", YamlifyArg("{deploy: 42}"));
  ASSERT_TRUE(client->Publish(request).ok());
  ASSERT_EQ(master.Loads().size(), 1u);
  const wire::Value load = master.Loads()[0];
  EXPECT_EQ(*load.FindStr("ret"), "syslog");
  EXPECT_EQ(
      load.Find("kwargs")->ToJson(),
      R"({"show_timeout": false, "show_jid": false, "delimiter": ":", "ret_config": "alt", "metadata": {"deploy": 42}})");
}

// salt's get_bnum: N, or N% of the minions that answered (at least one while any answered).
TEST(BatchTest, WindowSizeIsSaltsGetBnum) {
  EXPECT_EQ(*Batch::WindowSize("3", 10), 3u);
  EXPECT_EQ(*Batch::WindowSize("50%", 3), 1u);  // int(1.5)
  EXPECT_EQ(*Batch::WindowSize("50%", 4), 2u);
  EXPECT_EQ(*Batch::WindowSize("%10", 5), 1u);  // ceil(0.5)
  EXPECT_EQ(*Batch::WindowSize("100%", 7), 7u);
  for (const char* bad : {"x", "1.5", "0", "-2", "%", "0%", ""}) {
    auto got = Batch::WindowSize(bad, 4);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.error().message, "Invalid batch data sent: " + std::string(bad) +
                                       "\nData must be in the form of %10, 10% or 3");
  }
}

}  // namespace
}  // namespace halite::client
