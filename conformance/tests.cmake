# Criterion tests; each file is one executable registered with ctest.

# ---------------------------------------------------------------- ref model tests (wt-refmodel)
# Gradient checks, AdamW and overfit link the float64 reference (`real` is double there);
# test_overfit and test_precision link both precisions through the Backend tables.
foreach(t test_gradcheck_ops test_gradcheck_model test_adamw)
  add_executable(${t} conformance/${t}.c)
  target_link_libraries(${t} PRIVATE vrl_ref64 vrl_common PkgConfig::CRITERION)
  target_compile_definitions(${t} PRIVATE VRL_FP64=1)
  add_test(NAME ${t} COMMAND ${t})
endforeach()
foreach(t test_overfit test_precision)
  add_executable(${t} conformance/${t}.c)
  target_link_libraries(${t} PRIVATE vrl_ref32 vrl_ref64 vrl_common PkgConfig::CRITERION ${MATH_LIB})
  add_test(NAME ${t} COMMAND ${t})
endforeach()
