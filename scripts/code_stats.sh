#!/usr/bin/env bash
# code_stats.sh: the two architecture figures of docs/architecture.md, reproducible on any commit:
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
  done | sort -rn | head -10 | awk '{printf "  %4d  %s (%s)\n", $1, $2, $3}'
