# Benchmarks: executables that print figures; not run by ctest.
