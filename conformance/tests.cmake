# Criterion tests; each file is one executable registered with ctest.
#
# vrl_test(NAME SOURCES a.c b.c LIBS vrl_common ... [ARGS ...])
#   builds ${CMAKE_BINARY_DIR}/bin/NAME, links Criterion, registers it with ctest.
#   The test sees VRL_SHARED_DATA (compile definition and environment: real data that may
#   be absent, so tests skip without it) and TMPDIR pointing at build/tmp, where
#   conformance/test_util.h's test_tmpdir() makes a fresh mkdtemp folder per test.
set(VRL_TEST_TMP "${CMAKE_BINARY_DIR}/tmp")
file(MAKE_DIRECTORY "${VRL_TEST_TMP}")

function(vrl_test NAME)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;ARGS" ${ARGN})
  add_executable(${NAME} ${T_SOURCES})
  target_include_directories(${NAME} PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_definitions(${NAME} PRIVATE VRL_SHARED_DATA="${VRL_SHARED_DATA}")
  target_link_libraries(${NAME} PRIVATE ${T_LIBS} PkgConfig::CRITERION)
  add_test(NAME ${NAME} COMMAND ${NAME} ${T_ARGS})
  set_tests_properties(${NAME} PROPERTIES
    ENVIRONMENT "TMPDIR=${VRL_TEST_TMP};VRL_SHARED_DATA=${VRL_SHARED_DATA}")
endfunction()

# ---------------------------------------------------------------- common/
vrl_test(test_schedule   SOURCES conformance/test_schedule.c   LIBS vrl_common)
vrl_test(test_rng        SOURCES conformance/test_rng.c        LIBS vrl_common)
vrl_test(test_config     SOURCES conformance/test_config.c     LIBS vrl_common)
vrl_test(test_shard      SOURCES conformance/test_shard.c      LIBS vrl_common)
vrl_test(test_checkpoint SOURCES conformance/test_checkpoint.c LIBS vrl_common)

# ---------------------------------------------------------------- ref/
# Gradient checks and AdamW link the float64 reference (`real` is double there);
# the others reach both precisions through the Backend tables.
foreach(t test_gradcheck_ops test_gradcheck_model test_adamw)
  vrl_test(${t} SOURCES conformance/${t}.c LIBS vrl_ref64 vrl_common)
  target_compile_definitions(${t} PRIVATE VRL_FP64=1)
endforeach()
foreach(t test_overfit test_precision)
  vrl_test(${t} SOURCES conformance/${t}.c LIBS vrl_ref32 vrl_ref64 vrl_common ${MATH_LIB})
endforeach()

# ---------------------------------------------------------------- training loop and the vrl command
vrl_test(test_resume SOURCES conformance/test_resume.c LIBS vrl_ref32 vrl_ref64 vrl_common)
add_test(NAME test_cli_errors COMMAND ${CMAKE_SOURCE_DIR}/conformance/test_cli_errors.sh $<TARGET_FILE:vrl>)

# ---------------------------------------------------------------- tokenizer, data pipeline, mixture loader
foreach(t test_tokenizer test_mixture)
  vrl_test(${t} SOURCES conformance/${t}.c LIBS vrl_common)
  target_compile_definitions(${t} PRIVATE VRL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
endforeach()
# The data tests drive `vrl data` through cmd_data() directly.
vrl_test(test_data SOURCES conformance/test_data.c cli/cmd_data.c LIBS vrl_common)

# ---------------------------------------------------------------- analysis metrics and evaluation
vrl_test(test_metrics SOURCES conformance/test_metrics.c LIBS vrl_ref64 vrl_common)
target_compile_definitions(test_metrics PRIVATE VRL_FP64=1 VRL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
vrl_test(test_lmeval SOURCES conformance/test_lmeval.c LIBS vrl_common)
target_compile_definitions(test_lmeval PRIVATE VRL_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
vrl_test(test_curves SOURCES conformance/test_curves.c LIBS vrl_common ${MATH_LIB})
add_test(NAME test_eval_cli COMMAND ${CMAKE_SOURCE_DIR}/conformance/test_eval_cli.sh $<TARGET_FILE:vrl>)
