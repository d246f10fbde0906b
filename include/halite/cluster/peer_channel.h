// The peer channel: a reliable, authenticated message stream between the masters of a cluster
// (salt-wire.md 10.5, fixing 10.8 items 5 and 6).
//
// What it promises:
// - Authentication. Peers talk ZeroMQ CURVE. Each master's public key is read from
//   `<cluster_pki_dir>/peers/<id>.curve` (curve_keys.h). The server side admits, through a ZAP
//   handler, only the keys of configured peers and names the sender by the peer id bound to
//   that key (never by anything the connection claims). Any other connection gets nothing in
//   and nothing out; each refused handshake is counted in unauthenticated_rejections().
// - Delivery, in two classes (PeerClass) that never share a queue, so that a flood of one
//   cannot cost the other anything:
//   - Events (Broadcast): a bounded lossy backlog per peer. A full backlog drops its oldest
//     event, counts it in `events.dropped` and logs once per burst.
//   - Publishes (BroadcastPublish): a bounded lossless queue per peer. A publish stays queued
//     until the peer acknowledges it; when some peer's queue is full the call fails and the
//     publish is queued for no one (back-pressure, counted in `publishes_refused`), so the
//     caller can refuse the job instead of losing it. Only a publish older than
//     publish_max_age leaves the queue unacknowledged (counted in `publishes.dropped`): the
//     receiving master would refuse it as stale anyway.
//   Within a class, each peer receives each message at most once and in Broadcast order; a
//   peer that is down or slow gets what it missed when it comes back (resent from the oldest
//   unacknowledged message). There is no order between the classes (publishes are sent
//   first). One slow or dead peer never delays the others: sends never block.
// - A master that restarts is a new sender (a new random epoch). What it had queued is lost
//   with the process; a receiver that restarts may get again the messages it had delivered
//   but not yet acknowledged (at most ~50 ms or 128 messages per peer and class).
//
// Loop prevention is the caller's job: messages received from peers go to the handler and are
// never re-broadcast by the channel. The caller must not Broadcast() what it received from a
// peer (salt-wire 10.5: "a master never forwards an event it received from a peer"); with a
// full mesh every master still sees every message once.
//
// Threads: the channel's sockets (one ROUTER, one DEALER per peer, the ZAP handler, a monitor)
// live on `loop`; the handler runs on it. A small "cluster-keys" thread re-reads the peers'
// public keys from the shared directory (it may block on disk; the loop never does).
// Every public method may be called from any thread except where noted.
//
// ZeroMQ serves one ZAP handler per context (inproc://zeromq.zap.01): the channel binds it, so
// its context must have no other ZAP handler (and at most one PeerChannel). Sockets of that
// context with the NULL mechanism and no ZMQ_ZAP_DOMAIN (the minion-facing ones) are not
// affected: libzmq 4.3 consults ZAP for them only when a domain is set (checked).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/peer_frame.h"
#include "halite/common/result.h"
#include "halite/transport/zmq_loop.h"

namespace halite::cluster {

struct PeerMessage {
  std::string kind;     // "event", "publish", "rotate", "hello" or any string
  std::string payload;  // opaque bytes
};

struct PeerSpec {
  std::string id;        // the peer's master id; names peers/<id>.curve
  std::string endpoint;  // "tcp://127.0.0.3:4520"
};

struct PeerChannelOptions {
  std::string self_id;
  std::string bind_endpoint;    // "tcp://<interface>:<cluster_pool_port>"
  std::vector<PeerSpec> peers;  // the other masters
  std::filesystem::path cluster_pki_dir;
  CurveKeyPair keys;                       // this master's, from LoadOrCreateCurveKeys
  std::size_t event_backlog_max = 100000;  // events per peer; the oldest go beyond it
  // The same in bytes (kinds and payloads): return events carry whole returns.
  std::size_t event_backlog_max_bytes = 256u << 20;
  std::size_t publish_queue_max = 10000;  // unacknowledged publishes per peer; then refused
  // A queued publish older than this is given up (the receiver refuses forwarded publishes
  // older than 120 s); 0 keeps them until acknowledged.
  std::chrono::seconds publish_max_age{120};
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds link_timeout{3000};       // no traffic for this long: the link is down
  std::chrono::milliseconds ack_interval{50};         // acks go out at least this often
  std::chrono::milliseconds key_poll_interval{2000};  // re-read of peers/<id>.curve
  std::size_t max_message_bytes = 64u << 20;          // larger frames from a peer are refused
};

// One class of messages on one link.
struct PeerClassStatus {
  std::size_t queued = 0;        // not yet acknowledged by the peer
  std::size_t queued_bytes = 0;  // their kinds and payloads
  std::uint64_t sent = 0;        // acknowledged by the peer
  std::uint64_t received = 0;    // from the peer, given to the handler
  // Given up before the peer acknowledged them (some may have reached it): events pushed out
  // of a full backlog; publishes older than publish_max_age.
  std::uint64_t dropped = 0;
};

struct PeerLinkStatus {
  std::string id;
  std::string endpoint;
  // The peer answered on our link to it within link_timeout. Data goes out only while
  // connected; until then heartbeats probe the link.
  bool connected = false;
  // The last authenticated frame from the peer, on either of our sockets.
  std::optional<std::chrono::system_clock::time_point> last_contact;
  PeerClassStatus events;
  PeerClassStatus publishes;
  // BroadcastPublish calls refused because this peer's publish queue was full.
  std::uint64_t publishes_refused = 0;
  // Both classes together (events + publishes).
  std::size_t backlog = 0;
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t dropped = 0;
  std::string problem;  // empty when connected; otherwise why not, for operators
};

class PeerChannel {
 public:
  // Called on the loop thread, once per message, in the sender's order. Must not block or
  // throw.
  using Handler = std::function<void(const std::string& peer_id, PeerMessage message)>;

