#!/usr/bin/env bash
# mutation_check.sh: show that the golden suite catches a wrong formula.
#
# Copies the working tree to a temp folder, builds test_golden there, checks that the
# unmodified tree passes the chosen golden case, then for each mutation below applies one
# sed edit to ref/, rebuilds and requires the case to FAIL (printing the measured error).
# Exit 0 iff the clean tree passes and every applicable mutation is caught.
#
#   conformance/golden/mutation_check.sh            all mutations
#   conformance/golden/mutation_check.sh rope_theta one by name
#
# ≈ 10 s (one configure, a few incremental builds of test_golden); ctest runs the
# baseline mutations as golden_mutation_check.
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

# the tracked and untracked-but-not-ignored files, as they are now (outside git: all but build*)
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -co --exclude-standard -z) | (cd "$root" && xargs -0 cp --parents -t "$tmp")
else
  tar -C "$root" --exclude='./build*' --exclude='./.git' --exclude='*/.venv' -cf - . | tar -C "$tmp" -xf -
fi
mkdir -p "$tmp/build"
# CPU only: the mutations are in the reference, and a CUDA build would only add minutes.
cmake -S "$tmp" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF >/dev/null

run_case() { # $1 = filter; prints the test's output, returns its status
  cmake --build "$tmp/build" --target test_golden -j"${MUTATION_JOBS:-$(nproc)}" >/dev/null
  "$tmp/build/bin/test_golden" --filter "golden/$1" 2>&1
}

status=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name file expr filter what <<<"$m"
  [[ $# -gt 0 && " $* " != *" $name "* ]] && continue
  if [[ ! -f "$tmp/$file" ]]; then
    echo "== $name: not applicable ($file is not in this tree)"
    continue
  fi
  cp "$tmp/$file" "$tmp/$file.orig"
  if out=$(run_case "$filter"); then
    if grep -q "Tested: 0" <<<"$out"; then
      echo "== $name: not applicable (golden/$filter is skipped in this tree)"
      continue
    fi
  else
    echo "== $name: the UNMODIFIED tree fails golden/$filter:"; echo "$out"; exit 1
  fi
  sed -i "$expr" "$tmp/$file"
  if cmp -s "$tmp/$file" "$tmp/$file.orig"; then
    echo "== $name: FAILED TO APPLY (pattern not found in $file; update this script)"; status=1; continue
  fi
  echo "== $name: $what ($file)"
  if out=$(run_case "$filter"); then
    echo "   NOT CAUGHT: golden/$filter still passes"; status=1
  else
    grep -E "relative error|Synthesis" <<<"$out" | sed 's/^/   /'
    echo "   caught"
  fi
  cp "$tmp/$file.orig" "$tmp/$file"
done
exit $status
