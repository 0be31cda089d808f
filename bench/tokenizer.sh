#!/bin/sh
# tokenizer.sh: vrl tokenizer throughput beside PyPI `tokenizers` on the same text, in
# one run. Usage (from the repository root, after building):
#   bench/tokenizer.sh [BUILD_DIR] [TOKENIZER.json] [TEXT_FILE]
# Defaults: build, ../shared/data GPT-NeoX-20B tokenizer, WikiText-2 raw test set.
set -eu
BUILD=${1:-build}
TOK=${2:-../shared/data/tokenizers/gpt-neox-20b.tokenizer.json}
TEXT=${3:-../shared/data/corpora/wikitext-2-raw/wiki.test.raw}
echo "text: $TEXT ($(wc -c < "$TEXT") bytes), tokenizer: $TOK"
"$BUILD/bin/bench_tokenizer" "$TOK" "$TEXT"
if python3 -c "import tokenizers" 2>/dev/null; then
    python3 "$(dirname "$0")/tokenizer_hf.py" "$TOK" "$TEXT"
else
    echo "PyPI tokenizers not installed (pip install tokenizers): no comparison"
fi
