// gzip through zlib (include/halite/wire/gzip.h).
#include "halite/wire/gzip.h"

#include <zlib.h>

#include <climits>

namespace halite::wire {

namespace {

constexpr int kGzipWindowBits = 15 + 16;        // gzip header and trailer, not zlib's
constexpr int kGzipOrZlibWindowBits = 15 + 32;  // inflate: detect the header
constexpr std::size_t kStep = 64 * 1024;

}  // namespace

Result<std::string> GzipCompress(std::string_view data) {
  if (data.size() > UINT_MAX) return Error::ResourceExhausted("gzip: input over 4 GiB");
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Error::ResourceExhausted("gzip: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Error::ResourceExhausted("gzip: deflate did not finish");
  return out;
}

Result<std::string> GzipDecompress(std::string_view data, std::size_t max_bytes) {
  if (data.size() > UINT_MAX) return Error::ResourceExhausted("gzip: input over 4 GiB");
  std::string out;
  std::string_view rest = data;
  do {
    z_stream z{};
    if (inflateInit2(&z, kGzipOrZlibWindowBits) != Z_OK) {
      return Error::ResourceExhausted("gzip: inflateInit2 failed");
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
    z.avail_in = static_cast<uInt>(rest.size());
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      const std::size_t before = out.size();
      if (before >= max_bytes) {
        inflateEnd(&z);
        return Error::ResourceExhausted("gzip: more than " + std::to_string(max_bytes) +
                                        " bytes once inflated");
      }
      const std::size_t room = std::min(kStep, max_bytes - before);
      out.resize(before + room);
      z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
      z.avail_out = static_cast<uInt>(room);
      rc = inflate(&z, Z_NO_FLUSH);
      out.resize(before + room - z.avail_out);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        inflateEnd(&z);
        return Error::InvalidArgument(std::string("gzip: ") + (z.msg ? z.msg : "bad data"));
      }
      if (rc == Z_BUF_ERROR && z.avail_in == 0) {
        inflateEnd(&z);
        return Error::InvalidArgument("gzip: the stream ends before its end marker");
      }
    }
    const std::size_t used = rest.size() - z.avail_in;
    inflateEnd(&z);
    rest.remove_prefix(used);
  } while (!rest.empty());
  return out;
}

}  // namespace halite::wire
