# halite_library(<module> SOURCES ... DEPS ...): src/<module> -> target halite_<module>
# (alias halite::<module>), headers in include/halite/<module>.
function(halite_library module)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(halite_${module} STATIC ${ARG_SOURCES})
  target_include_directories(halite_${module} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(halite_${module} PUBLIC ${ARG_DEPS})
  add_library(halite::${module} ALIAS halite_${module})
endfunction()

# halite_test(<name> SOURCES ... DEPS ... [LABEL unit|integration|postgres] [COST c]): one gtest
# binary. COST orders a first run (no ctest timing history yet, as in CI): higher goes first.
# [LOCKED <gtest filter> LOCK <resource> LOCKED_LABEL <label> LOCKED_TIMEOUT <s>]: the tests
# the filter matches hold the ctest RESOURCE_LOCK <resource> (one at a time, e.g. a server on
# a fixed port and fixed paths) and carry <label> besides LABEL; the others run as usual.
function(halite_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT;COST;LOCKED;LOCK;LOCKED_LABEL;LOCKED_TIMEOUT"
                        "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT ARG_COST)
    set(ARG_COST 0)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                                        nlohmann_json::nlohmann_json)
  target_compile_definitions(${name} PRIVATE
    HALITE_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data"
    HALITE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT ARG_LOCKED)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} COST ${ARG_COST})
    return()
  endif()
  if(NOT ARG_LOCKED_TIMEOUT)
    set(ARG_LOCKED_TIMEOUT ${ARG_TIMEOUT})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${ARG_LOCKED}"
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} COST ${ARG_COST})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "${ARG_LOCKED}"
    TEST_LIST ${name}_locked_tests
    PROPERTIES TIMEOUT ${ARG_LOCKED_TIMEOUT} RESOURCE_LOCK ${ARG_LOCK} COST ${ARG_COST})
  # Two labels cannot pass through gtest_discover_tests' PROPERTIES (the list is flattened),
  # so they are set by a ctest include file that runs after the discovered tests are added.
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_locked_labels.cmake")
  file(WRITE "${labels_file}"
    "foreach(t IN LISTS ${name}_locked_tests)\n"
    "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${ARG_LABEL};${ARG_LOCKED_LABEL}\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
endfunction()
