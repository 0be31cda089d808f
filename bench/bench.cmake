# Benchmarks: executables that print figures; not run by ctest.
add_executable(bench_ref_train bench/bench_ref_train.c)
target_link_libraries(bench_ref_train PRIVATE vrl_ref32 vrl_ref64 vrl_common)

# Tokenizer throughput; bench/tokenizer.sh runs it beside PyPI `tokenizers`.
add_executable(bench_tokenizer bench/bench_tokenizer.c)
target_link_libraries(bench_tokenizer PRIVATE vrl_common)

# CUDA training throughput (fast/); builds with the CUDA backend, needs a GPU to run.
if(VRL_HAVE_CUDA)
  add_executable(bench_fast bench/bench_fast.c)
  target_link_libraries(bench_fast PRIVATE vrl_fast vrl_common)
endif()

# Cost model of fast/'s data parallelism (docs/distributed.md): bytes, times, scaling efficiency.
add_executable(bench_dist_cost bench/bench_dist_cost.c)
target_link_libraries(bench_dist_cost PRIVATE vrl_common)
