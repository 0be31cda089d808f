# fuzz.cmake: libFuzzer harnesses (built with -DVRL_FUZZ=ON and CC=clang, as the second
# build of scripts/test.sh does). Each harness gets a ctest that runs it for a few
# seconds from its seed corpus in fuzz/corpus/NAME (fuzz/run.sh); scripts/fuzz.sh runs
# them for as long as asked.
set(VRL_FUZZ_SECONDS 5 CACHE STRING "seconds per harness in ctest")
foreach(name safetensors config shard tokenizer tasks train_state)
  add_executable(fuzz_${name} fuzz/fuzz_${name}.c)
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_definitions(fuzz_${name} PRIVATE VRL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_${name} PRIVATE vrl_ref64 vrl_common)
  add_test(NAME fuzz_${name} COMMAND ${CMAKE_SOURCE_DIR}/fuzz/run.sh $<TARGET_FILE:fuzz_${name}>
    ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name} ${VRL_FUZZ_SECONDS})
  set_tests_properties(fuzz_${name} PROPERTIES ENVIRONMENT "TMPDIR=${VRL_TEST_TMP}" TIMEOUT 120)
endforeach()
