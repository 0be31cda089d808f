#!/usr/bin/env bash
# code_stats.sh: the two architecture figures of docs/results/code-stats.md, reproducible on any commit:
#   1. call sites of the variant parser and the plan builders outside conformance/ and bench/
#      (their definitions excluded);
#   2. the ten longest C/CUDA functions of the product code (common/ ref/ fast/ cli/), by
#      ctags line spans (the function's first line to its closing brace).
# Usage: bash scripts/code_stats.sh [REPO_DIR]   (default: this checkout)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
dirs="common ref fast cli"
echo "callers (call sites outside tests and bench):"
for f in variant_parse value_plan_build stream_plan_build; do
  # call sites: indented lines of .c/.cu files naming f( that are not comments (definitions
  # start at column 0)
  sites=$(grep -rnE "\b$f\(" $dirs --include='*.c' --include='*.cu' |
    grep -E '^[^:]+:[0-9]+:[[:space:]]' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' || true)
  n=$(printf '%s' "$sites" | grep -c . || true)
  files=$(printf '%s' "$sites" | cut -d: -f1 | sort -u | tr '\n' ' ')
  printf '  %-18s %2d  %s\n' "$f" "$n" "$files"
done
echo "longest functions (lines):"
find $dirs -name '*.c' -o -name '*.cu' | sort | xargs ctags -x --c-kinds=f --language-force=C 2>/dev/null |
  awk '{print $4, $3, $1}' | while read -r file line name; do
    end=$(awk -v s="$line" 'NR >= s && /^}/ {print NR; exit}' "$file")
    echo "$((end - line + 1)) $name $file"
  done | sort -rn | awk 'NR <= 10 {printf "  %4d  %s (%s)\n", $1, $2, $3}' # no head: its early close is a SIGPIPE under pipefail
echo "layout and run folder (files; tests and bench excluded):"
count() { # count FILES-REGEX-DESCRIPTION: files under the given dirs whose code lines match the regex
  local re=$1; shift
  local hits
  hits=$(grep -rlE "$re" "$@" --include='*.c' --include='*.cu' --include='*.h' --include='*.cuh' 2>/dev/null | sort | tr '\n' ' ' || true)
  printf '%2d  %s' "$(printf '%s' "$hits" | wc -w)" "$hits"
}
printf '  ref/ fast/ spelling q_proj or gate_proj            %s\n' "$(count 'q_proj|gate_proj' ref fast)"
printf '  files formatting %%s/config.json|metrics.jsonl|train_state  %s\n' \
  "$(count '%s/(config\.json|metrics\.jsonl|train_state)' $dirs)"
printf '  files formatting a run-folder path (run_path, %%s/NAME)    %s\n' \
  "$(count '%s/(config\.json|metrics\.jsonl|train_state|model\.safetensors|\.lock|eval\.json)|^int run_path\(.*\{' $dirs)"
printf '  cli/ including ref/model.h                         %s\n' "$(count '#include "ref/model\.h"' cli)"
printf '  fast/ common/{base,model,data,eval} including common/run/  %s\n' \
  "$(count '#include "common/run/' fast common/base common/model common/data common/eval)"
printf '  cli/ choosing a backend by name (ref_backend_f*/fast_backend_cuda)  %s\n' \
  "$(count 'ref_backend_f(32|64)|fast_backend_cuda' cli)"
echo "circles (pairs of product .c/.cu files that call each other's functions):"
find $dirs -name '*.c' -o -name '*.cu' | sort | xargs ctags -x --c-kinds=f --language-force=C 2>/dev/null |
  awk '{print $1, $4}' | python3 -c '
import re, sys, collections
defs = collections.defaultdict(set)  # file -> functions it defines
for line in sys.stdin:
    name, path = line.split()
    defs[path].add(name)
owner = {}
for f, names in defs.items():
    for n in names:
        owner.setdefault(n, set()).add(f)
calls = collections.defaultdict(set)  # file -> files whose functions it calls
for f in defs:
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(\\.|[^\"\\])*\"", " ", open(f).read(), flags=re.S)
    for n in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text)):
        for g in owner.get(n, ()):
            if g != f and n not in defs[f]:
                calls[f].add(g)
pairs = sorted({tuple(sorted((a, b))) for a in calls for b in calls[a] if a in calls.get(b, ())})
print("  %d" % len(pairs) + "".join("  %s <-> %s" % p for p in pairs))
'
