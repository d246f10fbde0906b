// PeerChannel's state, shared by its source files:
// - peer_channel.cc: the caller's side (options, Broadcast, Start, Shutdown), the peers' keys
//   (the "cluster-keys" thread and ApplyKey), socket set-up and the status snapshot;
// - peer_link.cc: the per-peer streams on the loop thread: queues, sending, acks, receiving;
// - peer_auth.cc: the ZAP handler and the handshake monitor.
// Internal to src/cluster.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "halite/cluster/peer_channel.h"
#include "halite/cluster/peer_frame.h"
#include "halite/common/check.h"
#include "halite/transport/zmq_loop.h"

namespace halite::cluster {

namespace peer_internal {

using Clock = std::chrono::steady_clock;

inline constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
inline constexpr char kZapDomain[] = "halite-cluster";
// Acks go out after this many deliveries even before ack_interval.
inline constexpr std::uint64_t kAckEvery = 128;
// Messages read per call of a readable handler (the loop calls again while input remains).
inline constexpr int kReadBatch = 64;
inline constexpr int kSendHwm = 1000;
inline constexpr int kRecvHwm = 1000;
inline constexpr std::chrono::milliseconds kSendRetryDelay{1};
inline constexpr std::size_t kRetiredEpochs = 16;
inline constexpr int kHandshakeFailures = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
// Bytes a data frame adds to kind + payload (map, keys, three uint64, class), rounded up.
inline constexpr std::size_t kFrameOverhead = 128;

inline std::size_t Index(PeerClass cls) { return static_cast<std::size_t>(cls); }
inline const char* ClassName(PeerClass cls) {
  return cls == PeerClass::kPublish ? "publish" : "event";
}
inline constexpr std::array<PeerClass, kPeerClassCount> kClassesBySendPriority = {
    PeerClass::kPublish, PeerClass::kEvent};

// At most one line per `period`; the next allowed line reports how many were held back.
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::seconds period) : period_(period) {}
  // Returns true when the caller may log; `*suppressed` is how many were skipped before.
  bool Allow(std::uint64_t* suppressed);

 private:
  const std::chrono::seconds period_;
  bool logged_once_ = false;
  Clock::time_point last_;
  std::uint64_t suppressed_ = 0;
};

// Receives the remaining frames of a multipart message and drops them.
void DiscardRest(zmq::socket_t& socket, bool more);

}  // namespace peer_internal

class PeerChannel::Impl : public std::enable_shared_from_this<PeerChannel::Impl> {
 public:
  using Clock = peer_internal::Clock;

  Impl(zmq::context_t& context, transport::ZmqLoop& loop, PeerChannelOptions options);
  ~Impl();

  void SetHandler(Handler handler);
  halite::Status Start();
  void Shutdown();
  void Broadcast(PeerMessage message);
  halite::Status BroadcastPublish(PeerMessage message);
  void AddPeer(PeerSpec peer, std::string key);  // peer_members.cc
  void RemovePeer(const std::string& id);
  // Status() with the totals over both classes filled in.
  std::vector<PeerLinkStatus> Snapshot() const;
  std::uint64_t rejections() const { return rejections_.load(); }
  std::uint64_t refused() const { return refused_.load(); }
  std::uint64_t epoch() const { return epoch_; }

 private:
  struct Pending {
    std::uint64_t seq;
    std::shared_ptr<const PeerMessage> message;
    Clock::time_point queued;
  };

  // One class of our messages towards one peer. Loop thread only.
  struct OutStream {
    std::deque<Pending> queue;    // unacknowledged, oldest first, consecutive seqs
    std::size_t bytes = 0;        // the kinds and payloads in `queue`
    std::uint64_t next_seq = 1;   // seq of the next Broadcast
    std::uint64_t send_next = 1;  // seq of the next frame to hand to ZeroMQ
    std::uint64_t burst_drops = 0;
    bool dropped_since_tick = false;
    std::uint64_t low() const { return queue.empty() ? next_seq : queue.front().seq; }
    static std::size_t Size(const Pending& p) {
      return p.message->kind.size() + p.message->payload.size();
    }
    void Push(Pending p) {
      bytes += Size(p);
      queue.push_back(std::move(p));
    }
    void PopFront() {
      bytes -= Size(queue.front());
      queue.pop_front();
    }
    void Clear() {
      queue.clear();
      bytes = 0;
    }
  };

  // Our sending side towards one peer: the DEALER and one stream per class. Loop thread only.
  struct Link {
    std::string id;
    std::string endpoint;
    std::string server_key;   // z85; empty while unknown
    std::string key_problem;  // why there is no usable key or socket
    std::unique_ptr<zmq::socket_t> dealer;
    transport::ZmqLoop::WatchId watch = 0;
    std::array<OutStream, kPeerClassCount> out;
    bool connected = false;
    std::optional<Clock::time_point> last_reply;  // on the DEALER
    Clock::time_point dealer_since;               // when the DEALER was (re)made
    bool retry_pending = false;
    bool removed = false;  // left the cluster (RemovePeer): no socket, no key, no queue
    bool runtime = false;  // added by AddPeer: its key is not read from peers/
    void Rewind() {        // resend everything unacknowledged, oldest first
      for (OutStream& stream : out) stream.send_next = stream.low();
    }
    std::size_t queued() const {
      std::size_t n = 0;
      for (const OutStream& stream : out) n += stream.queue.size();
      return n;
    }
  };

