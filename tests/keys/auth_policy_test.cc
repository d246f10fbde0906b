#include "halite/keys/auth_policy.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/wire/rsa.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;

// What a stock minion sends as `pub`: CleanKey of its SPKI PEM.
std::string MinionPub(const char* key_file) {
  const fs::path path = fs::path(HALITE_TEST_DATA_DIR) / "vectors" / key_file;
  auto pem = ReadFile(path);
  EXPECT_TRUE(pem.ok()) << path;
  auto key = wire::RsaPrivateKey::FromPem(pem.value());
  EXPECT_TRUE(key.ok());
  return wire::CleanKey(key->PublicKey().ToPem());
}

class AuthPolicyTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-auth-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    root_ = dir_ / "pki";
    auto store = FsKeyStore::Open(root_);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(store).value();
    pub_ = MinionPub("key_minion.pem");
    other_pub_ = MinionPub("key_peer2.pem");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  AuthDecision Decide(std::string_view id, std::string_view pub) {
    auto decision = DecideAuth(*store_, options_, id, pub);
    EXPECT_TRUE(decision.ok()) << decision.error().ToString();
    return decision.ok() ? decision.value() : AuthDecision{};
  }

  // The file under the pki root, or "<missing>".
  std::string File(std::string_view sub, std::string_view id) const {
    auto content = ReadFile(root_ / sub / id);
    return content.ok() ? content.value() : "<missing>";
  }

  void PutKey(std::string_view sub, std::string_view id, std::string_view text) {
    ASSERT_TRUE(WriteFileAtomic(root_ / sub / id, text, 0644).ok());
  }

  // Every file anywhere under the root (directories excluded), relative to it.
  std::vector<std::string> AllFiles() const {
    std::vector<std::string> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root_).string());
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  fs::path dir_;
  fs::path root_;
  std::unique_ptr<FsKeyStore> store_;
  AuthPolicyOptions options_;
  std::string pub_;
  std::string other_pub_;
};

void ExpectDecision(const AuthDecision& d, AuthVerdict verdict, bool result, std::string_view act) {
  EXPECT_EQ(d.verdict, verdict) << d.reason;
  EXPECT_EQ(d.result, result) << d.reason;
  EXPECT_EQ(d.act, act) << d.reason;
  EXPECT_FALSE(d.reason.empty());
}

TEST_F(AuthPolicyTest, NewKeyIsPlacedInPending) {
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  EXPECT_EQ(File("minions_pre", "web1"), pub_);
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions_pre/web1"});
}

TEST_F(AuthPolicyTest, AutoAcceptAcceptsNewKey) {
  options_.auto_accept = true;
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(File("minions", "web1"), pub_);
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions/web1"});
}

TEST_F(AuthPolicyTest, AutosignGlobAcceptsNewKey) {
  options_.autosign_patterns = {"db*", "web*"};
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(File("minions", "web1"), pub_);
}

TEST_F(AuthPolicyTest, AutosignRegexAcceptsNewKey) {
  options_.autosign_patterns = {"web[0-9]+\\.example\\.com"};
  ExpectDecision(Decide("web12.example.com", pub_), AuthVerdict::kAccepted, true, "accept");
  ExpectDecision(Decide("web12.example.org", pub_), AuthVerdict::kPending, true, "pend");
}

TEST_F(AuthPolicyTest, AutorejectRejectsNewKey) {
  options_.autoreject_patterns = {"bad*"};
  ExpectDecision(Decide("bad1", pub_), AuthVerdict::kRejected, false, "reject");
  EXPECT_EQ(File("minions_rejected", "bad1"), pub_);
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions_rejected/bad1"});
}

TEST_F(AuthPolicyTest, AutorejectWinsOverAutosign) {
  options_.auto_accept = true;
  options_.autoreject_patterns = {"web1"};
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kRejected, false, "reject");
  EXPECT_EQ(File("minions", "web1"), "<missing>");
}

