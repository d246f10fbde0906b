#pragma once
// The renderer process's entry point (halite-render). Links libpython; nothing else may.

namespace halite::render {

// One Python module built into halite-render (src/render/python/<name>.py).
struct EmbeddedModule {
  const char* name;
  const char* source;
};

// Runs the embedded renderer on stdin/stdout until stdin closes. Returns the exit status.
int RunEmbeddedRenderer(int argc, char** argv);

}  // namespace halite::render
