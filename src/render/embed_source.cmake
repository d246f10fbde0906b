# Writes the renderer's Python modules into a C++ file as raw string literals, in the order
# given (each module imports only those before it; the last one is the renderer's main):
# cmake "-DIN=a.py;b.py" -DOUT=renderer_source.cc -P embed_source.cmake
set(entries "")
foreach(path IN LISTS IN)
  file(READ "${path}" body)
  string(FIND "${body}" ")HALITE_PY\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${path} contains the raw string delimiter")
  endif()
  get_filename_component(name "${path}" NAME_WE)
  string(APPEND entries "    {\"${name}\", R\"HALITE_PY(${body})HALITE_PY\"},\n")
endforeach()
file(WRITE "${OUT}.tmp"
  "// Generated from src/render/python at build time; do not edit.\n"
  "#include \"halite/render/host.h\"\n"
  "namespace halite::render {\n"
  "extern const EmbeddedModule kRendererModules[];\n"
  "const EmbeddedModule kRendererModules[] = {\n${entries}    {nullptr, nullptr}};\n"
  "}  // namespace halite::render\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
