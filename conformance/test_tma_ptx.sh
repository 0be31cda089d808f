#!/usr/bin/env bash
# test_tma_ptx.sh: the two definitions of the TMA tensor load agree, ptxas takes the PTX, and the
# nvcc host encoder reaches the driver only through the runtime's entry point. fast/tma.cuh has
# tma_load_2d twice: inline PTX for nvcc (sm_90), and a call into the CPU layer
# (fast/cuda_cpu/tma.h) for the CPU build. nvcc compiles conformance/tma_ptx_compile.cu for
# sm_90 to PTX; the kernel's mbarrier.* and cp.async.bulk.* instructions, in order (normalised as
# test_mbarrier_ptx.sh does: the instruction with its qualifiers, [1] per address operand, r per
# register), must be the ones the CPU layer executes for the same kernel (tma_ptx_table, built
# from the same source). ptxas must assemble the PTX for sm_90. nvcc -c of the same file with
# -Wall -Wextra must warn about nothing, and its object must call no cu* driver function (the
# encoder goes through cudaGetDriverEntryPoint[ByVersion]: no link against libcuda). Then the
# comparison must FAIL on a copy of tma.cuh whose load lost its .tile qualifier. A few nvcc
# compiles and one ptxas, seconds; no GPU needed; without nvcc it is skipped (exit 77).
# usage: test_tma_ptx.sh NVCC REPO_ROOT TMA_PTX_TABLE
set -u
. "$(dirname "$0")/ptx_check_lib.sh"
ptx_check_setup test_tma_ptx.sh fast/tma.cuh "$@"

# ptx_table INCLUDE_DIR OUT and compare CPU_TABLE PTX_TABLE: ptx_check_lib.sh's for the mbarrier.*
# and cp.async.bulk.* instructions of conformance/tma_ptx_compile.cu's kernels
ptx_table() { ptx_bulk_table tma_ptx_ tma_ptx_compile.cu sm_90 "$1" "$2"; }
compare() { ptx_compare tma_ptx_ "mbarrier or bulk" "$1" "$2"; }

ptx_table "$tmp/none" "$tmp/ptx.txt" || { echo "FAIL: nvcc could not compile conformance/tma_ptx_compile.cu for sm_90"; exit 1; }
fail=0
if ! grep -q 'cp\.async\.bulk\.tensor\.2d' "$tmp/table.txt"; then
  echo "FAIL: the CPU layer's table has no cp.async.bulk.tensor.2d: $(cat "$tmp/table.txt")"
  fail=1
fi
if compare "$tmp/table.txt" "$tmp/ptx.txt"; then
  echo "ok: $(wc -l <"$tmp/table.txt") kernel of conformance/tma_ptx_compile.cu: nvcc's PTX = the CPU layer's instructions:"
  sed 's/^/  /' "$tmp/table.txt"
else
  fail=1
fi
ptx_assembles sm_90 "instructions" '^[[:space:]]*(mbarrier|cp\.async\.bulk)\.' || fail=1

# the host half: warning-free, and the driver reached only through the runtime's entry point
if ! "$NVCC" -std=c++17 -arch=sm_90 -c -Xcompiler -Wall,-Wextra -I"$ROOT" -o "$tmp/host.o" \
    "$ROOT/conformance/tma_ptx_compile.cu" >"$tmp/host.log" 2>&1; then
  echo "FAIL: nvcc -c of conformance/tma_ptx_compile.cu: $(head -n 3 "$tmp/host.log" | tr '\n' ' ')"
  fail=1
elif [ -s "$tmp/host.log" ]; then
  echo "FAIL: nvcc -c of conformance/tma_ptx_compile.cu warns: $(head -n 3 "$tmp/host.log" | tr '\n' ' ')"
  fail=1
else
  undef=$(nm -u "$tmp/host.o" | awk '{print $NF}')
  driver=$(printf '%s\n' "$undef" | grep -E '^cu[A-Z]' | tr '\n' ' ')
  if [ -n "$driver" ]; then
    echo "FAIL: the host object calls the driver library directly (a link against libcuda): $driver"
    fail=1
  elif ! printf '%s\n' "$undef" | grep -qE '^cudaGetDriverEntryPoint(ByVersion)?$'; then
    echo "FAIL: the host object does not reach cuTensorMapEncodeTiled through cudaGetDriverEntryPoint[ByVersion]"
    fail=1
  else
    echo "ok: nvcc -c -Wall -Wextra is quiet; the encoder reaches the driver through $(printf '%s\n' "$undef" | grep -E '^cudaGetDriverEntryPoint') only"
  fi
fi

# the comparison must fail on a load without its .tile qualifier
ptx_mutant_caught fast/tma.cuh '.tile dropped' 's/\.global\.tile\.mbarrier/.global.mbarrier/' 'FAIL: kernel tma_ptx_load: ' || fail=1
exit $fail
