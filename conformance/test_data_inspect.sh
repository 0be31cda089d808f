#!/usr/bin/env bash
# test_data_inspect.sh: `vrl data inspect --entropy` gives the unigram entropy of known token
# frequencies: two ids equally often -> ln 2, four ids in proportions 1:1:2:4 -> 1.2130 nats
# (-(2 * 1/8 ln 1/8 + 1/4 ln 1/4 + 1/2 ln 1/2)), one id -> 0; and the validation tokens'
# cross-entropy under the train split's add-one unigram model: "ab" x 2048 in both splits
# -> -ln(2049 / (4096 + 256)) = 0.7533 nats.
# usage: test_data_inspect.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

# a byte corpus laid out as a shard directory: DIR/train/bytes-00000.bin (the first half),
# DIR/validation/bytes-00000.bin (the second)
shards() {
  local name=$1 text=$2
  printf '%s' "$text" >"$tmp/$name.txt"
  $VRL data bytes --in "$tmp/$name.txt" --out "$tmp/$name.bytes" --val-fraction 0.5 >/dev/null 2>&1 || return 1
  mkdir -p "$tmp/$name/train" "$tmp/$name/validation" &&
    cp "$tmp/$name.bytes/train.bin" "$tmp/$name/train/bytes-00000.bin" &&
    cp "$tmp/$name.bytes/val.bin" "$tmp/$name/validation/bytes-00000.bin"
}
repeat() { local i; for ((i = 0; i < $2; i++)); do printf '%s' "$1"; done; }

shards two "$(repeat ab 4096)" || { echo "FAIL data bytes"; exit 1; }
shards four "$(repeat abccdddd 1024)" || { echo "FAIL data bytes"; exit 1; }
shards one "$(repeat a 8192)" || { echo "FAIL data bytes"; exit 1; }
entropy() { $VRL data inspect --in "$tmp/$1" --entropy | sed -n "s/^train *$2 .*unigram entropy \([0-9.]*\) nats.*/\1/p"; }
check two_ids_ln2 test "$(entropy two bytes)" = 0.6931
check split_line_ln2 test "$(entropy two '(all)')" = 0.6931
check four_ids test "$(entropy four bytes)" = 1.2130
check one_id_zero test "$(entropy one bytes)" = 0.0000
check validation_under_train test "$($VRL data inspect --in "$tmp/two" --entropy |
  sed -n 's/^validation *bytes .*, \([0-9.]*\) under train.s$/\1/p')" = 0.7533
expect_error entropy_needs_dir "needs a directory" $VRL data inspect --in "$tmp/two/train/bytes-00000.bin" --entropy

# --tokenizer-only: the byte tokenizer alone, the same file `data bytes` writes beside its shards;
# it encodes text as its bytes ("Hé!" is 72, 0xC3 0xA9, 33) and a JSONL corpus tokenized with it
# (--eos 0) holds each document's bytes followed by 0
check tokenizer_only_writes "$VRL" data bytes --tokenizer-only --out "$tmp/btok"
check tokenizer_only_same_file cmp "$tmp/btok/tokenizer.json" "$tmp/two.bytes/tokenizer.json"
check tokenizer_only_is_bytes test "$($VRL tokenize --tokenizer "$tmp/btok/tokenizer.json" "Hé!")" = "72 195 169 33"
expect_error tokenizer_only_takes_no_in "--tokenizer-only takes no --in" $VRL data bytes --tokenizer-only --in "$tmp/two.txt" --out "$tmp/x"
mkdir -p "$tmp/jsonl/train"
printf '{"text": "ab"}\n{"text": "cd"}\n' > "$tmp/jsonl/train/Dom.jsonl"
check jsonl_as_bytes "$VRL" data tokenize --in "$tmp/jsonl" --out "$tmp/jtok" --tokenizer "$tmp/btok/tokenizer.json" --chunk 3 --eos 0
# "ab" 0 "cd" 0 in 3-byte chunks: 97 98 0 | 99 100 0, stored as uint16 after the 64-byte header
check jsonl_bytes_then_eos test "$(od -An -tu2 -j64 "$tmp/jtok/train/Dom-00000.bin" | tr -s ' ' | sed 's/^ //')" = "97 98 0 99 100 0"
finish
