#include "halite/client/command_line.h"

#include <gtest/gtest.h>

#include "salt_vectors.h"

namespace halite::client {
namespace {

// Whole command lines through Salt's SaltCMDOptionParser, compared with ours: the target,
// type, function(s), published arguments, and the options halite implements; or the exit
// code and message Salt stops with.
TEST(CommandLineTest, CommandLinesParseAsSaltParsesThem) {
  const nlohmann::json vectors = SaltCliVectors()["command_lines"];
  ASSERT_GT(vectors.size(), 25u);
  for (const auto& v : vectors) {
    const std::vector<std::string> argv = v["argv"];
    const nlohmann::json& want = v["parsed"];
    SCOPED_TRACE(v["argv"].dump());
    auto got = ParseSaltCommandLine(argv);
    if (want.contains("exit")) {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(CommandLineExitCode(got.error()), want["exit"].get<int>());
      const std::string stderr_line = v["stderr"][0];
      EXPECT_NE(stderr_line.find(got.error().message), std::string::npos)
          << got.error().message << " vs " << stderr_line;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    EXPECT_TRUE(SameValue(got->tgt, FromJson(want["tgt"]))) << got->tgt.ToJson();
    EXPECT_EQ(got->tgt_type, want["tgt_type"].get<std::string>());
    EXPECT_TRUE(SameValue(got->fun, FromJson(want["fun"]))) << got->fun.ToJson();
    EXPECT_TRUE(SameValue(wire::Value(got->arg), FromJson(want["arg"])))
        << wire::Value(got->arg).ToJson();
    EXPECT_EQ(got->multi_function, want["fun"].is_array());
    EXPECT_EQ(got->out, want["out"].is_null() ? "" : want["out"].get<std::string>());
    EXPECT_EQ(got->timeout.value_or(5), want["timeout"].get<int>());
    EXPECT_EQ(got->async, want["async"].get<bool>());
    EXPECT_EQ(got->verbose, want["verbose"].get<bool>());
    EXPECT_EQ(got->show_jid, want["show_jid"].get<bool>());
    EXPECT_EQ(got->delimiter, want["delimiter"].get<std::string>());
  }
}

TEST(CommandLineTest, SaltOptionsHaliteLacksAreRefusedByName) {
  for (const char* option : {"-b", "--batch=2", "-s", "--out-file=x", "--state-output=terse"}) {
    auto got = ParseSaltCommandLine({"*", "test.ping", option, "1"});
    ASSERT_FALSE(got.ok()) << option;
    EXPECT_EQ(CommandLineExitCode(got.error()), 64);
    EXPECT_NE(got.error().message.find("not supported by halite yet"), std::string::npos)
        << got.error().message;
  }
  auto range = ParseSaltCommandLine({"-R", "%x", "test.ping"});
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.error().message.find("--range"), std::string::npos);
}

TEST(CommandLineTest, HelpStopsParsingAndAmbiguousPrefixesAreErrors) {
  auto help = ParseSaltCommandLine({"--bogus-later-is-not-read", "-h"});
  EXPECT_FALSE(help.ok());  // optparse reads left to right: the unknown option comes first
  auto help2 = ParseSaltCommandLine({"-h", "--bogus"});
  ASSERT_TRUE(help2.ok());
  EXPECT_TRUE(help2->help);
  auto ambiguous = ParseSaltCommandLine({"*", "test.ping", "--out-f=x"});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.error().message.find("ambiguous option: --out-f"), std::string::npos)
      << ambiguous.error().message;
}

}  // namespace
}  // namespace halite::client
