# ptx_check_lib.sh: what the PTX-against-layer checks share (test_mma_ptx.sh, test_wgmma_ptx.sh,
# test_mbarrier_ptx.sh). Sourced by a script that defines ptx_table INCLUDE_DIR OUT (nvcc's PTX
# of its compile unit, per kernel, in OUT) and compare TABLE PTX_TABLE (prints a "FAIL: ..." line
# per kernel that differs, returns non-zero then).

# ptx_check_setup NAME HEADER "$@": the arguments NVCC REPO_ROOT TABLE into NVCC, ROOT, TABLE; nvcc
# found (else exit 77 with the reason), PTXAS beside it, a scratch folder tmp, and the CPU
# layer's table (TABLE's output) in $tmp/table.txt
ptx_check_setup() {
  local name=$1 header=$2 usage="usage: $1 NVCC REPO_ROOT TABLE"
  NVCC=${3:-} ROOT=${4:?$usage} TABLE=${5:?$usage}
  [ -n "$NVCC" ] && [ -x "$(command -v "$NVCC")" ] || NVCC=$(command -v nvcc || true)
  if [ -z "$NVCC" ]; then
    echo "SKIP: no nvcc (CUDA compiler) on this machine: the PTX of $header needs one"
    exit 77
  fi
  PTXAS=$(dirname "$NVCC")/ptxas
  [ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/${name%.sh}.XXXXXX") || exit 1
  trap 'rm -rf "$tmp"' EXIT
  if ! "$TABLE" >"$tmp/table.txt"; then
    echo "FAIL: $TABLE (the CPU layer's instructions) failed"
    exit 1
  fi
}

# ptx_mutant_caught HEADER WHAT SED_SCRIPT EXPECT: the comparison must FAIL on a copy of HEADER
# (relative to the root, e.g. fast/mma.cuh) edited by SED_SCRIPT, with a line starting EXPECT.
# Returns 0 when caught; prints what happened either way.
ptx_mutant_caught() {
  local header=$1 what=$2 script=$3 expect=$4 caught
  mkdir -p "$tmp/mutant/$(dirname "$header")"
  sed "$script" "$ROOT/$header" >"$tmp/mutant/$header"
  if cmp -s "$ROOT/$header" "$tmp/mutant/$header"; then
    echo "FAIL: the mutant ($what) changed nothing in $header"
    return 1
  elif ! ptx_table "$tmp/mutant" "$tmp/mutant.txt"; then
    echo "FAIL: nvcc could not compile the mutant"
    return 1
  fi
  caught=$(compare "$tmp/table.txt" "$tmp/mutant.txt")
  if printf '%s\n' "$caught" | grep -qF -- "$expect"; then
    echo "ok: the mutant with $what is caught: $caught"
  else
    echo "FAIL: the mutant with $what was not caught (${caught:-no difference})"
    return 1
  fi
}
