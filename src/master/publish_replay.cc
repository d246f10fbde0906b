#include "halite/master/publish_replay.h"

#include <algorithm>

namespace halite::master {

namespace {

// The publish's own timeout: Salt's LocalClient sends "to" (seconds) and the master passes
// it on in the minion's load.
std::optional<std::chrono::milliseconds> LoadTimeout(const wire::Value& load) {
  const wire::Value* to = load.Find("to");
  if (to == nullptr) return std::nullopt;
  if (auto n = to->int64(); n && *n > 0) return std::chrono::seconds(*n);
  return std::nullopt;
}

bool HasAny(std::string_view s, std::string_view chars) {
  return s.find_first_of(chars) != std::string_view::npos;
}

// Returned ids are accounted at their size plus a set node's overhead.
constexpr std::size_t kReturnedOverhead = 48;

}  // namespace

std::optional<std::string> TargetExcluding(const wire::Value& load,
                                           const std::set<std::string, std::less<>>& minions) {
  constexpr std::string_view kBlank = " \t\r\n\v\f";
  std::string excluded;
  for (const std::string& id : minions) {
    if (id.empty() || HasAny(id, kBlank) || HasAny(id, ",()")) continue;
    if (!excluded.empty()) excluded += ',';
    excluded += id;
  }
  if (excluded.empty()) return std::nullopt;
  if (const std::string* delimiter = load.FindStr("delimiter"); delimiter && *delimiter != ":") {
    return std::nullopt;
  }
  const wire::Value* tgt = load.Find("tgt");
  const std::string* type = load.FindStr("tgt_type");
  const std::string tgt_type = type ? *type : "glob";
  std::string term;
  if (tgt_type == "list") {
    std::string ids;
    auto add = [&](std::string_view id) {
      if (id.empty()) return;
      if (!ids.empty()) ids += ',';
      ids += id;
    };
    if (tgt != nullptr && tgt->array() != nullptr) {
      for (const wire::Value& v : *tgt->array()) {
        const std::string* id = v.str();
        if (id == nullptr || HasAny(*id, kBlank) || HasAny(*id, ",()")) return std::nullopt;
        add(*id);
      }
    } else if (const std::string* text = tgt ? tgt->str() : nullptr) {
      // Salt's list matcher splits a string target on commas (and halite's on whitespace).
      std::string cur;
      for (char c : *text) {
        if (c == ',' || kBlank.find(c) != std::string_view::npos) {
          add(cur);
          cur.clear();
        } else if (c == '(' || c == ')') {
          return std::nullopt;
        } else {
          cur += c;
        }
      }
      add(cur);
    }
    if (ids.empty()) return std::nullopt;
    term = "L@" + ids;
  } else {
    const std::string* text = tgt ? tgt->str() : nullptr;
    if (text == nullptr || text->empty()) return std::nullopt;
    if (tgt_type == "compound") {
      term = "( " + *text + " )";
    } else {
      if (HasAny(*text, kBlank)) return std::nullopt;
      static const std::pair<std::string_view, std::string_view> kPrefixes[] = {
          {"glob", ""},     {"pcre", "E@"},        {"grain", "G@"}, {"grain_pcre", "P@"},
          {"pillar", "I@"}, {"pillar_pcre", "J@"}, {"ipcidr", "S@"}};
      bool known = false;
      for (const auto& [name, prefix] : kPrefixes) {
        if (tgt_type == name) {
          term = std::string(prefix) + *text;
          known = true;
          break;
        }
      }
      if (!known) return std::nullopt;
      // A bare word that looks like a compound operator or prefix is not a glob there.
      if (tgt_type == "glob" &&
          (term == "and" || term == "or" || term == "not" || (term.size() > 1 && term[1] == '@'))) {
        return std::nullopt;
      }
    }
  }
  return "( " + term + " ) and not L@" + excluded;
}

void PublishReplay::Remember(const wire::Value& load, Clock::time_point now) {
  const std::string* jid = load.FindStr("jid");
  if (jid == nullptr || jid->empty()) return;
  DropExpired(now);
  auto same =
      std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.jid == *jid; });
  if (same != kept_.end()) {
    bytes_ -= same->bytes;
    kept_.erase(same);
  }
  auto window = std::min(LoadTimeout(load).value_or(options_.default_window) + options_.grace,
                         options_.max_window);
  Kept k{*jid, load, wire::Pack(load).size(), now + window, {}};
  if (k.bytes > options_.max_bytes) return;  // one huge job does not flush every other one
  bytes_ += k.bytes;
  kept_.push_back(std::move(k));
  Bound();
}

void PublishReplay::Returned(std::string_view jid, std::string_view minion) {
  if (minion.empty()) return;
  auto it = std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.jid == jid; });
  if (it == kept_.end()) return;
  if (!it->returned.emplace(minion).second) return;
  const std::size_t cost = minion.size() + kReturnedOverhead;
  it->bytes += cost;
  bytes_ += cost;
  Bound();
}

void PublishReplay::Bound() {
  while (!kept_.empty() && (kept_.size() > options_.max_jobs || bytes_ > options_.max_bytes)) {
    DropOldest();
  }
}

std::optional<PublishReplay::Clock::time_point> PublishReplay::OnSubscriber(Clock::time_point now) {
  if (scheduled_) return std::nullopt;
  DropExpired(now);
  if (kept_.empty()) return std::nullopt;
  scheduled_ = true;
  // Quiet for max_interval since the last round: a new burst starts at the debounce again.
  if (!last_round_ || now - *last_round_ > options_.max_interval) wait_ = options_.debounce;
  return now + wait_;
}

std::vector<wire::Value> PublishReplay::TakeReplay(Clock::time_point now) {
  scheduled_ = false;
  last_round_ = now;
  wait_ = std::min(std::max(wait_, options_.debounce) * 2, options_.max_interval);
  DropExpired(now);
  std::vector<wire::Value> loads;
  loads.reserve(kept_.size());
  for (const Kept& k : kept_) {
    wire::Value load = k.load;
    if (!k.returned.empty()) {
      if (auto tgt = TargetExcluding(k.load, k.returned)) {
        load.Set("tgt", std::move(*tgt));
        load.Set("tgt_type", "compound");
      }
    }
    loads.push_back(std::move(load));
  }
  return loads;
}

void PublishReplay::DropExpired(Clock::time_point now) {
  // Windows differ per job, so an expired entry may sit behind a live one.
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->expires <= now) {
      bytes_ -= it->bytes;
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

void PublishReplay::DropOldest() {
  bytes_ -= kept_.front().bytes;
  kept_.pop_front();
}

}  // namespace halite::master
