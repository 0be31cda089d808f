#!/bin/sh
# download_slimpajama.sh: fetch SlimPajama-627B chunk files from Hugging Face
# (cerebras/SlimPajama-627B) into the layout `vrl data reorganize` reads:
#   DEST/{train,validation,test}/chunkN/example_*.jsonl.zst
# NEEDS INTERNET ACCESS: it cannot run on machines without network (such as the CI
# and build machines of this project); run it where you have a connection.
# Usage: download_slimpajama.sh DEST [TRAIN_CHUNKS (1..10, default 1)] [FILES_PER_CHUNK (default all, 5912)]
# The full train set is ~900 GB compressed; one chunk is ~90 GB. formulas.md §3's 20B-token
# subset needs roughly the first 2-3 chunks.
set -eu
DEST=${1:?usage: download_slimpajama.sh DEST [TRAIN_CHUNKS] [FILES_PER_CHUNK]}
CHUNKS=${2:-1}
FILES=${3:-5912}
BASE=https://huggingface.co/datasets/cerebras/SlimPajama-627B/resolve/main
fetch() {  # URL OUT: resumable, atomic (tmp + rename)
    [ -s "$2" ] && return 0
    mkdir -p "$(dirname "$2")"
    curl -fL --retry 5 -C - -o "$2.part" "$1" && mv "$2.part" "$2"
}
for split in validation test; do
    for c in 1 2 3 4 5; do
        i=0
        while :; do   # held-out chunks hold a few hundred files; stop at the first missing one
            fetch "$BASE/$split/chunk$c/example_holdout_$i.jsonl.zst" "$DEST/$split/chunk$c/example_holdout_$i.jsonl.zst" 2>/dev/null || break
            i=$((i + 1))
        done
    done
done
c=1
while [ "$c" -le "$CHUNKS" ]; do
    i=0
    while [ "$i" -lt "$FILES" ]; do
        fetch "$BASE/train/chunk$c/example_train_$i.jsonl.zst" "$DEST/train/chunk$c/example_train_$i.jsonl.zst"
        i=$((i + 1))
    done
    c=$((c + 1))
done
echo "done: $DEST (next: vrl data reorganize --in $DEST --out DIR)"