TEST_F(AuthPolicyTest, AutorejectMovesPendingKeyToRejected) {
  PutKey("minions_pre", "web1", pub_);
  options_.autoreject_patterns = {"web1"};
  // Salt moves the pending file as it is, even when the request carries another key.
  ExpectDecision(Decide("web1", other_pub_), AuthVerdict::kRejected, false, "reject");
  EXPECT_EQ(File("minions_rejected", "web1"), pub_);
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions_rejected/web1"});
}

TEST_F(AuthPolicyTest, AutosignStubIsConsumedAndAccepts) {
  PutKey("minions_autosign", "web1", "");
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions/web1"});
}

TEST_F(AuthPolicyTest, ExpiredAutosignStubIsRemovedAndKeyPends) {
  PutKey("minions_autosign", "web1", "");
  std::error_code ec;
  fs::last_write_time(root_ / "minions_autosign" / "web1",
                      fs::file_time_type::clock::now() - minutes(121), ec);
  ASSERT_FALSE(ec);
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions_pre/web1"});
}

TEST_F(AuthPolicyTest, AutoAcceptLeavesTheStubAlone) {
  // Salt checks auto_accept first and only then the stub.
  options_.auto_accept = true;
  PutKey("minions_autosign", "web1", "");
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(File("minions_autosign", "web1"), "");
}

TEST_F(AuthPolicyTest, PendingSameKeyStaysPending) {
  PutKey("minions_pre", "web1", pub_);
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions_pre/web1"});
}

