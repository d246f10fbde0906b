// halite-render's body: CPython embedded in isolated mode (no PYTHONPATH, no user site, no
// environment variables read), the renderer module compiled from the source built into this
// binary, then its serve loop on stdin/stdout. Only this executable links libpython.

#define PY_SSIZE_T_CLEAN
#include "halite/render/host.h"

#include <Python.h>

#include <cstdio>

namespace halite::render {

extern const char kRendererSource[];

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
  PyObject* code = Py_CompileString(kRendererSource, "halite_render.py", Py_file_input);
  PyObject* module = code ? PyImport_ExecCodeModule("halite_render", code) : nullptr;
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
  Py_XDECREF(code);
  if (Py_FinalizeEx() < 0) rc = 70;
  return rc;
}

}  // namespace halite::render
