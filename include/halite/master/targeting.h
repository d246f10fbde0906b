// Resolves a target against the accepted keys and the cached grains (salt-wire 7.2):
// whom the master expects to answer. Blocks on disk: worker threads only.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "halite/common/result.h"
#include "halite/master/context.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// The last few jobs loaded from the job cache, so that checking a return against its job
// costs no read per return. Jobs do not change once saved (their expected minions only grow
// when another master saves the same jid, which ReturnBelongsToJob's re-match covers).
// Only what those checks read is kept: the jid, the expected minions, and of the load `tgt`,
// `tgt_type` and the peer publisher (kPeerRequesterKey). A load can be as large as a request
// (a minion's own job carries its arguments), and 64 whole ones held up to 6.4 GiB, which a
// minion could keep resident by cycling returns through them (finding 26).
// Thread-safe.
class RecentJobs {
 public:
  explicit RecentJobs(std::size_t capacity) : capacity_(capacity) {}
  // The job (slimmed as above), from memory or `cache`; the job cache's error (NotFound for
  // an unknown jid).
  Result<std::shared_ptr<const jobs::Job>> Load(jobs::JobCache& cache, std::string_view jid);
  // A job this master published or a peer forwarded: its returns are checked without a read
  // (which matters most while the job cache is unreachable).
  void Remember(jobs::Job job);

 private:
  const std::size_t capacity_;
  std::mutex mu_;
  std::list<std::shared_ptr<const jobs::Job>> lru_ HALITE_GUARDED_BY(mu_);  // newest first
};

struct Resolved {
  std::vector<std::string> minions;  // accepted and matching, sorted
  std::vector<std::string> missing;  // list targets naming ids that are not accepted
};

// The thread CPU one resolution may use: kResolveCpuBase plus kResolveCpuPerMinion for each
// accepted minion (a legitimate target costs microseconds per minion, its data loads
// included). A minion's `_mine_get` or a salt-api user's publish chooses the expression, and
// a compound of thousands of terms each just under its own limit would otherwise hold a
// worker for hours (docs/security.md, finding 8).
inline constexpr std::chrono::milliseconds kResolveCpuBase{1000};
inline constexpr std::chrono::microseconds kResolveCpuPerMinion{1000};

// `greedy`: a grain expression matches a minion whose grains are unknown (whom to wait for);
// false for mine_get, which must not hand out data on a guess. Errors: MatchTarget's, the
// key store's, and kResourceExhausted past the CPU allowance above.
Result<Resolved> ResolveTargets(MasterContext& ctx, const wire::Value& tgt,
                                const std::string& tgt_type, const std::string& delimiter,
                                bool greedy = true);

// Whether ResolveTargets(tgt, tgt_type, delimiter, greedy) would list `id`, by matching that
// one minion: false when `id` is not accepted. One match instead of one per accepted minion,
// for questions about a single minion (a mine entry's allow_tgt against its requester).
// Allowed kResolveCpuBase of CPU.
Result<bool> TargetIncludes(MasterContext& ctx, const wire::Value& tgt, const std::string& tgt_type,
                            const std::string& id, const std::string& delimiter = ":",
                            bool greedy = true);

// Whether a return from `id` belongs to `job` (docs/security.md, "Returns"): it was expected,
// or the job's target still matches it. Only a target decided by the id alone (glob, pcre,
// list) can refuse: a grain or compound target may match on grains the master has not seen.
bool ReturnBelongsToJob(const jobs::Job& job, const std::string& id);

}  // namespace halite::master
