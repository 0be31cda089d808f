# Criterion tests; each file is one executable registered with ctest.

# ---- tokenizer, data pipeline, mixture loader (issue 6)
foreach(t test_tokenizer test_mixture)
  add_executable(${t} conformance/${t}.c)
  target_link_libraries(${t} PRIVATE vrl_common PkgConfig::CRITERION)
  target_compile_definitions(${t} PRIVATE VRL_SHARED_DATA="${VRL_SHARED_DATA}" VRL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_test(NAME ${t} COMMAND ${t})
endforeach()
# The data tests drive `vrl data` through cmd_data() directly.
add_executable(test_data conformance/test_data.c cli/cmd_data.c)
target_link_libraries(test_data PRIVATE vrl_common PkgConfig::CRITERION)
target_compile_definitions(test_data PRIVATE VRL_SHARED_DATA="${VRL_SHARED_DATA}")
add_test(NAME test_data COMMAND test_data)
