// Keys and endpoints the integration tests share: a fresh minion key, a master's public key,
// a master's request endpoint. Failures are gtest failures in the calling test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "halite/keys/fs.h"
#include "halite/wire/rsa.h"
#include "harness.h"

namespace halite::testing {

inline wire::RsaPrivateKey NewKey() {
  auto key = wire::RsaPrivateKey::Generate(2048);
  EXPECT_TRUE(key.ok());
  return *key;
}

inline wire::RsaPublicKey MasterPub(const MasterUnderTest& m) {
  auto text = keys::ReadFile(m.dir() / "pki" / "master.pub");
  EXPECT_TRUE(text.ok());
  auto key = wire::RsaPublicKey::FromPem(*text);
  EXPECT_TRUE(key.ok());
  return *key;
}

inline std::string RetEndpoint(const MasterUnderTest& m) { return "tcp://" + m.ip() + ":4506"; }

}  // namespace halite::testing
