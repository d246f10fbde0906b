#include "halite/client/local_client.h"

#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <map>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"
#include "halite/wire/event.h"

namespace halite::client {

namespace {

using Clock = std::chrono::steady_clock;

// The master's replies on its local socket wrap what it stored (a job's arguments, a
// minion's return) a few levels deeper and many to one reply: what the master accepted at
// its own limits (64 levels, 1 Mi values per request) must decode here. The default limits
// made one minion's 62-byte return, nested 63 deep, break jobs.list_jobs for everyone.
const wire::UnpackLimits kReplyLimits{
    .max_depth = 64 + 16, .max_bytes = std::size_t{1} << 30, .max_nodes = std::size_t{64} << 20};

std::vector<std::string> StrVector(const wire::Value* v) {
  std::vector<std::string> out;
  if (!v) return out;
  if (const wire::Array* a = v->array()) {
    for (const auto& e : *a) {
      if (const std::string* s = e.str()) out.push_back(*s);
    }
  }
  return out;
}

}  // namespace

MinionReturn MinionReturnFromData(const wire::Value& data) {
  MinionReturn r;
  if (const std::string* id = data.FindStr("id")) r.id = *id;
  if (const wire::Value* ret = data.Find("return")) r.ret = *ret;
  if (const wire::Value* rc = data.Find("retcode")) {
    r.retcode = rc->int64();
    // A multi-function job's retcode is a map of retcodes: Salt takes the highest.
    if (const wire::Map* m = rc->map()) {
      std::int64_t high = 0;
      for (const auto& [k, v] : *m) high = std::max(high, v.int64().value_or(0));
      r.retcode = high;
    }
  }
  if (const wire::Value* ok = data.Find("success")) r.success = ok->boolean();
  if (const std::string* out = data.FindStr("out")) r.out = *out;
  return r;
}

Result<std::unique_ptr<LocalClient>> LocalClient::Connect(const ClientOptions& options) {
  std::unique_ptr<LocalClient> c(new LocalClient());
  c->options_ = options;
  // Salt's __read_master_key: root and the master's own user present .root_key; any other
  // user its own key, which the master writes for the users named in publisher_acl.
  auto key = keys::ReadFile(std::filesystem::path(options.cachedir) / ".root_key");
  if (!key.ok() && ::geteuid() != 0) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
      return Error::PermissionDenied("cannot find the name of user " + std::to_string(::geteuid()));
    }
    c->user_ = found->pw_name;
    const std::string file = options.cachedir + "/." + c->user_ + "_key";
    key = keys::ReadFile(file);
    if (!key.ok()) {
      return Error::PermissionDenied("cannot read " + file + " (is " + c->user_ +
                                     " in the master's publisher_acl, and is the master "
                                     "running?): " +
                                     key.error().message);
    }
    c->root_key_ = *key;
    c->ResetRequestSocket();
    return c;
  }
  if (!key.ok()) {
    return Error::PermissionDenied(
        "cannot read " + options.cachedir +
        "/.root_key (is the master running, and are you root?): " + key.error().message);
  }
  c->root_key_ = *key;
  c->ResetRequestSocket();
  return c;
}

LocalClient::~LocalClient() {
  req_.reset();
  sub_.reset();
}

void LocalClient::ResetRequestSocket() {
  req_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::req);
  req_->set(zmq::sockopt::linger, 0);
  req_->connect("ipc://" + options_.sock_dir + "/halite_req.ipc");
}

Result<wire::Value> LocalClient::Request(const wire::Value& load) {
  wire::Value envelope = wire::Value::MapOf({{"enc", "clear"}, {"load", load}, {"version", 3}});
  std::string body = wire::Pack(envelope);
  try {
    req_->send(zmq::buffer(body));
    zmq::pollitem_t item{static_cast<void*>(*req_), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, options_.request_timeout);
    if (!(item.revents & ZMQ_POLLIN)) {
      ResetRequestSocket();
      return Error::DeadlineExceeded(
          "the master did not answer within " + std::to_string(options_.request_timeout.count()) +
          " ms (is halite-master running? sock_dir " + options_.sock_dir + ")");
    }
    zmq::message_t reply;
    (void)req_->recv(reply);
    return wire::Unpack(reply.to_string_view(), kReplyLimits);
  } catch (const zmq::error_t& e) {
    ResetRequestSocket();
    return Error::Unavailable(std::string("request to the master failed: ") + e.what());
  }
}

Result<wire::Value> LocalClient::Call(wire::Value load) {
  load.Set("key", root_key_);
  HALITE_ASSIGN_OR_RETURN(wire::Value reply, Request(load));
  if (const wire::Value* err = reply.Find("error")) {
    const std::string* name = err->FindStr("name");
    const std::string* message = err->FindStr("message");
    return Error::Unauthenticated((name ? *name : "Error") + ": " +
                                  (message ? *message : err->ToJson()));
  }
  const wire::Value* inner = reply.Find("load");
  if (!inner) return Error::Internal("unexpected reply from the master: " + reply.ToJson());
  if (const std::string* err = inner->FindStr("error")) {
    return Error::FailedPrecondition(*err);
  }
  return *inner;
}

