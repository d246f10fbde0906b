// FsKeyStore: the KeyStore on a local or shared filesystem, in Salt's exact layout, so
// salt-key habits and scripts keep working. Holds no state besides the root path (and the
// optional GroupSync), so it is thread-safe and safe with other processes on the same
// directory; every call but AfterDurable blocks on disk.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "halite/common/result.h"
#include "halite/keys/group_sync.h"
#include "halite/keys/key_store.h"

namespace halite::keys {

class FsKeyStore final : public KeyStore {
 public:
  static constexpr mode_t kDirMode = 0700;
  static constexpr mode_t kKeyFileMode = 0600;  // readable by the master's user only

  // Creates `root` and minions, minions_pre, minions_rejected, minions_denied and
  // minions_autosign under it (mode 0700) where missing; existing directories keep their mode.
  static Result<std::unique_ptr<FsKeyStore>> Open(std::filesystem::path root);
  // As above, but Write leaves the fsyncs to `group_sync` (which must outlive the store and
  // cover `root`'s file system): a storm of new keys then costs a few flushes, not two fsyncs
  // per key. Remove still syncs at once.
  static Result<std::unique_ptr<FsKeyStore>> Open(std::filesystem::path root,
                                                  GroupSync* group_sync);

  // KeyStore:
  Result<std::string> Read(KeyState state, std::string_view id) override;
  Status Write(KeyState state, std::string_view id, std::string_view pem) override;
  void AfterDurable(std::function<void(Status)> done) override;
  Status Remove(KeyState state, std::string_view id) override;
  Result<std::vector<std::string>> List(KeyState state) override;
  Result<bool> ConsumeAutosignStub(std::string_view id, std::chrono::minutes timeout) override;
  Result<bool> IsDirectory(KeyState state, std::string_view id) override;
  Result<FileStamp> Stamp(KeyState state, std::string_view id) override;
  Status Available() override;  // Unavailable when the accepted keys' directory is gone
  const std::filesystem::path& root() const override { return root_; }

 private:
  FsKeyStore(std::filesystem::path root, GroupSync* group_sync)
      : root_(std::move(root)), group_sync_(group_sync) {}

  // root_/<dir of state>/<id>; InvalidArgument for an invalid id.
  Result<std::filesystem::path> KeyPath(KeyState state, std::string_view id) const;

  const std::filesystem::path root_;
  GroupSync* const group_sync_;  // null: every Write syncs
};

}  // namespace halite::keys
