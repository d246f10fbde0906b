// cp.recv_chunked: what salt-cp (halite-cp) pushes files with, as Salt's salt/modules/cp.py
// writes them: base64 chunks, each gzip-compressed unless told otherwise, the first one
// creating (or truncating) the file and setting its mode, the others appending; a nil chunk
// makes an empty directory. Runs on a job worker (it blocks on disk).
#include "cp_recv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "halite/wire/encoding.h"
#include "halite/wire/gzip.h"

namespace halite::minion::internal {

namespace {

using wire::Value;

// The positional argument `index`, else kwargs[name], else nullptr.
const Value* CallArg(const JobCall& call, std::size_t index, std::string_view name) {
  if (index < call.args.size()) return &call.args[index];
  return call.kwargs.Find(name);
}

// A chunk is salt_cp_chunk_size (96 KiB) before compression; this bounds a hostile one.
constexpr std::size_t kMaxChunkBytes = 64u << 20;

// Python's str(OSError): "[Errno 13] Permission denied: '/x'".
std::string OsError(int err, const std::string& path) {
  return "[Errno " + std::to_string(err) + "] " + std::strerror(err) + ": '" + path + "'";
}

FunctionResult Error1(std::string message) {
  return FunctionResult{JobResult{Value(std::move(message)), 1, false, ""}, {}};
}

FunctionResult True() { return FunctionResult{JobResult{Value(true), 0, true, ""}, {}}; }

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Error::Unavailable(OsError(ec.value(), path));
  return OkStatus();
}

}  // namespace

FunctionResult CpRecvChunked(const JobCall& call, const JobContext&) {
  const Value* dest_v = CallArg(call, 0, "dest");
  const Value* chunk_v = CallArg(call, 1, "chunk");
  const Value* append_v = CallArg(call, 2, "append");
  const Value* compressed_v = CallArg(call, 3, "compressed");
  const Value* mode_v = CallArg(call, 4, "mode");
  if (!dest_v || !dest_v->str() || dest_v->str()->empty()) {
    return Error1("cp.recv_chunked needs dest (a path)");
  }
  const std::string& dest = *dest_v->str();
  if (!chunk_v || chunk_v->is_nil()) {
    // An empty directory of the source.
    struct stat st {};
    if (::stat(dest.c_str(), &st) == 0) {
      // Salt's answer, with retcode 0.
      if (!S_ISDIR(st.st_mode)) {
        return FunctionResult{JobResult{Value("Path exists and is a file"), 0, true, ""}, {}};
      }
      return True();
    }
    if (auto made = MakeDirs(dest); !made.ok()) return Error1(made.error().message);
    return True();
  }
  if (!chunk_v->str()) return Error1("cp.recv_chunked: chunk is not base64 text");
  auto raw = wire::Base64Decode(*chunk_v->str());
  if (!raw.ok()) return Error1("cp.recv_chunked: chunk is not base64: " + raw.error().message);
  std::string data;
  if (!compressed_v || compressed_v->Truthy()) {
    auto inflated = wire::GzipDecompress(*raw, kMaxChunkBytes);
    if (!inflated.ok()) return Error1("cp.recv_chunked: " + inflated.error().message);
    data = std::move(*inflated);
  } else {
    data = std::move(*raw);
  }
  const bool append = append_v && append_v->Truthy();
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = ::open(dest.c_str(), flags, 0666);
  if (fd < 0 && errno == ENOENT) {
    const std::string parent = std::filesystem::path(dest).parent_path().string();
    if (auto made = MakeDirs(parent.empty() ? "." : parent); !made.ok()) {
      return Error1(made.error().message);
    }
    fd = ::open(dest.c_str(), flags, 0666);
  }
  if (fd < 0) return Error1(OsError(errno, dest));
  std::size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Error1(OsError(err, dest));
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return Error1(OsError(errno, dest));
  if (!append && mode_v && mode_v->int64()) {
    if (::chmod(dest.c_str(), static_cast<mode_t>(*mode_v->int64() & 07777)) != 0) {
      return Error1(OsError(errno, dest));
    }
  }
  return True();
}

}  // namespace halite::minion::internal