  // Our receiving side for one class of one peer's messages (they come in on the ROUTER).
  // Loop thread only.
  struct InStream {
    std::uint64_t epoch = 0;            // the sender epoch being followed; 0 = none yet
    std::uint64_t expected = 0;         // next seq to deliver
    std::deque<std::uint64_t> retired;  // earlier epochs of this peer: ignored
    std::uint64_t unacked = 0;          // deliveries (or duplicates) since the last ack
    std::uint64_t nacked = 0;           // `expected` of the last resend request
    Clock::time_point nack_time;
  };
  struct Inbound {
    std::string routing_id;  // the connection acks go back to
    std::array<InStream, kPeerClassCount> in;
  };

  struct KeyReading {
    std::string key;      // z85, empty when unreadable
    std::string problem;  // why
    bool operator==(const KeyReading&) const = default;
  };

  struct Incoming {
    PeerClass cls;
    PeerMessage message;
    Clock::time_point queued;
  };

  // Caller / key thread (peer_channel.cc).
  halite::Status ValidateOptions() const;
  std::vector<KeyReading> ReadPeerKeys() const;
  void KeyThread(std::vector<KeyReading> last);
  bool FitsInAFrame(const PeerMessage& message) const;
  void PostDrain();

  // Loop thread: set-up, keys, status (peer_channel.cc); authentication (peer_auth.cc).
  halite::Status StartOnLoop(const std::vector<KeyReading>& keys);
  void CloseOnLoop();
  void CloseSockets();
  void ApplyKey(std::size_t i, const KeyReading& reading);
  void RebuildZapKeys();
  void CreateDealer(std::size_t i);
  void OnZapReadable();
  void OnMonitorReadable();
  void PublishLink(std::size_t i);
  void Touch(std::size_t i);

  // Loop thread: runtime membership (peer_members.cc).
  void AddPeerOnLoop(PeerSpec peer, std::string key);
  void RemovePeerOnLoop(const std::string& id);

  // Loop thread: the streams (peer_link.cc).
  void DrainInbox();
  void Deliver(std::vector<Incoming>& batch);
  void Enqueue(std::size_t i, PeerClass cls, const std::shared_ptr<const PeerMessage>& message,
               Clock::time_point queued);
  void ExpirePublishes(std::size_t i, Clock::time_point now);
  // Publishes that left link i's queue (acknowledged or expired): their room is free again.
  void ReleasePublishes(std::size_t i, std::size_t n);
  void Pump(std::size_t i);
  void ScheduleRetry(std::size_t i);
  void OnHeartbeatTick();
  void LogDropBursts(std::size_t i);
  void OnAckTick();
  void OnDealerReadable(std::size_t i);
  void OnAck(std::size_t i, const AckFrame& ack);
  void OnRouterReadable();
  bool FollowEpoch(std::size_t i, PeerClass cls, std::uint64_t epoch, std::uint64_t low);
  void OnData(std::size_t i, DataFrame data);
  void OnHeartbeat(std::size_t i, const HeartbeatFrame& hb);
  void RequestResend(std::size_t i, PeerClass cls);
  void SendAck(std::size_t i, PeerClass cls, bool resend);
  void SendFinalAcks();

  zmq::context_t& context_;
  transport::ZmqLoop& loop_;
  const PeerChannelOptions options_;
  const std::uint64_t epoch_;
  const std::string monitor_endpoint_;
  Handler handler_;       // set before Start, then read on the loop only
  bool started_ = false;  // caller thread
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> rejections_{0};
  std::atomic<std::uint64_t> refused_{0};

  // Broadcast() hands messages over here; one posted task drains a batch. publish_held_[i] is
  // the number of publishes queued for peer i (in inbox_ or in its stream) and not yet
  // acknowledged or expired: BroadcastPublish reserves room here, the loop releases it.
  std::mutex inbox_mu_;
  std::vector<Incoming> inbox_ HALITE_GUARDED_BY(inbox_mu_);
  std::vector<std::size_t> publish_held_ HALITE_GUARDED_BY(inbox_mu_);

  mutable std::mutex stats_mu_;
  std::vector<PeerLinkStatus> stats_ HALITE_GUARDED_BY(stats_mu_);
  std::vector<bool> listed_ HALITE_GUARDED_BY(stats_mu_);  // false: removed, not in Status()

  std::thread key_thread_;
  std::mutex key_mu_;
  std::condition_variable key_cv_;
  bool key_stop_ HALITE_GUARDED_BY(key_mu_) = false;

  // Loop-thread state.
  std::vector<Link> links_;
  std::vector<Inbound> inbound_;
  std::unordered_map<std::string, std::size_t> index_by_id_;  // grows by AddPeer, never shrinks
  std::unordered_map<std::string, std::size_t> zap_keys_;     // raw public key -> link index
  std::unique_ptr<zmq::socket_t> router_;
  std::unique_ptr<zmq::socket_t> zap_;
  std::unique_ptr<zmq::socket_t> monitor_;
  transport::ZmqLoop::WatchId router_watch_ = 0;
  transport::ZmqLoop::WatchId zap_watch_ = 0;
  transport::ZmqLoop::WatchId monitor_watch_ = 0;
  transport::ZmqLoop::TimerId heartbeat_timer_ = 0;
  transport::ZmqLoop::TimerId ack_timer_ = 0;
  peer_internal::LogLimiter malformed_log_{std::chrono::seconds(10)};
  peer_internal::LogLimiter rejection_log_{std::chrono::seconds(10)};
  peer_internal::LogLimiter zap_log_{std::chrono::seconds(10)};
  peer_internal::LogLimiter refused_log_{std::chrono::seconds(10)};
};

}  // namespace halite::cluster