TEST_F(AuthPolicyTest, StoredKeyWithTrailingNewlineAndCrlfStillMatches) {
  std::string crlf;
  for (char c : pub_) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  PutKey("minions_pre", "web1", crlf + "\r\n");
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  PutKey("minions", "web2", pub_ + "\n");
  ExpectDecision(Decide("web2", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(File("minions", "web2"), pub_ + "\n");  // left as it was
}

TEST_F(AuthPolicyTest, PendingDifferentKeyIsDenied) {
  PutKey("minions_pre", "web1", pub_);
  ExpectDecision(Decide("web1", other_pub_), AuthVerdict::kDenied, false, "denied");
  EXPECT_EQ(File("minions_denied", "web1"), other_pub_);
  EXPECT_EQ(File("minions_pre", "web1"), pub_);
}

TEST_F(AuthPolicyTest, PendingDifferentKeyWithAutosignIsDeniedWithoutAct) {
  PutKey("minions_pre", "web1", pub_);
  options_.auto_accept = true;
  ExpectDecision(Decide("web1", other_pub_), AuthVerdict::kDenied, false, "");
  EXPECT_EQ(File("minions_denied", "web1"), other_pub_);
  EXPECT_EQ(File("minions_pre", "web1"), pub_);
  EXPECT_EQ(File("minions", "web1"), "<missing>");
}

TEST_F(AuthPolicyTest, PendingSameKeyWithAutosignIsAccepted) {
  PutKey("minions_pre", "web1", pub_);
  options_.autosign_patterns = {"web*"};
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions/web1"});
  EXPECT_EQ(File("minions", "web1"), pub_);
}

TEST_F(AuthPolicyTest, AcceptedSameKeyIsAccepted) {
  PutKey("minions", "web1", pub_);
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions/web1"});
}

TEST_F(AuthPolicyTest, AcceptedChangedKeyIsDenied) {
  PutKey("minions", "web1", pub_);
  ExpectDecision(Decide("web1", other_pub_), AuthVerdict::kDenied, false, "denied");
  EXPECT_EQ(File("minions", "web1"), pub_);
  EXPECT_EQ(File("minions_denied", "web1"), other_pub_);
}

TEST_F(AuthPolicyTest, RejectedKeyIsRejected) {
  PutKey("minions_rejected", "web1", pub_);
  PutKey("minions", "web1", pub_);  // rejected is checked first
  options_.auto_accept = true;
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kRejected, false, "");
  EXPECT_EQ(AllFiles(), (std::vector<std::string>{"minions/web1", "minions_rejected/web1"}));
}

TEST_F(AuthPolicyTest, OpenModeOverwritesChangedKey) {
  options_.open_mode = true;
  PutKey("minions", "web1", pub_);
  PutKey("minions_rejected", "web1", pub_);  // open mode skips the state machine
  ExpectDecision(Decide("web1", other_pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(File("minions", "web1"), other_pub_);
  EXPECT_EQ(File("minions_denied", "web1"), "<missing>");
}

TEST_F(AuthPolicyTest, OpenModeAcceptsNewKey) {
  options_.open_mode = true;
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  EXPECT_EQ(AllFiles(), std::vector<std::string>{"minions/web1"});
}

TEST_F(AuthPolicyTest, OpenModeRefusesEmptyKey) {
  options_.open_mode = true;
  PutKey("minions", "web1", pub_);
  ExpectDecision(Decide("web1", ""), AuthVerdict::kRejected, false, "");
  EXPECT_EQ(File("minions", "web1"), pub_);
}

TEST_F(AuthPolicyTest, InvalidIdsAreRejectedAndNothingIsWritten) {
  options_.auto_accept = true;
  for (std::string_view id : {std::string_view("../x"), std::string_view("a/b"),
                              std::string_view(""), std::string_view(".."), std::string_view("."),
                              std::string_view("a\\b"), std::string_view("a\0b", 3)}) {
    ExpectDecision(Decide(id, pub_), AuthVerdict::kRejected, false, "");
  }
  EXPECT_TRUE(AllFiles().empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AuthPolicyTest, PendingPathThatIsADirectoryIsRejected) {
  ASSERT_TRUE(EnsureDir(root_ / "minions_pre" / "web1", 0700).ok());
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kRejected, false, "");
  EXPECT_TRUE(AllFiles().empty());
}

TEST_F(AuthPolicyTest, CorruptKeyIsRefusedBeforeItIsWritten) {
  // Salt writes it before loading it; halite parses it first (issue 12: no squatting).
  options_.auto_accept = true;
  ExpectDecision(Decide("web1", "not a key"), AuthVerdict::kRejected, false, "");
  options_.auto_accept = false;
  ExpectDecision(Decide("web2", "not a key"), AuthVerdict::kRejected, false, "");
  for (const char* dir : {"minions", "minions_pre", "minions_denied", "minions_rejected"}) {
    EXPECT_FALSE(fs::exists(root_ / dir / "web1")) << dir;
    EXPECT_FALSE(fs::exists(root_ / dir / "web2")) << dir;
  }
  ExpectDecision(Decide("web3", std::string(kMaxPublicKeyBytes + 1, 'A')), AuthVerdict::kRejected,
                 false, "");
  EXPECT_FALSE(fs::exists(root_ / "minions_pre" / "web3"));
}

TEST_F(AuthPolicyTest, AKeyThatDiffersFromTheAcceptedOneMustParseToBeRecordedAsDenied) {
  options_.auto_accept = true;
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
  ExpectDecision(Decide("web1", "junk"), AuthVerdict::kRejected, false, "");
  EXPECT_FALSE(fs::exists(root_ / "minions_denied" / "web1"));
}

TEST_F(AuthPolicyTest, PendingThenOperatorAcceptFlow) {
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kPending, true, "pend");
  std::error_code ec;
  fs::rename(root_ / "minions_pre" / "web1", root_ / "minions" / "web1", ec);
  ASSERT_FALSE(ec);
  ExpectDecision(Decide("web1", pub_), AuthVerdict::kAccepted, true, "accept");
}

TEST(MatchesPatternTest, GlobAndFullRegex) {
  EXPECT_TRUE(MatchesPattern("web1", {"web*"}));
  EXPECT_TRUE(MatchesPattern("web1", {"w?b[0-9]"}));
  EXPECT_TRUE(MatchesPattern("web1", {"web1"}));
  EXPECT_TRUE(MatchesPattern("web1", {"db", "web\\d"}));
  EXPECT_TRUE(MatchesPattern("web1", {"[!x]eb1"}));
  EXPECT_TRUE(MatchesPattern(".hidden", {"*"}));
  EXPECT_FALSE(MatchesPattern("web1", {"web"}));   // regex must match the whole id
  EXPECT_FALSE(MatchesPattern("web1", {"eb1"}));   // not a search
  EXPECT_FALSE(MatchesPattern("web1", {"WEB*"}));  // case-sensitive
  EXPECT_FALSE(MatchesPattern("web1", {}));
}

TEST(MatchesPatternTest, InvalidRegexIsOnlyAGlob) {
  EXPECT_FALSE(MatchesPattern("web1", {"web(", "[", "*+", "a{2,1}"}));
  EXPECT_TRUE(MatchesPattern("web(", {"web("}));  // still matches as a glob
}

// An autosign/autoreject line that backtracks without bound hung the auth worker under
// std::regex (on the old code this test runs into ctest's timeout); now the match stops at
// PCRE2's limit and the pattern simply does not match.
TEST(MatchesPatternTest, BacktrackingRegexDoesNotHangAndDoesNotMatch) {
  const std::string id = std::string(40, 'a') + "-c";
  EXPECT_FALSE(MatchesPattern(id, {"(a|aa)*c"}));
  EXPECT_TRUE(MatchesPattern(id, {"(a|aa)*c", "a+-c"}));
}

// Python's fnmatch, not glibc's: "[!" is literal text and '\' is no escape. Checked with
//   python3 -c 'import fnmatch; print(fnmatch.fnmatch("web[!", "web[!"))'  # True
TEST(MatchesPatternTest, GlobFollowsPythonFnmatch) {
  EXPECT_TRUE(MatchesPattern("web[!", {"web[!"}));
  EXPECT_TRUE(MatchesPattern("web1", {"[!]]eb1"}));
}

class LoadPatternFileTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-pattern-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(LoadPatternFileTest, SkipsCommentsAndBlankLines) {
  const fs::path path = dir_ / "autosign.conf";
  ASSERT_TRUE(
      WriteFileAtomic(path, "# comment\n  web*  \n\n   # indented comment\r\ndb[0-9]\r\nlast", 0644)
          .ok());
  EXPECT_EQ(LoadPatternFile(path).value(), (std::vector<std::string>{"web*", "db[0-9]", "last"}));
}

TEST_F(LoadPatternFileTest, MissingFileIsEmpty) {
  auto patterns = LoadPatternFile(dir_ / "nope");
  ASSERT_TRUE(patterns.ok());
  EXPECT_TRUE(patterns->empty());
}

TEST_F(LoadPatternFileTest, WorldWritableFileIsRefused) {
  const fs::path path = dir_ / "autosign.conf";
  ASSERT_TRUE(WriteFileAtomic(path, "*\n", 0666).ok());
  auto patterns = LoadPatternFile(path, /*permissive_pki_access=*/true);
  ASSERT_FALSE(patterns.ok());
  EXPECT_EQ(patterns.error().code, ErrorCode::kPermissionDenied);
}

TEST_F(LoadPatternFileTest, GroupWritableNeedsPermissivePkiAccess) {
  const fs::path path = dir_ / "autosign.conf";
  ASSERT_TRUE(WriteFileAtomic(path, "*\n", 0664).ok());
  auto strict = LoadPatternFile(path);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(LoadPatternFile(path, /*permissive_pki_access=*/true).value(),
            std::vector<std::string>{"*"});
}

// The master passes its parsed-key cache as the parser: every parse goes through it, with
// only the texts the decision is about, and the decisions are those of the default parser.
TEST_F(AuthPolicyTest, EveryParseGoesThroughTheGivenParser) {
  options_.auto_accept = true;
  std::vector<std::string> parsed;
  const PublicKeyParser parse = [&](std::string_view pem) {
    parsed.emplace_back(pem);
    return wire::RsaPublicKey::FromPem(pem);
  };
  auto first = DecideAuth(*store_, options_, "web1", pub_, parse);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->verdict, AuthVerdict::kAccepted);
  EXPECT_EQ(parsed, (std::vector<std::string>{pub_, pub_}));  // before writing it, and after
  parsed.clear();
  auto again = DecideAuth(*store_, options_, "web1", pub_, parse);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->verdict, AuthVerdict::kAccepted);
  EXPECT_EQ(parsed, (std::vector<std::string>{pub_}));  // the stored key only
  parsed.clear();
  auto other = DecideAuth(*store_, options_, "web1", other_pub_, parse);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->verdict, AuthVerdict::kDenied);
  EXPECT_EQ(parsed, (std::vector<std::string>{other_pub_}));  // checked before minions_denied
  // A parser that refuses makes the decision refuse, as an unparsable key does.
  const PublicKeyParser refuse = [](std::string_view) -> Result<wire::RsaPublicKey> {
    return Error::InvalidArgument("refused by the test");
  };
  auto refused = DecideAuth(*store_, options_, "db1", pub_, refuse);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->verdict, AuthVerdict::kRejected);
  EXPECT_EQ(File("minions", "db1"), "<missing>");
}

