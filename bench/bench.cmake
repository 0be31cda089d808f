# Benchmarks: executables that print figures; not run by ctest.

# Tokenizer throughput; bench/tokenizer.sh runs it beside PyPI `tokenizers`.
add_executable(bench_tokenizer bench/bench_tokenizer.c)
target_link_libraries(bench_tokenizer PRIVATE vrl_common)