Status LocalClient::SubscribeEvents(const std::vector<std::string>& prefixes) {
  try {
    sub_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::sub);
    sub_->set(zmq::sockopt::linger, 0);
    sub_->set(zmq::sockopt::rcvhwm, 0);
    for (const auto& prefix : prefixes) sub_->set(zmq::sockopt::subscribe, prefix);
    sub_->set(zmq::sockopt::subscribe, "halite/probe/");
    sub_->connect("ipc://" + options_.sock_dir + "/halite_event_pub.ipc");
  } catch (const zmq::error_t& e) {
    return Error::Unavailable(std::string("cannot subscribe to the event bus: ") + e.what());
  }
  const std::string nonce = wire::RandomNonce();
  const std::string want = "halite/probe/" + nonce;
  auto deadline = Clock::now() + options_.request_timeout;
  while (Clock::now() < deadline) {
    auto probe = Call(wire::Value::MapOf({{"cmd", "_halite_probe"}, {"nonce", nonce}}));
    if (!probe.ok()) return probe.error();
    auto round_end = std::min(deadline, Clock::now() + std::chrono::milliseconds(200));
    while (Clock::now() < round_end) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(round_end - Clock::now());
      HALITE_ASSIGN_OR_RETURN(auto event, NextEvent(left));
      if (event && event->first == want) return OkStatus();
    }
  }
  return Error::DeadlineExceeded("the event bus subscription did not become live");
}

Result<std::optional<std::pair<std::string, wire::Value>>> LocalClient::NextEvent(
    std::chrono::milliseconds wait) {
  if (!sub_) return Error::FailedPrecondition("not subscribed to events");
  try {
    zmq::pollitem_t item{static_cast<void*>(*sub_), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, wait);
    if (!(item.revents & ZMQ_POLLIN)) return std::optional<std::pair<std::string, wire::Value>>();
    zmq::message_t msg;
    (void)sub_->recv(msg);
    auto event = wire::UnpackEvent(msg.to_string_view());
    if (!event.ok()) return std::optional<std::pair<std::string, wire::Value>>();
    return std::optional(std::make_pair(std::move(event->tag), std::move(event->data)));
  } catch (const zmq::error_t& e) {
    return Error::Unavailable(std::string("event bus: ") + e.what());
  }
}

Result<PublishReply> LocalClient::Publish(const PublishRequest& request) {
  wire::Value load =
      wire::Value::MapOf({{"cmd", "publish"},
                          {"tgt", request.tgt},
                          {"fun", request.fun},
                          {"arg", wire::Value(request.arg)},
                          {"tgt_type", request.tgt_type},
                          {"ret", request.ret},
                          {"jid", request.jid},
                          {"kwargs", wire::Value::MapOf({{"show_timeout", request.show_timeout},
                                                         {"show_jid", false},
                                                         {"delimiter", request.delimiter}})},
                          {"user", user_}});
  for (const auto& [k, v] : request.extra_kwargs) {
    if (const std::string* name = k.str()) load.Find("kwargs")->Set(*name, v);
  }
  if (request.timeout) load.Set("to", static_cast<std::int64_t>(request.timeout->count()));
  if (!request.token.empty()) load.Set("token", request.token);
  auto reply = Call(std::move(load));
  if (!reply.ok()) {
    if (reply.error().message.rfind("Master could not resolve minions", 0) == 0) {
      return Error::NotFound("No minions matched the target.");
    }
    return reply.error();
  }
  PublishReply out;
  if (const std::string* jid = reply->FindStr("jid")) out.jid = *jid;
  out.minions = StrVector(reply->Find("minions"));
  out.missing = StrVector(reply->Find("missing"));
  if (out.jid.empty()) return Error::Internal("publish reply without a jid");
  return out;
}

