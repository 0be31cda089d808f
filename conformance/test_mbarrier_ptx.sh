#!/usr/bin/env bash
# test_mbarrier_ptx.sh: the two definitions of every mbarrier and bulk-copy instruction agree, and
# ptxas takes them. fast/mbarrier.cuh has each instruction twice: inline PTX for nvcc (sm_90), and
# a call into the CPU layer (fast/cuda_cpu/mbarrier.h) for the CPU build. nvcc compiles
# conformance/mbarrier_ptx_compile.cu for sm_90 to PTX; each kernel's mbarrier.* and
# cp.async.bulk.* instructions, in order (the instruction with all its qualifiers, then [1] per
# address operand, r per register or predicate, immediates as written), must be the ones the CPU
# layer executes for the same kernel (mbarrier_ptx_table, built from the same source). ptxas must
# assemble the PTX for sm_90. Then the comparison must FAIL on a copy of mbarrier.cuh whose
# try_wait body says test_wait, naming that kernel (the comparison can fail). One nvcc compile
# per table and one ptxas, a few seconds; no GPU needed; without nvcc it is skipped (exit 77)
# with the reason. Only a GPU can execute the instructions.
# usage: test_mbarrier_ptx.sh NVCC REPO_ROOT MBARRIER_PTX_TABLE
set -u
. "$(dirname "$0")/ptx_check_lib.sh"
ptx_check_setup test_mbarrier_ptx.sh fast/mbarrier.cuh "$@"

# ptx_table INCLUDE_DIR OUT and compare CPU_TABLE PTX_TABLE: ptx_check_lib.sh's for the mbarrier.*
# and cp.async.bulk.* instructions of conformance/mbarrier_ptx_compile.cu's kernels
ptx_table() { ptx_bulk_table mbarrier_ptx_ mbarrier_ptx_compile.cu sm_90 "$1" "$2"; }
compare() { ptx_compare mbarrier_ptx_ "mbarrier" "$1" "$2"; }

ptx_table "$tmp/none" "$tmp/ptx.txt" || { echo "FAIL: nvcc could not compile conformance/mbarrier_ptx_compile.cu for sm_90"; exit 1; }
fail=0
# every function of mbarrier.cuh's nvcc half that emits an instruction has a kernel
for f in $(grep -o '__forceinline__ [a-z0-9_]* mbarrier_[a-z_]*\|__forceinline__ void bulk_copy_g2s' "$ROOT/fast/mbarrier.cuh" | awk '{print $NF}'); do
  case $f in mbarrier_smem|mbarrier_wait_parity) continue ;; esac # an address conversion; a loop of try_wait
  k=${f#mbarrier_}; k=${k%_parity}; [ "$f" = bulk_copy_g2s ] && k=bulk_copy
  if ! grep -q "^$k " "$tmp/table.txt"; then
    echo "FAIL: fast/mbarrier.cuh has $f but no kernel of conformance/mbarrier_ptx_compile.cu runs it"
    fail=1
  fi
done
if compare "$tmp/table.txt" "$tmp/ptx.txt"; then
  echo "ok: $(wc -l <"$tmp/table.txt") kernels of conformance/mbarrier_ptx_compile.cu: nvcc's PTX = the CPU layer's instructions:"
  sed 's/^/  /' "$tmp/table.txt"
else
  fail=1
fi
ptx_assembles sm_90 "instructions" '^[[:space:]]*(mbarrier|cp\.async\.bulk)\.' || fail=1

# the comparison must fail on a wrapper whose try_wait body is a test_wait
ptx_mutant_caught fast/mbarrier.cuh 'try_wait written as test_wait' '/int mbarrier_try_wait_parity(uint64_t \*bar, uint32_t parity) {/,/^}/ s/mbarrier\.try_wait\.parity/mbarrier.test_wait.parity/' 'FAIL: kernel mbarrier_ptx_try_wait: ' || fail=1
exit $fail
