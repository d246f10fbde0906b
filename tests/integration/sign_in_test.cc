// Sign-ins under load, over real sockets: a burst is answered or counted as shed, and a
// minion's retry of a sign-in answered too late costs the master no RSA (AuthReplies).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <zmq.hpp>

#include "halite/wire/encoding.h"
#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

MasterSpec Spec(std::string id, std::string extra_yaml) {
  MasterSpec spec;
  spec.id = std::move(id);
  spec.auto_accept = true;
  spec.extra_yaml = std::move(extra_yaml);
  spec.ip = UniqueLoopbackIp();
  spec.health_port = 4510;
  return spec;
}

class SignInTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  zmq::context_t ctx_;
};

TEST_F(SignInTest, EverySignInOfABurstIsAnsweredOrCountedAsShed) {
  // One worker and a 1 ms queue limit: sign-ins queued behind the others' RSA work may be
  // dropped. How many depends on how long RSA takes here, so this test asserts only the
  // accounting: each one is answered (and counted accepted) or dropped (and counted shed).
  // That a sign-in that waited too long is dropped is proven with a gate, independent of RSA
  // speed, in tests/master/request_server_test.cc.
  MasterSpec spec = Spec("m1", "worker_threads: 1\nauth_queue_timeout_ms: 1\n");
  MasterUnderTest master(tmp_.path(), spec);
  master.Start();

  constexpr int kBurst = 40;
  const wire::RsaPrivateKey key = NewKey();
  const std::string pub = wire::CleanKey(key.PublicKey().ToPem());
  std::vector<zmq::socket_t> sockets;
  std::vector<std::string> bodies;
  for (int i = 0; i < kBurst; ++i) {
    sockets.emplace_back(ctx_, zmq::socket_type::req);
    sockets.back().set(zmq::sockopt::linger, 0);
    sockets.back().connect(RetEndpoint(master));
    wire::Value load = wire::Value::MapOf({{"cmd", "_auth"},
                                           {"id", "burst" + std::to_string(i)},
                                           {"nonce", wire::RandomNonce()},
                                           {"enc_algo", "OAEP-SHA1"},
                                           {"sig_algo", "PKCS1v15-SHA1"},
                                           {"pub", pub}});
    bodies.push_back(
        wire::Pack(wire::Value::MapOf({{"enc", "clear"}, {"load", load}, {"version", 3}})));
  }
  // Every socket is connected before the burst, so the requests arrive together.
  for (auto& s : sockets) {
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLOUT, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(10000)), 1);
  }
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_TRUE(sockets[i].send(zmq::buffer(bodies[i]), zmq::send_flags::none));
  }
  const std::string shed_metric = "halite_auth_total{master=\"m1\",result=\"shed\"}";
  const std::string accepted_metric = "halite_auth_total{master=\"m1\",result=\"accepted\"}";
  // Every request is either answered or dropped, and the counters say which.
  int answered = 0;
  std::vector<bool> done(kBurst, false);
  double shed = 0, accepted = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < kBurst; ++i) {
          if (done[i]) continue;
          zmq::message_t reply;
          if (sockets[i].recv(reply, zmq::recv_flags::dontwait)) {
            done[i] = true;
            ++answered;
          }
        }
        shed = Metric(spec.ip, 4510, shed_metric).value_or(-1);
        accepted = Metric(spec.ip, 4510, accepted_metric).value_or(-1);
        return shed >= 0 && accepted >= 0 && answered == static_cast<int>(accepted) &&
               shed + accepted == kBurst;
      },
      60s, 20ms))
      << "answered " << answered << ", accepted " << accepted << ", shed " << shed;
  EXPECT_EQ(answered + static_cast<int>(shed), kBurst);
}

