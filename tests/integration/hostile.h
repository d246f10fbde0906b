// What the hostile-input tests (issue 12, docs/security.md) share: a master spec with its
// health port, metric reads, a signed-in raw minion, jobs and their returns, and the fixture.
// The tests: hostile_test.cc (the nine findings), hostile_limits_test.cc (the later
// findings on 4506: resources a minion or a stranger could take), hostile_publish_test.cc (4505)
// and hostile_catalogue_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "halite/client/local_client.h"
#include "halite/wire/encoding.h"
#include "halite/wire/event.h"
#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"
#include "wait.h"

namespace halite::testing {

inline constexpr int kHostileHealthPort = 4510;

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM); -1 if it is not there.
long StatusKib(pid_t pid, const std::string& field);
// A metric of master "m1" on its health port, 0 when absent.
double MetricOr0(const MasterUnderTest& m, const std::string& name);
// `name{master="m1"[,extra]}`.
std::string Labels(const std::string& name, const std::string& extra = "");
// Master "m1" with the health port.
MasterSpec Spec(bool auto_accept = true, std::string extra_yaml = "");
std::unique_ptr<client::LocalClient> ClientFor(const MasterUnderTest& m);

// A signed-in raw minion and its keys.
struct Signed {
  std::unique_ptr<RawMinion> minion;
  wire::Crypticle aes;
  wire::Crypticle session;
};
Signed SignIn(zmq::context_t& ctx, const MasterUnderTest& master, const std::string& id);

bool IsBadLoad(const std::optional<std::string>& reply);
// Publishes test.ping to `tgt` through the local client; the jid.
std::string PublishJob(const MasterUnderTest& master, const std::string& tgt,
                       const std::string& tgt_type = "glob");
// The minion ids with a stored return for `jid`.
std::vector<std::string> Returned(const MasterUnderTest& master, const std::string& jid);
wire::Value ReturnLoad(const std::string& jid, const std::string& text);

// A SUB on `master`'s event bus, subscribed to every tag.
zmq::socket_t EventBusSubscriber(zmq::context_t& ctx, const MasterUnderTest& master);
// The events read from `sub` up to the first tagged `marker` (included), or for 15 s at
// most; whether the marker came.
bool EventsUntil(zmq::socket_t& sub, const std::string& marker, std::vector<wire::Event>& seen);

// Reads the replies to `pipelined` requests sent on `dealer` until each was answered or
// counted as dropped (halite_minion_requests_dropped_total), 60 s at most; then expects at
// least `min_answered` answers, the two to add up, and nothing left waiting.
void ExpectEachAnsweredOrDropped(const MasterUnderTest& master, zmq::socket_t& dealer,
                                 int pipelined, int min_answered);

class HostileTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  zmq::context_t ctx_;
};

}  // namespace halite::testing
