#pragma once
// Test helpers for src/render and src/pillar: a pillar tree in a temp dir, and where the
// halite-render of this build is.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace halite::testing_support {

inline std::string RendererProgram() {
  return std::string(HALITE_BINARY_DIR) + "/src/apps/halite-render";
}

// <tmp>/tree-XXXXXX/roots/base is root(); files may be written beside it ("../x") so that
// escapes have something to find.
class Tree {
 public:
  Tree() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "halite-tree-XXXXXX").string();
    base_ = ::mkdtemp(tmpl.data());
    std::filesystem::create_directories(Root("base"));
  }
  ~Tree() {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;

  std::string root() const { return Root("base"); }
  std::string Root(const std::string& env) const { return (base_ / "roots" / env).string(); }

  void Write(const std::string& rel, const std::string& text) const { WriteIn("base", rel, text); }
  void WriteIn(const std::string& env, const std::string& rel, const std::string& text) const {
    auto p = std::filesystem::path(Root(env)) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  void Symlink(const std::string& target, const std::string& rel) const {
    std::filesystem::create_symlink(target, std::filesystem::path(root()) / rel);
  }

 private:
  std::filesystem::path base_;
};

}  // namespace halite::testing_support
