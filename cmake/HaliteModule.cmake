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

# halite_test(<name> SOURCES ... DEPS ... [LABEL unit|integration|postgres]): one gtest binary.
# [LOCKED <gtest filter> LOCK <resource> LOCKED_LABEL <label> LOCKED_TIMEOUT <s>]: the tests
# the filter matches hold the ctest RESOURCE_LOCK <resource> (one at a time, e.g. a server on
# a fixed port and fixed paths) and carry <label> besides LABEL; the others run as usual.
function(halite_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT;LOCKED;LOCK;LOCKED_LABEL;LOCKED_TIMEOUT"
                        "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                                        nlohmann_json::nlohmann_json)
  target_compile_definitions(${name} PRIVATE
    HALITE_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data"
    HALITE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT ARG_LOCKED)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
      PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT})
    return()
  endif()
  if(NOT ARG_LOCKED_TIMEOUT)
    set(ARG_LOCKED_TIMEOUT ${ARG_TIMEOUT})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${ARG_LOCKED}"
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "${ARG_LOCKED}"
    PROPERTIES LABELS "${ARG_LABEL};${ARG_LOCKED_LABEL}" TIMEOUT ${ARG_LOCKED_TIMEOUT}
               RESOURCE_LOCK ${ARG_LOCK})
endfunction()
