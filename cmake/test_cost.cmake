# test_cost.cmake: every ctest test runs through scripts/test_cost_run.sh, which runs the
# test's own command and writes the CPU seconds (user + system) of all the processes the test
# waited for, and its wall time, to BUILD/Testing/cost/NAME. ctest measures wall time only; the CPU time is what a suite of
# CPU-bound tests on 2 cores costs (scripts/test_cost_summary.sh prints both).
#
# It wraps add_test(NAME ...), so it must be included before the first test is added. It is
# also usable on a commit that predates it, without editing that commit:
#   cmake -S OLD -B OLD/build -DCMAKE_PROJECT_INCLUDE=/path/to/vrl/cmake/test_cost.cmake
# (bench/suite_cost.sh does that to compare two commits).
if(COMMAND vrl_test_cost_wrapped)
  return()
endif()
set(VRL_TEST_COST_RUN "${CMAKE_CURRENT_LIST_DIR}/../scripts/test_cost_run.sh")
get_filename_component(VRL_TEST_COST_RUN "${VRL_TEST_COST_RUN}" ABSOLUTE)
function(vrl_test_cost_wrapped)
endfunction()

function(add_test)
  if(NOT ARGV0 STREQUAL "NAME") # the old add_test(name command) form: unwrapped
    _add_test(${ARGV})
    return()
  endif()
  # PARSE_ARGV keeps empty arguments (an empty nvcc path is a test's argument)
  cmake_parse_arguments(PARSE_ARGV 0 T "COMMAND_EXPAND_LISTS" "NAME;WORKING_DIRECTORY" "COMMAND;CONFIGURATIONS")
  list(POP_FRONT T_COMMAND exe)
  if(TARGET "${exe}") # add_test resolves a target name only as the command itself
    set(exe "$<TARGET_FILE:${exe}>")
  endif()
  set(code "_add_test(NAME [==[${T_NAME}]==] COMMAND [==[${VRL_TEST_COST_RUN}]==] [==[${CMAKE_BINARY_DIR}/Testing/cost]==] [==[${T_NAME}]==] [==[${exe}]==]")
  foreach(a IN LISTS T_COMMAND)
    string(APPEND code " [==[${a}]==]")
  endforeach()
  if(DEFINED T_WORKING_DIRECTORY)
    string(APPEND code " WORKING_DIRECTORY [==[${T_WORKING_DIRECTORY}]==]")
  endif()
  if(T_CONFIGURATIONS)
    string(APPEND code " CONFIGURATIONS ${T_CONFIGURATIONS}")
  endif()
  if(T_COMMAND_EXPAND_LISTS)
    string(APPEND code " COMMAND_EXPAND_LISTS")
  endif()
  cmake_language(EVAL CODE "${code})")
endfunction()
