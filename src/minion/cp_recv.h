// cp.recv_chunked (cp_recv.cc). Internal.
#pragma once

#include "halite/minion/functions.h"

namespace halite::minion::internal {

// salt-cp's chunks: cp.recv_chunked(dest, chunk, append=False, compressed=True, mode=None).
// Blocks on disk: RunOn::kWorker.
FunctionResult CpRecvChunked(const JobCall& call, const JobContext& ctx);

}  // namespace halite::minion::internal
