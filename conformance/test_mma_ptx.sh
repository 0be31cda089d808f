#!/usr/bin/env bash
# test_mma_ptx.sh: the two definitions of every tensor-core instruction agree. fast/mma.cuh has
# each instruction twice: inline PTX for nvcc, and a call into the CPU layer
# (fast/cuda_cpu/tensor_core.h, ptx_ops.h) for the CPU build. nvcc compiles conformance/mma_ptx_compile.cu
# (one kernel per function of mma.cuh) to PTX, and each kernel's tensor-core instruction
# (instruction, shape, layouts, .trans, types, the number of registers in each operand group and
# the immediates; ex2.approx and cp.async's three instructions alike)
# must be the one the CPU layer executes for the same kernel (mma_ptx_table, built from the same
# source). Every function of mma.cuh's nvcc half must have its kernel. Then the same comparison
# must FAIL on a copy of mma.cuh with .trans deleted from ldmatrix_x4_trans's asm, naming it
# (the comparison can fail). Two nvcc compiles to PTX, a few seconds; no GPU needed; without
# nvcc it is skipped (exit 77) with the reason. Only a GPU can execute the instructions.
# usage: test_mma_ptx.sh NVCC REPO_ROOT MMA_PTX_TABLE
set -u
. "$(dirname "$0")/ptx_check_lib.sh"
ptx_check_setup test_mma_ptx.sh fast/mma.cuh "$@"

# ptx_table INCLUDE_DIR OUT: nvcc's PTX of mma_ptx_compile.cu with mma.cuh from INCLUDE_DIR, as
# "<function> <instruction> <operand groups>" per tensor-core instruction of each kernel
ptx_table() {
  "$NVCC" -std=c++17 -arch=sm_90 -ptx -I"$1" -I"$ROOT" -o "$2.ptx" "$ROOT/conformance/mma_ptx_compile.cu" || return 1
  awk '/^\.visible \.entry mma_ptx_/ { fn = $3; sub(/^mma_ptx_/, "", fn); sub(/\(.*/, "", fn) }
       /^[ \t]*(mma|ldmatrix|ex2|cp\.async)\./ {
         line = $0; sub(/^[ \t]*/, "", line); sub(/;.*/, "", line)
         ins = line; sub(/[ \t].*/, "", ins); ops = substr(line, length(ins) + 1)
         out = ""
         while (match(ops, /\{[^}]*\}|\[[^]]*\]/)) {   # each operand group: {regs} or [address]
           g = substr(ops, RSTART, RLENGTH); ops = substr(ops, RSTART + RLENGTH)
           if (g ~ /^\[/) out = out " [1]"; else out = out " {" gsub(/,/, ",", g) + 1 "}"
         }
         n = split(ops, rest, /[ \t,]+/)                 # then the immediates (sizes, wait_group N)
         for (i = 1; i <= n; i++) if (rest[i] ~ /^[0-9]+$/) out = out " " rest[i]
         print fn, ins out
       }' "$2.ptx" >"$2"
}

# compare CPU_TABLE PTX_TABLE: 0 when every function has one instruction and it is the CPU's
compare() {
  local bad=0 fn want got
  while read -r fn want; do
    got=$(awk -v f="$fn" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "$2")
    if [ "$(printf '%s\n' "$got" | grep -c .)" != 1 ]; then
      echo "FAIL: mma.cuh's $fn: nvcc's PTX of kernel mma_ptx_$fn has $(printf '%s\n' "$got" | grep -c .) tensor-core instructions, not 1: ${got:-none}"
      bad=1
    elif [ "$got" != "$want" ]; then
      echo "FAIL: mma.cuh's $fn: nvcc's PTX is '$got', the CPU layer executes '$want'"
      bad=1
    fi
  done <"$1"
  return $bad
}

ptx_table "$tmp/none" "$tmp/ptx.txt" || { echo "FAIL: nvcc could not compile conformance/mma_ptx_compile.cu"; exit 1; }
fail=0
# every function of mma.cuh's nvcc half has a kernel (and so a row of the CPU table)
for fn in $(sed -n '/^#else \/\* nvcc/,$p' "$ROOT/fast/mma.cuh" | grep -o '\(void\|float\) \(mma\|ldmatrix\|ex2\|cp_async\)_[a-z0-9_]*(' | sed 's/^[a-z]* //; s/($//'); do
  if ! awk -v f="$fn" '$1 == f { found = 1 } END { exit !found }' "$tmp/table.txt"; then
    echo "FAIL: fast/mma.cuh's $fn has no kernel in conformance/mma_ptx_compile.cu (mma_ptx_table does not list it)"
    fail=1
  fi
done
if compare "$tmp/table.txt" "$tmp/ptx.txt"; then
  echo "ok: $(wc -l <"$tmp/table.txt") functions of fast/mma.cuh: nvcc's PTX = the CPU layer's instruction:"
  sed 's/^/  /' "$tmp/table.txt"
else
  fail=1
fi

# the comparison must fail on a wrapper whose asm lost its .trans
ptx_mutant_caught fast/mma.cuh '.trans deleted from ldmatrix_x4_trans'\''s asm' '/ldmatrix_x4_trans(uint32_t/,/}/ s/\.x4\.trans\.shared/.x4.shared/' 'FAIL: mma.cuh'\''s ldmatrix_x4_trans: ' || fail=1
exit $fail
