#!/usr/bin/env bash
# mutation_check.sh: show that the golden suite catches a wrong formula.
#
# Checks that the build's test_golden passes the chosen golden case, then for each mutation
# below applies one sed edit to a copy of its file, rebuilds only that object and test_golden
# from the build's own objects (conformance/mutant_build.py) and requires the case to FAIL
# (printing the measured error). The tree and the build are never modified. The build is
# VRL_BUILD_DIR (ctest sets it), else ./build.
# Exit 0 iff the clean tree passes and every applicable mutation is caught.
#
#   conformance/golden/mutation_check.sh            all mutations
#   conformance/golden/mutation_check.sh rope_theta one by name
#
# ≈ 10 CPU-seconds (one compile and link per mutation); ctest runs the baseline mutations as
# golden_mutation_check.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-mutation.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# name | file | sed expression | golden case (filter) | what it models
mutations=(
  "rmsnorm_eps|ref/model.c|s/m->eps = c->norm_eps;/m->eps = c->norm_eps * 0.1;/|baseline_fp64|RMSNorm eps 1e-5 read as 1e-6"
  "rope_theta|ref/ops.c|s/pow(theta, -2.0 \* i \/ hd)/pow(50 * theta, -2.0 * i \/ hd)/|baseline_fp64|RoPE theta 10000 -> 500000"
  "decay_all|ref/adamw.c|s/s.decay = info->decay \&\& opt->weight_decay != 0 ?/s.decay = opt->weight_decay != 0 ?/|baseline_fp64|weight decay also on norm gains (training only)"
  "resformer_half|common/model/value_path.c|s/double a = 0\.5, b = 0\.5;/double a = 0.4, b = 0.5;/|resformer_fp64|identity ResFormer lambda_1 0.5 -> 0.4"
)

build=${VRL_BUILD_DIR:-$root/build}

run_case() { # $1 = filter, $2 = the program; prints the test's output, returns its status
  (cd "$tmp" && "$2" --filter "golden/$1" 2>&1)
}

status=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name file expr filter what <<<"$m"
  [[ $# -gt 0 && " $* " != *" $name "* ]] && continue
  if [[ ! -f "$root/$file" ]]; then
    echo "== $name: not applicable ($file is not in this tree)"
    continue
  fi
  if out=$(run_case "$filter" "$build/bin/test_golden"); then
    if grep -q "Tested: 0" <<<"$out"; then
      echo "== $name: not applicable (golden/$filter is skipped in this tree)"
      continue
    fi
  else
    echo "== $name: the UNMODIFIED tree fails golden/$filter:"; echo "$out"; exit 1
  fi
  copy=$tmp/$name/$file
  mkdir -p "$(dirname "$copy")"
  cp "$root/$file" "$copy"
  sed -i "$expr" "$copy"
  if cmp -s "$copy" "$root/$file"; then
    echo "== $name: FAILED TO APPLY (pattern not found in $file; update this script)"; status=1; continue
  fi
  echo "== $name: $what ($file)"
  if ! bin=$(python3 "$root/conformance/mutant_build.py" "$build" test_golden "$file" "$copy" "$tmp/$name"); then
    echo "   the mutant does not build"; status=1; continue
  fi
  if out=$(run_case "$filter" "$bin"); then
    echo "   NOT CAUGHT: golden/$filter still passes"; status=1
  else
    grep -E "relative error|Synthesis" <<<"$out" | sed 's/^/   /'
    echo "   caught"
  fi
done
exit $status
