#!/usr/bin/env bash
# test_doc_commands.sh: every `vrl ...` command printed in README.md, docs/*.md and docs/*/*.md runs as
# printed, with the shell lines beside it (mkdir, printf ... > file) that prepare its input.
#
# The convention of the docs: a command in a fenced ```sh block is runnable and finishes in
# seconds; commands at paper scale sit in ```text blocks and are not run. Each document's
# ```sh commands run in order in one scratch folder of their own (so `vrl train --out runs/t`
# followed by `vrl train --resume runs/t` works), with build/bin first on PATH, the
# repository's reproduce/, scripts/ and bench/ linked in, and
# ../shared/data reachable as from a checkout. A command that reads ../shared/data when it
# is absent is skipped with the reason, and so is the rest of its block (it may need the
# skipped command's output). A line continued with a trailing backslash is one command.
# usage: test_doc_commands.sh PATH/TO/vrl REPO_ROOT
set -u
VRL=$1 ROOT=$2
. "$(dirname "$0")/cli_test_lib.sh"
export PATH="$(cd "$(dirname "$VRL")" && pwd):$PATH"
SHARED=$ROOT/../shared
# a guard against a hung or runaway command, not a speed check: a cuda-cpu eval of the docs took
# over 120 s at nice 10 while a long experiment held both cores (2026-11-28), so the bound is wide
LIMIT_S=${DOC_COMMAND_LIMIT_S:-600}

# commands FILE: one line per command of a ```sh block (comment lines and blank lines
# left out), "LINE<TAB>BLOCK<TAB>COMMAND"
commands() {
  awk '
    /^```/ { if (inblock) { inblock = 0; next } if ($0 ~ /^```sh[[:space:]]*$/) { inblock = 1; block++ } next }
    !inblock { next }
    {
      line = $0
      if (cont != "") { cmd = cmd " " line; } else { cmd = line; start = NR }
      if (line ~ /\\$/) { sub(/\\$/, "", cmd); cont = 1; next }
      cont = ""
      sub(/^[[:space:]]+/, "", cmd)
      if (cmd != "" && cmd !~ /^#/) printf "%d\t%d\t%s\n", start, block, cmd
    }' "$1"
}

total=0 vrl_commands=0
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md "$ROOT"/docs/*/*.md; do
  [ -f "$doc" ] || continue # no guides in a subfolder: the pattern stays as it is
  name=${doc#"$ROOT"/}
  # <scratch>/shared -> the real ../shared, so `../shared/data` resolves from <scratch>/work
  base="$tmp/$(echo "$name" | tr '/.' '__')"
  mkdir -p "$base/work"
  # the repository's scripts, so `reproduce/x.sh ...` runs as printed from the checkout
  for d in reproduce scripts bench; do ln -s "$(cd "$ROOT/$d" && pwd)" "$base/work/$d"; done
  [ -d "$SHARED" ] && ln -s "$(cd "$SHARED" && pwd)" "$base/shared"
  skipped_block=0
  while IFS=$'\t' read -r line block cmd; do
    total=$((total + 1))
    [[ "$cmd" == vrl\ * ]] && vrl_commands=$((vrl_commands + 1))
    where="$name:$line"
    if [ "$skipped_block" = "$block" ]; then
      echo "SKIP: $where: after a skipped command in the same block: $cmd"
      continue
    fi
    if [[ "$cmd" == *../shared/* ]] && [ ! -d "$SHARED/data" ]; then
      echo "SKIP: $where: needs ../shared/data, absent here: $cmd"
      skipped_block=$block
      continue
    fi
    start=$(date +%s)
    (cd "$base/work" && timeout "$LIMIT_S" bash -c "$cmd") >"$tmp/out" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
      passes=$((passes + 1)); echo "ok   $where (${secs} s): $cmd"
    else
      fails=$((fails + 1))
      [ "$rc" -eq 124 ] && echo "FAIL $where: over $LIMIT_S s (a runnable doc command must finish in seconds): $cmd" ||
        echo "FAIL $where: exit $rc: $cmd"
      tail -5 "$tmp/out" | sed 's/^/     /'
    fi
  done < <(commands "$doc")
done
[ "$vrl_commands" -gt 0 ] || { echo 'FAIL no vrl commands in ```sh blocks of README.md or docs/*.md'; exit 1; }
finish
