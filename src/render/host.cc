// halite-render's body: CPython embedded in isolated mode (no PYTHONPATH, no user site, no
// environment variables read), the renderer's modules compiled from the sources built into
// this binary (kRendererModules, in import order; the last is halite_render), then its serve
// loop on stdin/stdout. Only this executable links libpython.

#define PY_SSIZE_T_CLEAN
#include "halite/render/host.h"

#include <Python.h>

#include <cstdio>
#include <string>

namespace halite::render {

extern const EmbeddedModule kRendererModules[];

int RunEmbeddedRenderer(int argc, char** argv) {
  (void)argc;
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.write_bytecode = 0;
  config.install_signal_handlers = 0;
  config.site_import = 1;  // Debian's site module adds /usr/lib/python3/dist-packages
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, argv[0]);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    std::fprintf(stderr, "halite-render: cannot start Python: %s\n",
                 status.err_msg ? status.err_msg : "unknown error");
    return 70;
  }
  int rc = 70;
  // Each module lands in sys.modules, so the later ones import the earlier ones by name.
  PyObject* module = nullptr;
  for (const EmbeddedModule* m = kRendererModules; m->name != nullptr; ++m) {
    Py_XDECREF(module);
    const std::string file = std::string(m->name) + ".py";
    PyObject* code = Py_CompileString(m->source, file.c_str(), Py_file_input);
    module = code ? PyImport_ExecCodeModule(m->name, code) : nullptr;
    Py_XDECREF(code);
    if (module == nullptr) break;
  }
  PyObject* serve = module ? PyObject_GetAttrString(module, "serve") : nullptr;
  PyObject* result = serve ? PyObject_CallFunction(serve, "ii", 0, 1) : nullptr;
  if (result) {
    rc = static_cast<int>(PyLong_AsLong(result));
  } else {
    PyErr_Print();
  }
  Py_XDECREF(result);
  Py_XDECREF(serve);
  Py_XDECREF(module);
  if (Py_FinalizeEx() < 0) rc = 70;
  return rc;
}

}  // namespace halite::render
