# ptx_check_lib.sh: what the PTX-against-layer checks share (test_mma_ptx.sh, test_wgmma_ptx.sh,
# test_mbarrier_ptx.sh, test_tma_ptx.sh). Sourced by a script that defines ptx_table INCLUDE_DIR OUT
# (nvcc's PTX of its compile unit, per kernel, in OUT) and compare TABLE PTX_TABLE (prints a
# "FAIL: ..." line per kernel that differs, returns non-zero then); ptx_bulk_table and
# ptx_compare below are those two for the scripts whose instructions read alike.

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

# ptx_bulk_table PREFIX UNIT ARCH INCLUDE_DIR OUT: nvcc's PTX of conformance/UNIT for ARCH (the header
# from INCLUDE_DIR first) in OUT.ptx, and per kernel PREFIX<name> "<name> <instruction> <operands>
# [; ...]" in OUT for its mbarrier.* and cp.async.bulk.* instructions: the instruction with its
# qualifiers, [1] per address operand, an integer as itself, r per other operand
ptx_bulk_table() {
  local prefix=$1 unit=$2 arch=$3
  "$NVCC" -std=c++17 -arch="$arch" -ptx -I"$4" -I"$ROOT" -o "$5.ptx" "$ROOT/conformance/$unit" || return 1
  awk -v pre="$prefix" 'function flush() { if (fn != "" && seq != "") print fn, seq; seq = "" }
       $1 == ".visible" && $2 == ".entry" && index($3, pre) == 1 {
         flush(); fn = substr($3, length(pre) + 1); sub(/\(.*/, "", fn) }
       /^[ \t]*(mbarrier\.|cp\.async\.bulk\.)/ {
         line = $0; sub(/^[ \t]*/, "", line); sub(/;.*/, "", line)
         ins = line; sub(/[ \t].*/, "", ins); ops = substr(line, length(ins) + 1)
         out = ins
         n = split(ops, tok, /[ \t,]+/)
         for (i = 1; i <= n; i++) {
           t = tok[i]
           if (t == "") continue
           if (t ~ /^\[/) out = out " [1]"
           else if (t ~ /^-?[0-9]+$/) out = out " " t
           else out = out " r"
         }
         seq = seq (seq == "" ? "" : " ; ") out
       }
       END { flush() }' "$5.ptx" >"$5"
}

# ptx_compare PREFIX WHAT CPU_TABLE PTX_TABLE: 0 when every kernel's instruction sequence in
# PTX_TABLE is CPU_TABLE's; else a FAIL line per kernel that differs (WHAT: the instructions'
# kind, for a kernel that has none)
ptx_compare() {
  local prefix=$1 what=$2 bad=0 fn want got
  while read -r fn want; do
    got=$(awk -v f="$fn" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "$4")
    if [ "$got" != "$want" ]; then
      echo "FAIL: kernel $prefix$fn: nvcc's PTX is '${got:-no $what instruction}', the CPU layer executes '$want'"
      bad=1
    fi
  done <"$3"
  return $bad
}

# ptx_assembles ARCH WHAT PATTERN: ptxas for ARCH takes $tmp/ptx.txt.ptx (ptx_table's PTX), printing
# how many of its lines match PATTERN (WHAT names them); 1 with a FAIL line when it refuses or is missing
ptx_assembles() {
  if [ -z "$PTXAS" ]; then
    echo "FAIL: nvcc without ptxas"
    return 1
  elif "$PTXAS" -arch="$1" -o "$tmp/assembled.cubin" "$tmp/ptx.txt.ptx" 2>"$tmp/ptxas.log"; then
    echo "ok: ptxas -arch=$1 assembles the PTX ($(grep -cE "$3" "$tmp/ptx.txt.ptx") $2)"
  else
    echo "FAIL: ptxas -arch=$1 refuses the PTX: $(head -n 3 "$tmp/ptxas.log" | tr '\n' ' ')"
    return 1
  fi
}
