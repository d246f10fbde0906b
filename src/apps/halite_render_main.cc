// halite-render: one template renderer of halite-master's pool. Not run by hand: it reads
// length-prefixed msgpack requests on stdin and answers on stdout (src/render/README.md).
#include "halite/render/host.h"

#if defined(__SANITIZE_ADDRESS__)
// CPython is not built for LeakSanitizer: what it keeps until exit is not our leak.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

int main(int argc, char** argv) { return halite::render::RunEmbeddedRenderer(argc, argv); }