  // `context` and `loop` must outlive the channel. Nothing happens until Start().
  PeerChannel(zmq::context_t& context, transport::ZmqLoop& loop, PeerChannelOptions options);
  // Closes the sockets on the loop if it still runs (waits for that) and joins the key thread.
  // Destroy the channel after loop.Stop() returned or while the loop runs, not concurrently
  // with loop.Stop(). No handler call starts after the destructor returns.
  ~PeerChannel();
  PeerChannel(const PeerChannel&) = delete;
  PeerChannel& operator=(const PeerChannel&) = delete;

  // Call before Start(), from the thread that calls Start().
  void SetHandler(Handler handler);

  // Validates the options, reads the peers' keys, then binds and connects on the loop thread
  // and waits for the outcome. The loop must be running; call once, not from the loop thread.
  // Errors: FailedPrecondition (no CURVE in libzmq, another ZAP handler in the context),
  // InvalidArgument (options), Unavailable (cannot bind).
  halite::Status Start();

  // Thread-safe, never blocks: queues the event `message` for every peer (lossy class). Before
  // Start() messages wait in the backlog; after shutdown they are discarded. A message larger
  // than max_message_bytes (less 128 bytes of framing) is logged and not sent.
  void Broadcast(PeerMessage message);

  // Thread-safe, never blocks: queues the job publish `message` for every peer (lossless
  // class), or for none. Errors: ResourceExhausted when some peer already holds
  // publish_queue_max unacknowledged publishes (counted in publishes_refused()); InvalidArgument
  // when larger than max_message_bytes (less framing); FailedPrecondition after shutdown.
  // Before Start() publishes wait in the queue.
  halite::Status BroadcastPublish(PeerMessage message);

  // Runtime membership (cluster_backend: etcd). Thread-safe, never block: the change is made
  // on the loop. AddPeer opens a link to a new peer with the CURVE public key given (not read
  // from peers/; a peer added this way is never looked up there), or, for a known id, takes
  // the new endpoint and key (a restarted master) and reopens the link. It gets only the
  // messages broadcast after it was added. RemovePeer closes the link, forgets what was
  // queued for it and refuses its key from then on; it leaves Status(). Both are no-ops after
  // shutdown; a bad id or key is logged and ignored.
  void AddPeer(PeerSpec peer, std::string curve_public_key);
  void RemovePeer(const std::string& id);

  // Thread-safe snapshot, one entry per peer (configured ones first, in configuration
  // order; then those added, removed ones left out).
  std::vector<PeerLinkStatus> Status() const;

  // Thread-safe. Handshakes on the pool port refused: unknown CURVE keys (including a peer's
  // new key not re-read yet), other security mechanisms, broken handshakes.
  std::uint64_t unauthenticated_rejections() const;

  // Thread-safe. BroadcastPublish calls that failed with ResourceExhausted.
  std::uint64_t publishes_refused() const;

  // This channel's sender epoch (random, non-zero).
  std::uint64_t epoch() const;

 private:
  class Impl;  // the state; shared with the loop's hooks, timers and posted tasks
  std::shared_ptr<Impl> impl_;
};

}  // namespace halite::cluster
