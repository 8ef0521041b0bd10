# Helpers shared by every component (cf. leveldb_test, ADD_KUDU_TEST).

# cairn_add_library(name SRCS ... DEPS ...) -> target cairn_<name>, alias cairn::<name>.
function(cairn_add_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(cairn_${name} STATIC ${ARG_SRCS})
  add_library(cairn::${name} ALIAS cairn_${name})
  target_include_directories(cairn_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(cairn_${name} PRIVATE ${CAIRN_WARNINGS})
  target_link_libraries(cairn_${name} ${ARG_DEPS})
endfunction()

# cairn_add_test(path/to/foo_test.cc DEPS ... [LABELS ...]) -> one executable per file,
# every gtest case registered with ctest.
function(cairn_add_test src)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${CAIRN_WARNINGS})
  target_link_libraries(${name} PRIVATE cairn::testing ${ARG_DEPS} GTest::gmock_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 300)
endfunction()
