#pragma once
// gzip members (RFC 1952) as Python's gzip module reads and writes them: what salt-cp sends
// in cp.recv_chunked. zlib underneath. Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::wire {

// One complete gzip member holding `data` (level 9, as Salt's compress_file).
Result<std::string> GzipCompress(std::string_view data);
// Every member of `data` inflated; InvalidArgument for a bad or truncated stream,
// ResourceExhausted past `max_bytes` of output.
Result<std::string> GzipDecompress(std::string_view data, std::size_t max_bytes);

}  // namespace halite::wire