Result<std::vector<std::string>> LocalClient::WaitForReturns(
    const PublishReply& job, const WaitOptions& options,
    const std::function<void(const MinionReturn&)>& on_return) {
  std::set<std::string> expected(job.minions.begin(), job.minions.end());
  std::set<std::string> returned;
  const std::string prefix = "salt/job/" + job.jid + "/ret/";
  auto deliver = [&](MinionReturn r) {
    if (r.id.empty() || returned.count(r.id)) return;
    returned.insert(r.id);
    on_return(r);
    if (options.progress) options.progress(returned.size(), expected.size());
  };
  auto all_in = [&] {
    for (const auto& id : expected) {
      if (!returned.count(id)) return false;
    }
    return true;
  };
  // Returns that reached the job cache without their event reaching us (the minion's master
  // could not forward it: a cut peer link, a master that died after storing): looked up
  // whenever no event has come for a while, so the CLI prints them and finishes without
  // waiting out the timeout. 1 s after the last news, then backing off to every 5 s.
  // Once the master stops answering, the job cache is all there is: read it directly (when
  // the caller gave a reader), every second until the deadline.
  bool master_gone = false;
  auto reconcile = [&] {
    if (master_gone) {
      auto stored = job_cache_reader_(job.jid);
      if (!stored.ok()) return;
      for (auto& r : *stored) deliver(std::move(r));
      return;
    }
    auto stored = LookupJid(job.jid);
    if (!stored.ok()) {
      const ErrorCode code = stored.error().code;
      if (job_cache_reader_ &&
          (code == ErrorCode::kDeadlineExceeded || code == ErrorCode::kUnavailable)) {
        master_gone = true;
        if (notice_) {
          notice_(stored.error().message + "; reading the returns of " + job.jid +
                  " from the job cache until the timeout");
        }
        auto direct = job_cache_reader_(job.jid);
        if (direct.ok()) {
          for (auto& r : *direct) deliver(std::move(r));
        } else if (notice_) {
          notice_("job cache: " + direct.error().message);
        }
      }
      return;
    }
    const wire::Value* rets = stored->Find("returns");
    if (rets == nullptr || rets->map() == nullptr) return;
    for (const auto& [k, v] : *rets->map()) {
      if (!k.str()) continue;
      MinionReturn r = MinionReturnFromData(v);
      r.id = *k.str();
      deliver(std::move(r));
    }
  };
  constexpr auto kQuietBeforePoll = std::chrono::milliseconds(1000);
  constexpr auto kMaxPollInterval = std::chrono::milliseconds(5000);
  auto poll_interval = kQuietBeforePoll;
  auto next_poll = Clock::now() + kQuietBeforePoll;
  auto deadline = Clock::now() + options.timeout;
  std::string find_jid;
  std::string find_prefix;
  std::set<std::string> running;
  bool find_sent = false;
  while (!all_in()) {
    auto now = Clock::now();
    if (now >= deadline) {
      if (find_sent) {
        if (running.empty()) break;
        find_sent = false;  // some still run: ask again
      }
      if (!options.find_job || master_gone) break;
      std::vector<std::string> silent;
      for (const auto& id : expected) {
        if (!returned.count(id)) silent.push_back(id);
      }
      wire::Array tgt;
      for (const auto& id : silent) tgt.emplace_back(id);
      PublishRequest find;
      find.tgt = wire::Value(tgt);
      find.tgt_type = "list";
      find.fun = "saltutil.find_job";
      find.arg = wire::Array{job.jid};
      auto sent = Publish(find);
      if (!sent.ok()) break;
      find_jid = sent->jid;
      find_prefix = "salt/job/" + find_jid + "/ret/";
      running.clear();
      find_sent = true;
      deadline = Clock::now() + std::max(options.timeout, std::chrono::milliseconds(1000));
      continue;
    }
    if (now >= next_poll) {
      reconcile();
      poll_interval =
          master_gone ? kQuietBeforePoll : std::min(poll_interval * 2, kMaxPollInterval);
      next_poll = Clock::now() + poll_interval;
      continue;
    }
    auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::min(deadline, next_poll) - now);
    // Never negative: zmq::poll would wait forever.
    wait = std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(250));
    HALITE_ASSIGN_OR_RETURN(auto event, NextEvent(wait));
    if (!event) continue;
    const std::string& tag = event->first;
    if (tag.rfind(prefix, 0) == 0) {
      deliver(MinionReturnFromData(event->second));
      poll_interval = kQuietBeforePoll;  // news: the events flow, no need to look yet
      next_poll = Clock::now() + kQuietBeforePoll;
    } else if (!find_prefix.empty() && tag.rfind(find_prefix, 0) == 0) {
      MinionReturn r = MinionReturnFromData(event->second);
      if (r.ret.Truthy() && !returned.count(r.id)) running.insert(r.id);
    }
  }
  // A last look: a return stored while its event was lost still counts.
  if (!all_in()) reconcile();
  std::vector<std::string> missing;
  for (const auto& id : expected) {
    if (!returned.count(id)) missing.push_back(id);
  }
  return missing;
}

Result<wire::Value> LocalClient::LookupJid(const std::string& jid) {
  return Call(wire::Value::MapOf({{"cmd", "_halite_lookup_jid"}, {"jid", jid}}));
}

Result<wire::Value> LocalClient::ListJobs() {
  return Call(wire::Value::MapOf({{"cmd", "_halite_list_jobs"}}));
}

}  // namespace halite::client
