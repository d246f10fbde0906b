// halite-render: one template renderer of halite-master's pool. Not run by hand: it reads
// length-prefixed msgpack requests on stdin and answers on stdout (src/render/README.md).
// --help and --version are for help2man; the pool starts it with no arguments.
#include <cstring>
#include <iostream>

#include "halite/render/host.h"
#include "halite/version.h"

#if defined(__SANITIZE_ADDRESS__)
// CPython is not built for LeakSanitizer: what it keeps until exit is not our leak.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-V") == 0)) {
    std::cout << "halite-render " << halite::kVersion << "\n";
    return 0;
  }
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::cout << "usage: halite-render\n"
                 "Renders pillar templates (Jinja2 in embedded CPython) for halite-master, which\n"
                 "starts a pool of these and talks to each over its stdin and stdout\n"
                 "(length-prefixed msgpack). Not run by hand. halite-master finds it next to\n"
                 "its own executable, else in the installed library directory; the master\n"
                 "config's render_program names another one.\n";
    return 0;
  }
  if (argc > 1) {
    std::cerr << "halite-render: takes no arguments (see --help)\n";
    return 64;
  }
  return halite::render::RunEmbeddedRenderer(argc, argv);
}
