#include "halite/client/batch.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <set>

#include "halite/client/output.h"

namespace halite::client {

namespace {

using Clock = std::chrono::steady_clock;

// One published group of the window: the minions it still waits for, and Salt's
// get_iter_returns timing (timeout, then saltutil.find_job every gather_job_timeout while a
// minion says it still runs the job).
struct Group {
  std::string jid;
  std::set<std::string> pending;
  Clock::time_point deadline;
  bool find_sent = false;
  std::string find_jid;
  std::set<std::string> running;
};

wire::Value IdList(const std::vector<std::string>& ids) {
  wire::Array a;
  for (const auto& id : ids) a.emplace_back(id);
  return wire::Value(std::move(a));
}

// "salt/job/<jid>/ret/<id>" -> (jid, id); empty jid for other tags.
std::pair<std::string, std::string> ReturnTag(const std::string& tag) {
  static const std::string kPrefix = "salt/job/";
  if (tag.rfind(kPrefix, 0) != 0) return {};
  const std::size_t slash = tag.find('/', kPrefix.size());
  if (slash == std::string::npos || tag.compare(slash, 5, "/ret/") != 0) return {};
  return {tag.substr(kPrefix.size(), slash - kPrefix.size()), tag.substr(slash + 5)};
}

}  // namespace

Batch::Batch(LocalClient& client, PublishRequest job, BatchOptions options)
    : client_(client), job_(std::move(job)), options_(std::move(options)) {}

Result<std::size_t> Batch::WindowSize(std::string_view size, std::size_t minions) {
  const Error invalid = Error::InvalidArgument("Invalid batch data sent: " + std::string(size) +
                                               "\nData must be in the form of %10, 10% or 3");
  std::string text(size);
  if (text.find('%') != std::string::npos) {
    const std::size_t b = text.find_first_not_of('%');
    const std::size_t e = text.find_last_not_of('%');
    if (b == std::string::npos) return invalid;
    text = text.substr(b, e - b + 1);
    double percent = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
    if (ec != std::errc() || end != text.data() + text.size() || !(percent > 0)) return invalid;
    const double share = percent / 100.0 * static_cast<double>(minions);
    return static_cast<std::size_t>(share < 1 ? std::ceil(share) : share);
  }
  long long n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  // Salt loops forever on 0 or a negative size; refuse them instead.
  if (ec != std::errc() || end != text.data() + text.size() || n <= 0) return invalid;
  return static_cast<std::size_t>(n);
}

Result<int> Batch::Run(const BatchSink& sink) {
  // Salt's gather_minions: test.ping the target; the minions that answer are the batch.
  PublishRequest ping = job_;
  ping.fun = wire::Value("test.ping");
  ping.arg.clear();
  ping.jid.clear();
  ping.ret.clear();
  ping.extra_kwargs.clear();
  auto pinged = client_.Publish(ping);
  if (!pinged.ok()) {
    if (pinged.error().code != ErrorCode::kNotFound) return pinged.error();
    sink.say("No minions matched the target. No command was sent, no jid was assigned.");
    sink.say("No minions matched the target.");
    return 0;
  }
  std::vector<std::string> up;
  WaitOptions ping_wait;
  ping_wait.timeout = options_.timeout;
  ping_wait.gather_timeout = options_.gather_timeout;
  HALITE_ASSIGN_OR_RETURN(
      auto silent, client_.WaitForReturns(*pinged, ping_wait,
                                          [&](const MinionReturn& r) { up.push_back(r.id); }));
  (void)silent;
  HALITE_ASSIGN_OR_RETURN(const std::size_t window, WindowSize(options_.size, up.size()));
  if (up.empty()) return 0;
  std::sort(up.begin(), up.end());
  std::vector<std::string> down;
  for (const auto& id : pinged->minions) {
    if (!std::binary_search(up.begin(), up.end(), id)) down.push_back(id);
  }
  std::sort(down.begin(), down.end());
  for (const auto& id : down) sink.say("Minion " + id + " did not respond. No job will be sent.");

  std::deque<std::string> to_run(up.begin(), up.end());
  std::vector<Group> groups;
  std::deque<Clock::time_point> closed_slots;  // --batch-wait
  std::size_t active = 0;
  std::size_t done = 0;
  int retcode = 0;
  bool stop = false;
  auto deliver = [&](Group& g, MinionReturn r, bool silent = false) {
    if (!g.pending.erase(r.id)) return;
    --active;
    ++done;
    if (options_.wait.count() > 0) closed_slots.push_back(Clock::now() + options_.wait);
    wire::Value display = wire::Value::EmptyMap();
    if (r.retcode) display.Set("retcode", *r.retcode);
    if (!silent) display.Set("jid", g.jid);
    display.Set(r.id, r.ret);
    sink.returned(r, display);
    const std::int64_t rc = r.retcode.value_or(0);
    retcode = std::max<int>(retcode, static_cast<int>(rc));
    if (options_.failhard && rc > 0) {
      sink.error("[ERROR   ] Minion " + r.id +
                 " returned with non-zero exit code. Batch run stopped due to failhard");
      stop = true;
    }
  };
  auto reconcile = [&](Group& g) {
    if (g.pending.empty() || g.jid.empty()) return;
    auto stored = client_.LookupJid(g.jid);
    if (!stored.ok()) return;
    const wire::Value* rets = stored->Find("returns");
    if (rets == nullptr || rets->map() == nullptr) return;
    for (const auto& [k, v] : *rets->map()) {
      if (!k.str() || stop) continue;
      MinionReturn r = MinionReturnFromData(v);
      r.id = *k.str();
      deliver(g, std::move(r));
    }
  };
  auto last_news = Clock::now();
  while (done < up.size() && !stop) {
    auto now = Clock::now();
    while (!closed_slots.empty() && closed_slots.front() <= now) closed_slots.pop_front();
    std::vector<std::string> next;
    while (active + closed_slots.size() + next.size() < window && !to_run.empty()) {
      next.push_back(to_run.front());
      to_run.pop_front();
    }
    if (!next.empty()) {
      std::sort(next.begin(), next.end());
      sink.say("\nExecuting run on " + PyRepr(IdList(next)) + "\n");
      PublishRequest request = job_;
      request.tgt = IdList(next);
      request.tgt_type = "list";
      request.jid.clear();
      Group g;
      g.pending.insert(next.begin(), next.end());
      g.deadline = Clock::now() + options_.timeout;
      active += next.size();
      auto published = client_.Publish(request);
      if (!published.ok() && published.error().code != ErrorCode::kNotFound) {
        return published.error();
      }
      if (published.ok()) g.jid = published->jid;
      groups.push_back(std::move(g));
      if (!published.ok()) groups.back().deadline = Clock::now();  // nobody to wait for
    }
    // Returns are gathered until 5 polls of 10 ms find nothing before the window is refilled,
    // as Salt's loop does, so minions that return together print before the next group.
    bool gathering = false;  // a return came: keep polling, up to 5 empty polls in all
    int empty_polls = 0;
    for (;;) {
      const auto wait = std::chrono::milliseconds(gathering ? 10 : next.empty() ? 20 : 0);
      HALITE_ASSIGN_OR_RETURN(auto event, client_.NextEvent(wait));
      if (!event) {
        if (!gathering || ++empty_polls >= 5) break;
        continue;
      }
      gathering = true;
      auto [jid, id] = ReturnTag(event->first);
      for (Group& g : groups) {
        if (jid.empty()) break;
        if (jid == g.jid) {
          MinionReturn r = MinionReturnFromData(event->second);
          if (r.id.empty()) r.id = id;
          deliver(g, std::move(r));
          last_news = Clock::now();
          break;
        }
        if (g.find_sent && jid == g.find_jid) {
          if (event->second.Find("return") && event->second.Find("return")->Truthy() &&
              g.pending.count(id)) {
            g.running.insert(id);
          }
          break;
        }
      }
      if (stop) break;
    }
    now = Clock::now();
    // A return whose event was lost (a master that died after storing it) is still found.
    if (now - last_news > std::chrono::seconds(1)) {
      for (Group& g : groups) reconcile(g);
      last_news = now;
    }
    for (Group& g : groups) {
      if (g.pending.empty() || now < g.deadline || stop) continue;
      if (!g.jid.empty() && (!g.find_sent || !g.running.empty())) {
        PublishRequest find;
        find.tgt = IdList(std::vector<std::string>(g.pending.begin(), g.pending.end()));
        find.tgt_type = "list";
        find.fun = wire::Value("saltutil.find_job");
        find.arg = wire::Array{wire::Value(g.jid)};
        auto sent = client_.Publish(find);
        g.find_sent = sent.ok();
        g.find_jid = sent.ok() ? sent->jid : "";
        g.running.clear();
        g.deadline = now + std::max(options_.gather_timeout, std::chrono::milliseconds(1000));
        if (sent.ok()) continue;
      }
      // Nobody runs it any more: Salt reports each silent minion with an empty return.
      reconcile(g);
      for (const std::string& id : std::vector<std::string>(g.pending.begin(), g.pending.end())) {
        if (stop) break;
        MinionReturn r;
        r.id = id;
        r.ret = wire::Value::EmptyMap();
        deliver(g, std::move(r), true);
      }
    }
  }
  return retcode;
}

}  // namespace halite::client
