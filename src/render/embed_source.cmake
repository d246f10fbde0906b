# Writes the renderer's Python source into a C++ file as one raw string literal:
# cmake -DIN=halite_render.py -DOUT=renderer_source.cc -P embed_source.cmake
file(READ "${IN}" body)
string(FIND "${body}" ")HALITE_PY\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string delimiter")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} at build time; do not edit.\nnamespace halite::render {\nextern const char kRendererSource[];\nconst char kRendererSource[] = R\"HALITE_PY(${body})HALITE_PY\";\n}  // namespace halite::render\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
