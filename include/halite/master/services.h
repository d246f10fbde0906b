// The small interfaces request handlers use to reach the rest of the master. Each says which
// threads may call it.
#pragma once

#include <functional>
#include <string>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// Fires events on the master's event bus (salt-wire 8): local subscribers (the CLI) and, in a
// cluster, every peer. Thread-safe and non-blocking. `_stamp` is added by the sink.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Fire(std::string tag, wire::Value data) = 0;
};

// Sends a pub load (salt-wire 7.3) to this master's minions (and, in a cluster, to every
// peer's). Thread-safe, non-blocking. An error means the job went nowhere: a peer's lossless
// publish queue is full (ResourceExhausted), so the caller must refuse the job.
class JobPublisher {
 public:
  virtual ~JobPublisher() = default;
  virtual Status Publish(wire::Value pub_load) = 0;
};

}  // namespace halite::master
