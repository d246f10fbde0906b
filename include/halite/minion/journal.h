// What minions report to a ledger (halite-swarm --ledger): each job a minion started, each
// return a master acknowledged, and each time its publish subscription came up (a completed
// ZMTP handshake with a master, through HAProxy or not) or went down.
// Called on the minion's loop thread, many minions per journal: implementations stamp the
// time, queue and return; they must not block or call back into the minion.
#pragma once

#include <string_view>

namespace halite::minion {

class JobJournal {
 public:
  virtual ~JobJournal() = default;
  // After the jid dedupe (minion_jid_queue_hwm): a job that runs; at most once per jid while
  // the jid is among the last 100 this minion saw.
  virtual void JobStarted(std::string_view minion, std::string_view jid, std::string_view fun) = 0;
  virtual void ReturnAcknowledged(std::string_view minion, std::string_view jid) = 0;
  virtual void PublisherConnection(std::string_view minion, bool up) = 0;
};

}  // namespace halite::minion