// max_pending_keys: strangers can send new ids without end, and each was a new file.
TEST_F(AuthPolicyTest, NewIdsPastMaxPendingKeysAreAnsweredFullAndNotRecorded) {
  options_.max_pending_keys = 2;
  KeyCounts limit(std::chrono::hours(1));  // listed once: later keys are counted up
  auto decide = [&](std::string_view id, std::string_view pub) {
    auto d = DecideAuth(*store_, options_, id, pub, {}, &limit);
    EXPECT_TRUE(d.ok()) << d.error().ToString();
    return d.ok() ? *d : AuthDecision{};
  };
  PutKey("minions_pre", "old1", pub_);  // one there already, from before the start
  EXPECT_EQ(decide("new1", pub_).verdict, AuthVerdict::kPending);
  EXPECT_FALSE(decide("new1", pub_).full);  // an id already pending is not a new file
  const AuthDecision third = decide("new2", pub_);
  EXPECT_TRUE(third.full);
  EXPECT_FALSE(third.result);
  EXPECT_EQ(File("minions_pre", "new2"), "<missing>");
  EXPECT_EQ(AllFiles(), (std::vector<std::string>{"minions_pre/new1", "minions_pre/old1"}));
  // Accepted and auto-signed ids are not pending keys.
  options_.autosign_patterns = {"auto*"};
  EXPECT_EQ(decide("auto1", pub_).verdict, AuthVerdict::kAccepted);
  // autoreject_file writes minions_rejected: bounded the same way, counted on its own.
  options_.autoreject_patterns = {"bad*"};
  EXPECT_EQ(decide("bad1", pub_).verdict, AuthVerdict::kRejected);
  EXPECT_EQ(decide("bad2", pub_).verdict, AuthVerdict::kRejected);
  EXPECT_TRUE(decide("bad3", pub_).full);
  EXPECT_EQ(File("minions_rejected", "bad3"), "<missing>");
  // Room again once the operator clears minions_pre (seen at the next listing).
  KeyCounts relisting(std::chrono::seconds(0));
  ASSERT_TRUE(store_->Remove(KeyState::kPending, "old1").ok());
  auto again = DecideAuth(*store_, options_, "new2", pub_, {}, &relisting);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->full);
  EXPECT_EQ(File("minions_pre", "new2"), pub_);
  // 0: no limit.
  options_.max_pending_keys = 0;
  EXPECT_FALSE(decide("new3", pub_).full);
}

