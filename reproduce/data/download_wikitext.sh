#!/bin/sh
# download_wikitext.sh: fetch WikiText-2 and WikiText-103 (raw, v1) from Hugging Face
# (Salesforce/wikitext, parquet) and write plain wiki.{train,valid,test}.raw files.
# NEEDS INTERNET ACCESS: it cannot run on machines without network; run it where you
# have a connection. Needs curl and python3 with pyarrow (pip install pyarrow).
# Usage: download_wikitext.sh DEST
set -eu
DEST=${1:?usage: download_wikitext.sh DEST}
BASE=https://huggingface.co/datasets/Salesforce/wikitext/resolve/main
for set in wikitext-2-raw-v1 wikitext-103-raw-v1; do
    mkdir -p "$DEST/$set"
    for split in train validation test; do
        n=1
        [ "$set" = wikitext-103-raw-v1 ] && [ "$split" = train ] && n=2
        i=0
        while [ "$i" -lt "$n" ]; do
            f=$(printf '%s-%05d-of-%05d.parquet' "$split" "$i" "$n")
            [ -s "$DEST/$set/$f" ] || { curl -fL --retry 5 -o "$DEST/$set/$f.part" "$BASE/$set/$f" && mv "$DEST/$set/$f.part" "$DEST/$set/$f"; }
            i=$((i + 1))
        done
    done
    python3 - "$DEST/$set" <<'PY'
import glob, os, sys
import pyarrow.parquet as pq
d = sys.argv[1]
for split, name in (("train", "train"), ("validation", "valid"), ("test", "test")):
    with open(os.path.join(d, f"wiki.{name}.raw"), "w", encoding="utf-8") as out:
        for f in sorted(glob.glob(os.path.join(d, f"{split}-*.parquet"))):
            for line in pq.read_table(f).column("text").to_pylist():
                out.write(line)
PY
done
echo "done: $DEST"
