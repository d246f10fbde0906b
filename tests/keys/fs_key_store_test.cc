#include "halite/keys/fs_key_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "halite/keys/fs.h"
#include "halite/keys/master_keys.h"

// What every KeyStore must do (missing keys, stamps, autosign stubs, two stores on one set of
// keys) is in tests/integration/key_store_contract_test.cc, run on these files and on etcd;
// here is what only the files do: Salt's layout, modes, temp files and directories.
namespace halite::keys {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;

constexpr std::string_view kPem = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----";

class FsKeyStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-store-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    root_ = dir_ / "pki";
    auto store = FsKeyStore::Open(root_);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static mode_t ModeOf(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  fs::path dir_;
  fs::path root_;
  std::unique_ptr<FsKeyStore> store_;
};

TEST_F(FsKeyStoreTest, OpenCreatesSaltLayout) {
  EXPECT_EQ(store_->root(), root_);
  for (const char* sub :
       {"minions", "minions_pre", "minions_rejected", "minions_denied", "minions_autosign"}) {
    EXPECT_TRUE(fs::is_directory(root_ / sub)) << sub;
    EXPECT_EQ(ModeOf(root_ / sub), 0700u) << sub;
  }
  EXPECT_TRUE(FsKeyStore::Open(root_).ok());  // reopening an existing layout is fine
}

TEST_F(FsKeyStoreTest, OpenOverAFileFails) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "file", "x", 0644).ok());
  EXPECT_FALSE(FsKeyStore::Open(dir_ / "file").ok());
}

TEST_F(FsKeyStoreTest, WriteStoresTextVerbatimWithMode0600) {
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kPem).ok());
  const fs::path path = root_ / "minions_pre" / "web1";
  EXPECT_EQ(ReadFile(path).value(), kPem);  // no newline added
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(store_->Read(KeyState::kPending, "web1").value(), kPem);
}

TEST_F(FsKeyStoreTest, EverythingIsPrivateWhateverTheUmask) {
  const mode_t saved = ::umask(0);
  const fs::path root = dir_ / "umask0";
  auto store = FsKeyStore::Open(root);
  Status written = store.ok() ? OkStatus() : Status(store.error());
  for (KeyState state :
       {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied}) {
    if (written.ok()) written = (*store)->Write(state, "web1", kPem);
  }
  auto pair = LoadOrCreateKeyPair(root, "master", 2048);
  ::umask(saved);
  ASSERT_TRUE(written.ok()) << written.error().ToString();
  ASSERT_TRUE(pair.ok()) << pair.error().ToString();
  std::vector<std::string> offenders;
  auto check = [&](const fs::path& path) {
    if (const mode_t mode = ModeOf(path); (mode & 077) != 0) {
      char octal[16];
      std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode & 07777));
      offenders.push_back(path.string() + " " + octal);
    }
  };
  check(root);
  for (const auto& entry : fs::recursive_directory_iterator(root)) check(entry.path());
  std::string listing;
  for (const std::string& offender : offenders) listing += "\n  " + offender;
  EXPECT_TRUE(offenders.empty()) << "group/other may read or enter:" << listing;
}

TEST_F(FsKeyStoreTest, RemoveDeletesTheKey) {
  ASSERT_TRUE(store_->Write(KeyState::kRejected, "web1", kPem).ok());
  ASSERT_TRUE(store_->Remove(KeyState::kRejected, "web1").ok());
  EXPECT_FALSE(fs::exists(root_ / "minions_rejected" / "web1"));
}

TEST_F(FsKeyStoreTest, ListIsSortedAndSkipsHiddenTempAndDirectories) {
  for (const char* id : {"zeta", "alpha", "mid"}) {
    ASSERT_TRUE(store_->Write(KeyState::kAccepted, id, kPem).ok());
  }
  const fs::path dir = root_ / "minions";
  ASSERT_TRUE(WriteFileAtomic(dir / ".hidden", "x", 0644).ok());
  ASSERT_TRUE(WriteFileAtomic(dir / ".alpha.tmp-0123456789abcdef", "x", 0644).ok());
  ASSERT_TRUE(EnsureDir(dir / "subdir", 0700).ok());
  EXPECT_EQ(store_->List(KeyState::kAccepted).value(),
            (std::vector<std::string>{"alpha", "mid", "zeta"}));
  EXPECT_TRUE(store_->List(KeyState::kDenied).value().empty());
}

TEST_F(FsKeyStoreTest, InvalidIdsAreRefusedEverywhere) {
  for (std::string_view id :
       {std::string_view(""), std::string_view("../x"), std::string_view("a/b"),
        std::string_view(".."), std::string_view(".")}) {
    EXPECT_EQ(store_->Read(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Write(KeyState::kAccepted, id, kPem).error().code,
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Remove(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->IsDirectory(KeyState::kAccepted, id).error().code,
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Stamp(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->ConsumeAutosignStub(id, minutes(120)).error().code,
              ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(fs::exists(root_ / "x"));
}

TEST_F(FsKeyStoreTest, IsDirectory) {
  EXPECT_FALSE(store_->IsDirectory(KeyState::kPending, "web1").value());
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kPem).ok());
  EXPECT_FALSE(store_->IsDirectory(KeyState::kPending, "web1").value());
  ASSERT_TRUE(EnsureDir(root_ / "minions_pre" / "web2", 0700).ok());
  EXPECT_TRUE(store_->IsDirectory(KeyState::kPending, "web2").value());
  // A directory is not a key.
  EXPECT_EQ(store_->Read(KeyState::kPending, "web2").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->Stamp(KeyState::kPending, "web2").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace halite::keys

namespace halite::keys {
namespace {

TEST(FsKeyStoreGroupSyncTest, WritesWaitForTheGroupFlushAndWithoutOneAreDurableAtOnce) {
  char name[] = "/tmp/halite-keys-store-sync-XXXXXX";
  ASSERT_NE(::mkdtemp(name), nullptr);
  const fs::path dir = name;
  std::vector<std::vector<fs::path>> flushed;
  {
    auto sync = GroupSync::Open({dir, "test-sync", [&](const std::vector<fs::path>& files) {
                                   flushed.push_back(files);
                                   return OkStatus();
                                 }});
    ASSERT_TRUE(sync.ok());
    auto store = FsKeyStore::Open(dir / "pki", sync->get());
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ASSERT_TRUE((*store)->Write(KeyState::kAccepted, "web1", kPem).ok());
    EXPECT_EQ((*store)->Read(KeyState::kAccepted, "web1").value(), kPem);
    std::promise<Status> durable;
    (*store)->AfterDurable([&](Status st) { durable.set_value(std::move(st)); });
    auto future = durable.get_future();
    ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_TRUE(future.get().ok());
    ASSERT_EQ(flushed.size(), 1u);
    EXPECT_EQ(flushed[0], std::vector<fs::path>{dir / "pki" / "minions" / "web1"});
  }
  // A store without a GroupSync syncs every Write, so AfterDurable answers at once.
  auto plain = FsKeyStore::Open(dir / "pki");
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->Write(KeyState::kPending, "web2", kPem).ok());
  bool answered = false;
  (*plain)->AfterDurable([&](Status st) { answered = st.ok(); });
  EXPECT_TRUE(answered);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace halite::keys
