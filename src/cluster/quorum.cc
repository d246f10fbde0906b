#include "halite/cluster/quorum.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <set>

#include "halite/keys/fs.h"

namespace halite::cluster {

std::string QuorumViewToText(const QuorumView& view) {
  std::string out = std::to_string(view.seq) + " ";
  for (std::size_t i = 0; i < view.reachable.size(); ++i) {
    if (i) out += ',';
    out += view.reachable[i];
  }
  if (!view.job_cache_ok) out += " job-cache-down";
  return out + "\n";
}

Result<QuorumView> QuorumViewFromText(std::string_view id, std::string_view text) {
  auto bad = [&] {
    return Error::InvalidArgument("quorum view of " + std::string(id) + " is malformed");
  };
  if (text.empty() || text.back() != '\n' || text.size() > 64 * 1024) return bad();
  text.remove_suffix(1);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return bad();
  QuorumView view;
  view.id = std::string(id);
  const auto seq = text.substr(0, space);
  auto [end, ec] = std::from_chars(seq.data(), seq.data() + seq.size(), view.seq);
  if (ec != std::errc() || end != seq.data() + seq.size()) return bad();
  std::string_view rest = text.substr(space + 1);
  if (const auto flag = rest.find(' '); flag != std::string_view::npos) {
    if (rest.substr(flag + 1) != "job-cache-down") return bad();
    view.job_cache_ok = false;
    rest = rest.substr(0, flag);
  }
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto peer = rest.substr(0, comma);
    if (peer.empty() || peer.find_first_of(" \n") != std::string_view::npos) return bad();
    view.reachable.emplace_back(peer);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    if (rest.empty()) return bad();
  }
  return view;
}

Status WriteQuorumView(const std::filesystem::path& dir, const QuorumView& view) {
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir, 0700, keys::Sync::kNone));
  return keys::WriteFileAtomic(dir / view.id, QuorumViewToText(view), 0600, keys::Sync::kNone);
}

Result<std::vector<QuorumView>> ReadQuorumViews(const std::filesystem::path& dir,
                                                const std::vector<std::string>& ids) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error::Unavailable("cannot read quorum views in " + dir.string() +
                              (ec ? ": " + ec.message() : ""));
  }
  std::vector<QuorumView> views;
  for (const auto& id : ids) {
    auto text = keys::ReadFile(dir / id);
    if (!text.ok()) continue;
    auto view = QuorumViewFromText(id, *text);
    if (view.ok()) views.push_back(std::move(*view));
  }
  return views;
}

namespace {

class FileQuorumViews final : public QuorumViewStore {
 public:
  explicit FileQuorumViews(std::filesystem::path dir) : dir_(std::move(dir)) {}
  Status Write(const QuorumView& view) override { return WriteQuorumView(dir_, view); }
  Result<std::vector<QuorumView>> Read(const std::vector<std::string>& ids) override {
    return ReadQuorumViews(dir_, ids);
  }

 private:
  const std::filesystem::path dir_;
};

class EtcdQuorumViews final : public QuorumViewStore {
 public:
  EtcdQuorumViews(std::unique_ptr<EtcdClient> client, std::string prefix)
      : client_(std::move(client)), prefix_(std::move(prefix)) {}
  Status Write(const QuorumView& view) override {
    return client_->Put(prefix_ + view.id, QuorumViewToText(view), 0);
  }
  Result<std::vector<QuorumView>> Read(const std::vector<std::string>& ids) override {
    HALITE_ASSIGN_OR_RETURN(auto kvs, client_->RangePrefix(prefix_));
    std::vector<QuorumView> views;
    for (const auto& kv : kvs) {
      const std::string id = kv.key.substr(prefix_.size());
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
      auto view = QuorumViewFromText(id, kv.value);
      if (view.ok()) views.push_back(std::move(*view));
    }
    return views;
  }

 private:
  const std::unique_ptr<EtcdClient> client_;
  const std::string prefix_;
};

}  // namespace