// A store whose List can be held, to see what other callers do while one lists.
class HeldListStore final : public KeyStore {
 public:
  explicit HeldListStore(KeyStore& inner) : inner_(inner) {}
  Result<std::string> Read(KeyState s, std::string_view id) override { return inner_.Read(s, id); }
  Status Write(KeyState s, std::string_view id, std::string_view pem) override {
    return inner_.Write(s, id, pem);
  }
  void AfterDurable(std::function<void(Status)> done) override { inner_.AfterDurable(done); }
  Status Remove(KeyState s, std::string_view id) override { return inner_.Remove(s, id); }
  Result<std::vector<std::string>> List(KeyState s) override {
    listings++;
    std::unique_lock lock(mu_);
    listing_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
    listing_ = false;
    return inner_.List(s);
  }
  Result<bool> ConsumeAutosignStub(std::string_view id, std::chrono::minutes t) override {
    return inner_.ConsumeAutosignStub(id, t);
  }
  Result<bool> IsDirectory(KeyState s, std::string_view id) override {
    return inner_.IsDirectory(s, id);
  }
  Result<FileStamp> Stamp(KeyState s, std::string_view id) override { return inner_.Stamp(s, id); }
  Status Available() override { return inner_.Available(); }
  const std::filesystem::path& root() const override { return inner_.root(); }

  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void WaitListing() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return listing_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  std::atomic<int> listings{0};