// One master and web1's sign-in request, built once so that it can be sent again as a
// minion's retry is: the same bytes on a new connection.
class SignInRetryTest : public SignInTest {
 protected:
  // Starts the master with `extra_yaml` and sends web1's sign-in a first time.
  void Begin(const std::string& extra_yaml) {
    spec_ = Spec("m1", extra_yaml);
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec_);
    master_->Start();
    master_pub_ = MasterPub(*master_);
    web_.emplace("web1", NewKey(), RetEndpoint(*master_));
    request_ = web_->AuthRequest();
    first_bytes_ = Send();
  }
  std::string Send() {
    auto reply = RequestOnce(ctx_, web_->endpoint(), request_.body);
    EXPECT_TRUE(reply.has_value()) << "no answer to web1's sign-in";
    return reply.value_or(std::string());
  }
  Result<AuthResult> Read(const std::string& reply) {
    return web_->ReadAuthReply(reply, request_.nonce, master_pub_);
  }
  double PrivateRsa() {
    return Metric(spec_.ip, 4510, "halite_rsa_operations_total{master=\"m1\",kind=\"private\"}")
        .value_or(-1);
  }
  double Repeats() {
    return Metric(spec_.ip, 4510, "halite_auth_total{master=\"m1\",result=\"repeat\"}")
        .value_or(-1);
  }

  MasterSpec spec_;
  std::unique_ptr<MasterUnderTest> master_;
  std::optional<wire::RsaPublicKey> master_pub_;
  std::optional<RawMinion> web_;
  RawMinion::Encoded request_;
  std::string first_bytes_;
};

TEST_F(SignInRetryTest, ARetriedSignInIsAnsweredAsBeforeWithNoRsaWhileItsKeysAreCurrent) {
  // auth_reply_cache_wait_ms 0: every answer is kept, as one that waited in a storm is.
  Begin("auth_reply_cache_wait_ms: 0\n");
  auto first = Read(first_bytes_);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(first->signature_ok && first->aes && first->session);
  const double rsa_after_first = PrivateRsa();
  ASSERT_GE(rsa_after_first, 1);  // the reply's signature (this sign-in sends no token)
  EXPECT_EQ(Repeats(), 0);

  // The retry: the same answer, byte for byte, and no private RSA operation.
  EXPECT_EQ(Send(), first_bytes_);
  EXPECT_EQ(PrivateRsa(), rsa_after_first);
  EXPECT_EQ(Repeats(), 1);

  // Another minion's sign-in is not answered from web1's: the id and the load are the key.
  RawMinion db("db1", NewKey(), RetEndpoint(*master_));
  auto db_auth = db.Auth(ctx_, master_pub_);
  ASSERT_TRUE(db_auth.ok() && db_auth->aes) << db_auth.error().ToString();
  EXPECT_EQ(Repeats(), 1);

  // Deleting db1's key rotates the AES key: the kept answer carries the old one, so the retry
  // is signed in afresh and gets the new key.
  auto deleted = master_->Cli("halite-key", {"-d", "db1", "--yes"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  RawMinion probe("probe1", NewKey(), RetEndpoint(*master_));
  ASSERT_TRUE(WaitFor([&] {
    auto p = probe.Auth(ctx_, master_pub_);
    return p.ok() && p->aes && p->aes->key_string() != first->aes->key_string();
  })) << "the AES key never changed after a key was deleted";
  const double rsa_before_retry = PrivateRsa();
  const std::string after_rotation = Send();
  EXPECT_NE(after_rotation, first_bytes_);
  auto fresh = Read(after_rotation);
  ASSERT_TRUE(fresh.ok() && fresh->aes) << fresh.error().ToString();
  EXPECT_NE(fresh->aes->key_string(), first->aes->key_string());
  EXPECT_GE(PrivateRsa(), rsa_before_retry + 1);
  EXPECT_EQ(Repeats(), 1);

  // Once web1's key is deleted, its retry is not answered "accepted" from memory: the key is
  // gone, so the sign-in is decided afresh (auto_accept takes it again as a new key).
  auto web_deleted = master_->Cli("halite-key", {"-d", "web1", "--yes"});
  ASSERT_EQ(web_deleted.exit_code, 0) << web_deleted.out << web_deleted.err;
  EXPECT_NE(Send(), after_rotation);
  EXPECT_EQ(Repeats(), 1);
}

TEST_F(SignInRetryTest, APromptSignInIsNotKeptSoItsRepeatIsSignedInAgain) {
  // The default auth_reply_cache_wait_ms (1 s): an answer given at once reaches its minion in
  // time and is not kept, so the master holds nothing per minion outside a storm.
  Begin("");
  const double rsa_after_first = PrivateRsa();
  const std::string again = Send();
  auto parsed = Read(again);
  ASSERT_TRUE(parsed.ok() && parsed->aes) << parsed.error().ToString();
  EXPECT_NE(again, first_bytes_);  // OAEP is randomised: a fresh answer differs
  EXPECT_GE(PrivateRsa(), rsa_after_first + 1);
  EXPECT_EQ(Repeats(), 0);
}

}  // namespace
}  // namespace halite::testing
