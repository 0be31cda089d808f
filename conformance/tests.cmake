# Criterion tests; each file is one executable registered with ctest.