 private:
  KeyStore& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool listing_ = false;
};

// max_minions counted the accepted keys by listing minions/ for every sign-in of an id that
// is not accepted: with 100,000 keys a stranger's sign-in held a worker for about a second.
// The count is listed once per refresh, by one caller while the others use the last count.
TEST_F(AuthPolicyTest, KeyCountsListADirectoryOncePerRefreshAndNeverMakeOthersWait) {
  HeldListStore store(*store_);
  PutKey("minions", "web1", pub_);
  KeyCounts cached(std::chrono::hours(1));
  ASSERT_EQ(cached.Count(store, KeyState::kAccepted).value(), 1u);
  PutKey("minions", "web2", pub_);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(cached.Count(store, KeyState::kAccepted).value(), 1u);
  EXPECT_EQ(store.listings.load(), 1);
  // Due again (refresh 0): one caller lists; one that comes meanwhile gets the last count.
  KeyCounts due(std::chrono::seconds(0));
  const auto before = std::chrono::steady_clock::now();
  ASSERT_EQ(due.Count(store, KeyState::kAccepted).value(), 2u);
  const auto after = std::chrono::steady_clock::now();
  PutKey("minions", "web3", pub_);
  // Due again at the latest ten times that listing's length after it ended.
  std::this_thread::sleep_until(after + 10 * (after - before) + std::chrono::milliseconds(1));
  store.Hold();
  std::thread lister([&] { EXPECT_EQ(due.Count(store, KeyState::kAccepted).value(), 3u); });
  store.WaitListing();
  EXPECT_EQ(due.Count(store, KeyState::kAccepted).value(), 2u);
  EXPECT_EQ(store.listings.load(), 3);
  store.Release();
  lister.join();
  // Each state has its own count.
  EXPECT_EQ(due.Count(store, KeyState::kPending).value(), 0u);
  // max_minions takes a place before a sign-in's decision, and gives it back unless the key
  // was accepted: sign-ins at once cannot pass the limit together.
  KeyCounts places(std::chrono::hours(1));
  EXPECT_TRUE(places.TryAdd(store, KeyState::kAccepted, 4).value());  // 3 listed, 4th taken
  EXPECT_FALSE(places.TryAdd(store, KeyState::kAccepted, 4).value());
  places.GiveBack(KeyState::kAccepted);
  EXPECT_TRUE(places.TryAdd(store, KeyState::kAccepted, 4).value());
  EXPECT_EQ(places.Count(store, KeyState::kAccepted).value(), 4u);
}

}  // namespace
}  // namespace halite::keys
