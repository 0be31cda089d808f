#!/usr/bin/env bash
# test_wgmma_ptx.sh: the two definitions of every warpgroup instruction agree, and ptxas takes
# them. fast/wgmma.cuh has each instruction twice: inline PTX for nvcc (sm_90a only), and a call
# into the CPU layer (fast/cuda_cpu/wgmma.h) for the CPU build. nvcc compiles
# conformance/wgmma_ptx_compile.cu for sm_90a to PTX; each kernel's wgmma instructions, in order
# (instruction, shape, types, the number of registers in each operand group, register operands
# as r, the scale-d predicate as p, the immediates: scale-a/b and the transposes, wait_group's N),
# must be the ones the CPU layer executes for the same kernel (wgmma_ptx_table, built from the same
# source). Every N of wgmma.cuh's nvcc half must have its kernel. ptxas must assemble the PTX for
# sm_90a. Then the same comparison must FAIL on a copy of wgmma.cuh whose m64n64 body swaps its
# two transpose immediates, naming that kernel (the comparison can fail). Two nvcc compiles and
# one ptxas, a few seconds; no GPU needed; without nvcc it is skipped (exit 77) with the reason.
# Only a GPU can execute the instructions.
# usage: test_wgmma_ptx.sh NVCC REPO_ROOT WGMMA_PTX_TABLE
set -u
. "$(dirname "$0")/ptx_check_lib.sh"
ptx_check_setup test_wgmma_ptx.sh fast/wgmma.cuh "$@"

# ptx_table INCLUDE_DIR OUT: nvcc's PTX of wgmma_ptx_compile.cu (wgmma.cuh from INCLUDE_DIR first)
# in OUT.ptx, and per kernel "<kernel> <instruction> <operands> [; ...]" in OUT
ptx_table() {
  "$NVCC" -std=c++17 -arch=sm_90a -ptx -I"$1" -I"$ROOT" -o "$2.ptx" "$ROOT/conformance/wgmma_ptx_compile.cu" || return 1
  awk 'function flush() { if (fn != "" && seq != "") print fn, seq; seq = "" }
       /^\.visible \.entry wgmma_ptx_/ { flush(); fn = $3; sub(/^wgmma_ptx_/, "", fn); sub(/\(.*/, "", fn) }
       /^[ \t]*wgmma\./ {
         line = $0; sub(/^[ \t]*/, "", line); sub(/;.*/, "", line)
         ins = line; sub(/[ \t].*/, "", ins); ops = substr(line, length(ins) + 1)
         out = ins
         while (match(ops, /\{[^}]*\}/)) {                  # each register group: {count}
           g = substr(ops, RSTART, RLENGTH); ops = substr(ops, 1, RSTART - 1) " G" gsub(/,/, ",", g) + 1 substr(ops, RSTART + RLENGTH)
         }
         n = split(ops, tok, /[ \t,]+/)
         for (i = 1; i <= n; i++) {
           t = tok[i]
           if (t == "") continue
           if (t ~ /^G[0-9]+$/) out = out " {" substr(t, 2) "}"
           else if (t ~ /^-?[0-9]+$/) out = out " " t
           else if (t == "p") out = out " p"
           else out = out " r"
         }
         seq = seq (seq == "" ? "" : " ; ") out
       }
       END { flush() }' "$2.ptx" >"$2"
}

# compare CPU_TABLE PTX_TABLE: ptx_check_lib.sh's
compare() { ptx_compare wgmma_ptx_ wgmma "$1" "$2"; }

ptx_table "$tmp/none" "$tmp/ptx.txt" || { echo "FAIL: nvcc could not compile conformance/wgmma_ptx_compile.cu for sm_90a"; exit 1; }
fail=0
# every N of wgmma.cuh's nvcc half has a kernel
for n in $(grep -o 'wgmma_ss_n[0-9]*(' "$ROOT/fast/wgmma.cuh" | grep -o '[0-9]*' | sort -un); do
  if ! grep -q "m64n${n}k16" "$tmp/table.txt"; then
    echo "FAIL: fast/wgmma.cuh has a body for N = $n but no kernel of conformance/wgmma_ptx_compile.cu runs it"
    fail=1
  fi
done
if compare "$tmp/table.txt" "$tmp/ptx.txt"; then
  echo "ok: $(wc -l <"$tmp/table.txt") kernels of conformance/wgmma_ptx_compile.cu: nvcc's PTX = the CPU layer's instructions:"
  sed 's/^/  /' "$tmp/table.txt"
else
  fail=1
fi
ptx_assembles sm_90a "wgmma.mma_async" 'wgmma\.mma_async' || fail=1

# the comparison must fail on a wrapper whose m64n64 body swaps imm-trans-a and imm-trans-b
ptx_mutant_caught fast/wgmma.cuh 'm64n64'\''s transposes swapped' '/wgmma_ss_n64(float/,/^}/ s/p, 1, 1, %35, %36;/p, 1, 1, %36, %35;/' 'FAIL: kernel wgmma_ptx_ss_n64_01: ' || fail=1
exit $fail
