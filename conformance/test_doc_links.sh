#!/usr/bin/env bash
# test_doc_links.sh: the links of README.md and docs/ and the code's citations of docs all resolve
# (conformance/test_doc_links.py), and the checker itself reports each kind of break: a missing
# file, a missing anchor, a missing cited file and a cited section no heading starts with (in
# the code and in a document's prose), a guide without its For/Answers lines, one over 400 lines and a README over 150.
# usage: test_doc_links.sh REPO_ROOT
set -u
ROOT=$1 HERE=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$HERE/test_doc_links.py" "$ROOT" || fail "broken links or citations in $ROOT (listed above)"

# a made repository with one break of each kind, and one link of each kind that is whole
mkdir -p "$tmp/docs/design" "$tmp/fast"
printf '# Top\n\nSee [guide](docs/guide.md#the-step-fastcu) and [gone](docs/none.md).\n' >"$tmp/README.md"
for i in $(seq 1 148); do echo "line $i"; done >>"$tmp/README.md" # 151 lines: one too many
printf '# Guide\n\n*For:* tests.\n*Answers:* nothing.\n\n## The step (`fast.cu`)\n\n## Twice\n\n## Twice\n\n[up](../README.md#top) [2nd](#twice-1) [bad](design/a.md#nowhere)\n' \
  >"$tmp/docs/guide.md"
# two guides of the wrong shape: one without its For/Answers lines, one over 400 lines
printf '# Bare\n\nNo opening lines.\n' >"$tmp/docs/bare.md"
{ printf '# Long\n\n*For:* tests.\n*Answers:* nothing.\n'; for i in $(seq 1 397); do echo "line $i"; done; } >"$tmp/docs/long.md"
printf '# A\n\n```sh\n[not a link](nowhere.md)\n```\nAs docs/guide.md, "Twice" says; docs/guide.md, "Nowhere" does not.\n' >"$tmp/docs/design/a.md"
printf '/* docs/guide.md, "The step": fine; docs/gone.md; docs/guide.md "The loop" */\n' >"$tmp/fast/x.cu"
out=$(python3 "$HERE/test_doc_links.py" "$tmp") && fail "the checker passed a made repository with 8 breaks"
echo "$out"
want=("README.md:3: link to docs/none.md: no such file"
  "docs/guide.md:12: link to design/a.md#nowhere: docs/design/a.md has no heading with anchor #nowhere"
  "docs/bare.md: a guide opens with a *For:* line and an *Answers:* line after its title"
  "docs/long.md: 401 lines, more than a guide's 400"
  "README.md: 151 lines, more than 150"
  "fast/x.cu:1: cites docs/gone.md: no such file"
  "fast/x.cu:1: cites docs/guide.md \"The loop\": no heading of docs/guide.md starts so"
  "docs/design/a.md:6: cites docs/guide.md \"Nowhere\": no heading of docs/guide.md starts so"
  "5 documents, 1 code files: 8 broken link(s) or citation(s)")
for w in "${want[@]}"; do
  grep -qxF "$w" <<<"$out" || fail "the checker did not report: $w"
done
[ "$(wc -l <<<"$out")" = 9 ] || fail "the checker reported more than the 8 breaks"
echo "PASS: links and citations resolve; the checker reports each kind of break"