std::unique_ptr<QuorumViewStore> MakeFileQuorumViews(std::filesystem::path dir) {
  return std::make_unique<FileQuorumViews>(std::move(dir));
}

std::unique_ptr<QuorumViewStore> MakeEtcdQuorumViews(std::unique_ptr<EtcdClient> client,
                                                     std::string prefix) {
  return std::make_unique<EtcdQuorumViews>(std::move(client), std::move(prefix));
}

QuorumDecision DecideQuorum(std::string_view self_id,
                            const std::vector<std::string>& self_reachable,
                            const std::vector<QuorumView>& alive_views, bool self_job_cache_ok) {
  // The alive masters: self, the views given, and whatever self's links reach.
  std::set<std::string> alive{std::string(self_id)};
  for (const auto& v : alive_views) alive.insert(v.id);
  for (const auto& p : self_reachable) alive.insert(p);
  const std::vector<std::string> ids(alive.begin(), alive.end());
  std::vector<std::size_t> parent(ids.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto index = [&](const std::string& id) -> std::optional<std::size_t> {
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) return std::nullopt;
    return static_cast<std::size_t>(it - ids.begin());
  };
  auto join = [&](const std::string& a, const std::string& b) {
    auto ia = index(a), ib = index(b);
    if (ia && ib) parent[find(*ia)] = find(*ib);
  };
  for (const auto& p : self_reachable) join(std::string(self_id), p);
  for (const auto& v : alive_views) {
    if (v.id == self_id) continue;  // this master's links are known first hand
    for (const auto& p : v.reachable) join(v.id, p);
  }
  std::map<std::size_t, std::vector<std::string>> sides;
  for (std::size_t i = 0; i < ids.size(); ++i) sides[find(i)].push_back(ids[i]);  // sorted
  const std::vector<std::string>* winner = nullptr;
  for (const auto& [root, members] : sides) {
    if (!winner || members.size() > winner->size() ||
        (members.size() == winner->size() && members.front() < winner->front())) {
      winner = &members;
    }
  }
  QuorumDecision d;
  d.side = sides[find(*index(std::string(self_id)))];
  d.winner = *winner;
  d.alive = ids;
  d.serving = d.side == d.winner;
  std::set<std::string> down;
  if (!self_job_cache_ok) down.insert(std::string(self_id));
  for (const auto& v : alive_views) {
    if (v.id != self_id && !v.job_cache_ok) down.insert(v.id);
  }
  d.job_cache_down.assign(down.begin(), down.end());
  return d;
}

QuorumTracker::QuorumTracker(std::string self_id, Options options)
    : self_(std::move(self_id)), options_(options) {}

QuorumDecision QuorumTracker::Observe(const std::vector<QuorumView>& views,
                                      const std::vector<std::string>& self_reachable,
                                      std::chrono::steady_clock::time_point now,
                                      bool self_job_cache_ok) {
  std::vector<QuorumView> alive;
  for (const auto& v : views) {
    if (v.id == self_) continue;
    auto [it, fresh] = seen_.try_emplace(v.id, Seen{v.seq, now});
    if (!fresh && it->second.seq != v.seq) it->second = Seen{v.seq, now};
    if (now - it->second.moved <= options_.stale) alive.push_back(v);
  }
  QuorumDecision d = DecideQuorum(self_, self_reachable, alive, self_job_cache_ok);
  if (d.serving) {
    out_ = false;
    return d;
  }
  if (!out_) {
    out_ = true;
    out_since_ = now;
  }
  if (now - out_since_ < options_.grace) d.serving = true;  // not yet: it may be a blip
  return d;
}

std::string QuorumProblem(const QuorumDecision& d) {
  auto list = [](const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
    return out;
  };
  return "partitioned: this master's side (" + list(d.side) + ") is cut off from (" +
         list(d.winner) + "), which serves; minions should move there";
}

}  // namespace halite::cluster
