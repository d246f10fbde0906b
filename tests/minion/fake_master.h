// A tiny stand-in for a Salt master, for the minion's end-to-end tests: a ROUTER (requests)
// and a PUB (jobs) on tcp://127.0.0.1:*, served by its own thread. It answers _auth with the
// vector master key, opens v3 (session key) and v2 (AES key) requests, answers _pillar with
// send_private and everything else with an encrypted None, and records what it saw.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "halite/wire/crypticle.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"

namespace halite::minion::testing {

class FakeMaster {
 public:
  enum class Mode { kAccept, kPending, kReject };
  struct Seen {
    int auths = 0;
    std::vector<wire::Value> loads;  // decrypted aes request loads, in order
    std::vector<int> versions;       // envelope version of each aes request
    int bad_loads = 0;               // requests answered "bad load"
  };

  explicit FakeMaster(zmq::context_t& context);
  ~FakeMaster();
  FakeMaster(const FakeMaster&) = delete;
  FakeMaster& operator=(const FakeMaster&) = delete;

  std::uint16_t ret_port() const { return ret_port_; }
  std::uint16_t pub_port() const { return pub_port_; }
  std::string master_pub() const;  // CleanKey of the master's public key

  void SetMode(Mode mode);
  void RotateAes();                // as a master restart does: new key, serial back to 0
  void RotateSession();            // the per-minion session key changes
  void Publish(wire::Value load);  // queued; the master thread encrypts and sends it

  // Waits (condition variable, deadline) until pred(seen) holds.
  bool WaitFor(const std::function<bool(const Seen&)>& pred,
               std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Publishes `load` every `period` until pred(seen) holds or `timeout` passes (PUB/SUB drops
  // whatever is published before the subscription is up).
  bool PublishUntil(const wire::Value& load, const std::function<bool(const Seen&)>& pred,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20),
                    std::chrono::milliseconds period = std::chrono::milliseconds(200));
  Seen seen() const;

  // Helpers for predicates.
  static const wire::Value* FindLoad(const Seen& seen, std::string_view cmd,
                                     std::string_view field = {}, std::string_view value = {});
  static int CountLoads(const Seen& seen, std::string_view cmd, std::string_view field = {},
                        std::string_view value = {});

 private:
  void Run(std::promise<void>* ready);
  std::string Handle(const std::string& body);
  std::string HandleAuth(const wire::Value& load);

  zmq::context_t& context_;
  wire::RsaPrivateKey master_key_;
  std::uint16_t ret_port_ = 0;
  std::uint16_t pub_port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Mode mode_ = Mode::kAccept;
  std::string aes_;
  std::string session_;
  std::uint64_t serial_ = 0;
  std::deque<wire::Value> to_publish_;
  Seen seen_;
};

}  // namespace halite::minion::testing
