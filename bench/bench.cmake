# Benchmarks: executables that print figures; not run by ctest.
add_executable(bench_ref_train bench/bench_ref_train.c)
target_link_libraries(bench_ref_train PRIVATE vrl_ref32 vrl_ref64 vrl_common)

# Tokenizer throughput; bench/tokenizer.sh runs it beside PyPI `tokenizers`.
add_executable(bench_tokenizer bench/bench_tokenizer.c)
target_link_libraries(bench_tokenizer PRIVATE vrl_common)
