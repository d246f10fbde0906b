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
  for (const char* option : {"--subset=1", "-d", "--return_kwargs=x"}) {
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

TEST(CommandLineTest, BatchSafeLimitAndPreviewTarget) {
  auto got = ParseSaltCommandLine(
      {"--batch-safe-limit", "3", "*", "test.ping", "--batch-safe-size=2", "--preview-target"});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->batch_safe_limit, 3);
  EXPECT_EQ(got->batch_safe_size, "2");
  EXPECT_TRUE(got->preview_target);
  EXPECT_TRUE(got->batch.empty());
  auto defaults = ParseSaltCommandLine({"*", "test.ping"});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->batch_safe_limit, 0);
  EXPECT_EQ(defaults->batch_safe_size, "8");  // Salt's default
  auto bad = ParseSaltCommandLine({"--batch-safe-limit", "many", "*", "test.ping"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(CommandLineExitCode(bad.error()), 64);
}

TEST(CommandLineTest, BatchAndOutputOptionsAreReadAsSaltReadsThem) {
  auto got = ParseSaltCommandLine({"-b",
                                   "50%",
                                   "*",
                                   "state.apply",
                                   "--batch-wait=1.5",
                                   "--failhard",
                                   "-s",
                                   "--out-file",
                                   "/tmp/x",
                                   "--out-file-append",
                                   "--state-output=terse",
                                   "--state_verbose",
                                   "false",
                                   "--out-indent",
                                   "-1",
                                   "--hide-timeout",
                                   "--summary",
                                   "-p",
                                   "--force-color",
                                   "--no-color",
                                   "--return",
                                   "syslog",
                                   "--return_config",
                                   "alt",
                                   "--metadata",
                                   "{a: 1}",
                                   "--output-diff"});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->batch, "50%");
  EXPECT_EQ(got->batch_wait, 1.5);
  EXPECT_TRUE(got->failhard && got->static_out && got->out_file_append && got->summary);
  EXPECT_TRUE(got->progress && got->force_color && got->no_color && got->output_diff);
  EXPECT_FALSE(got->show_timeout);
  EXPECT_EQ(got->out_file, "/tmp/x");
  EXPECT_EQ(got->state_output, "terse");
  EXPECT_EQ(got->state_verbose, false);
  EXPECT_EQ(got->out_indent, -1);
  EXPECT_EQ(got->ret, "syslog");
  EXPECT_EQ(got->ret_config, "alt");
  EXPECT_EQ(got->metadata, "{a: 1}");
  EXPECT_EQ(*got->fun.str(), "state.apply");
  // --state-verbose keeps any other text, which is truthy; a bad number is optparse's 64.
  EXPECT_EQ(ParseSaltCommandLine({"--state-verbose=yes", "*", "t.p"})->state_verbose, true);
  auto bad = ParseSaltCommandLine({"--out-indent=x", "*", "test.ping"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(CommandLineExitCode(bad.error()), 64);
  auto wait = ParseSaltCommandLine({"--batch-wait=soon", "*", "test.ping"});
  ASSERT_FALSE(wait.ok());
  EXPECT_EQ(CommandLineExitCode(wait.error()), 64);
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
