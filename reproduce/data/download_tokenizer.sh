#!/bin/sh
# download_tokenizer.sh: fetch the GPT-NeoX-20B tokenizer.json (the RedPajama-INCITE
# tokenizer of formulas.md §3) from Hugging Face (EleutherAI/gpt-neox-20b) and, for
# comparison, GPT-2's (openai-community/gpt2).
# NEEDS INTERNET ACCESS: it cannot run on machines without network; run it where you
# have a connection.
# Usage: download_tokenizer.sh DEST_DIR
set -eu
DEST=${1:?usage: download_tokenizer.sh DEST_DIR}
mkdir -p "$DEST"
get() {
    curl -fL --retry 5 -o "$2.part" "$1" && mv "$2.part" "$2"
}
get https://huggingface.co/EleutherAI/gpt-neox-20b/resolve/main/tokenizer.json "$DEST/gpt-neox-20b.tokenizer.json"
get https://huggingface.co/openai-community/gpt2/resolve/main/tokenizer.json "$DEST/gpt2.tokenizer.json"
# "Hello world" must give 12092 1533 with GPT-NeoX-20B:
echo "check: vrl tokenize --tokenizer $DEST/gpt-neox-20b.tokenizer.json 'Hello world'  ->  12092 1533"
