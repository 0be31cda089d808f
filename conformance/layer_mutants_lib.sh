# layer_mutants_lib.sh: what the CPU layer's instruction mutant scripts share
# (wgmma_hazard_mutants.sh, mbarrier_hazard_mutants.sh, gemm_wgmma_mutants.sh). Sourced, after setting
# SUITE, the criterion suite of the two test programs test_cuda_cpu_$SUITE and
# test_cuda_cpu_${SUITE}_check; PROGRAM (the plain program's name) and CRITERION_SUITE override
# those names where a script's programs are named otherwise.
#
# It requires the unmodified programs to pass, then each `mutant` call injects one change into
# a copy of a file, rebuilds only that object and the one program from the build's own objects
# (conformance/mutant_build.py), runs the named test and requires it to FAIL with the expected
# words; `mutants_summary` ends the script, exit 0 iff every mutant was caught. The tree and the
# build are never modified. The build is VRL_BUILD_DIR (ctest sets it), else ./build.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${VRL_BUILD_DIR:-$root/build}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-$SUITE-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

PROGRAM=${PROGRAM:-test_cuda_cpu_$SUITE}
CRITERION_SUITE=${CRITERION_SUITE:-cuda_cpu_$SUITE}
# run BIN TEST: one criterion test of BIN, output on stdout
run() { (cd "$tmp" && "$1" --filter "$CRITERION_SUITE/$2" 2>&1); }

for p in "$PROGRAM" "${PROGRAM}_check"; do
  if ! out=$(run "$build/bin/$p" '*'); then
    echo "== the UNMODIFIED tree fails $p:"; echo "$out" | tail -5; exit 1
  fi
done
echo "== unmodified tree passes ($PROGRAM, ${PROGRAM}_check)"

killed=0 total=0 missed=""
# mutant NAME FILE PATTERN REPLACEMENT PROGRAM TEST EXPECT: replace the one line matching PATTERN
# (a fixed string) in FILE, rebuild PROGRAM, run its TEST; it must fail and its output hold EXPECT
mutant() {
  local name=$1 file=$2 pattern=$3 replacement=$4 program=$5 test=$6 expect=$7
  total=$((total + 1))
  local n; n=$(grep -cF -- "$pattern" "$root/$file" || true)
  if [ "$n" != 1 ]; then echo "== $name: '$pattern' occurs $n times in $file (update this script)"; exit 1; fi
  local dir=$tmp/$name copy=$tmp/$name/$file
  mkdir -p "$(dirname "$copy")"
  cp "$root/$file" "$copy"
  PAT=$pattern REP=$replacement perl -0pi -e 's/\Q$ENV{PAT}\E/$ENV{REP}/' "$copy"
  echo "== $name ($file, $program $test)"
  local bin out status=0
  if ! bin=$(python3 "$root/conformance/mutant_build.py" "$build" "$program" "$file" "$copy" "$dir" 2>"$dir/build.log"); then
    echo "   the mutant does not build: $(tail -n 1 "$dir/build.log")"; missed="$missed $name"; return
  fi
  out=$(run "$bin" "$test") || status=$?
  rm -rf "$dir"
  if [ $status = 0 ]; then echo "   NOT CAUGHT: the test passes"; missed="$missed $name"; return; fi
  local msg; msg=$(echo "$out" | grep -m1 -F -- "$expect" || true)
  if [ -z "$msg" ]; then echo "   fails, but its output never says '$expect': $(echo "$out" | grep -m1 -E 'Assert|FAIL|kernel' || true)"; missed="$missed $name"; return; fi
  echo "   $msg" | cut -c1-300
  killed=$((killed + 1))
}

mutants_summary() {
  echo "== $killed of $total mutants caught${missed:+; missed:$missed}"
  [ $killed = $total ]
}
