#!/usr/bin/env bash
# test_cli_fuzz.sh: a seeded, bounded run of odd numbers and odd paths through every `vrl`
# subcommand. Each case is one flag given an odd value in an otherwise small, valid command;
# it must end by itself (10 s), with no signal and no sanitizer report (in build-asan/ this
# runs under AddressSanitizer + UBSan): a refused value is fine, a crash or a hang is not.
# Numeric flags come first (the valid base flags after them win, so a huge but legal value
# cannot start a long run); path flags come last (they replace the base's).
# usage: test_cli_fuzz.sh PATH/TO/vrl [SEED [SECONDS]]
set -u
VRL=$1 SEED=${2:-1} SECONDS_MAX=${3:-20}
. "$(dirname "$0")/cli_test_lib.sh"
RANDOM=$SEED
tok="$(dirname "$0")/fixtures/tiny_tokenizer.json"

# fixtures: a run, text, a byte-level data folder, and odd files
$VRL train --quiet --model tiny --batch 2 --seq 16 --steps 2 --out "$tmp/run" 2>/dev/null || { echo "FAIL base run"; exit 1; }
head -c 20000 /dev/urandom | base64 >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null 2>&1
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
head -c 3000 /dev/urandom >"$tmp/garbage"
: >"$tmp/empty"
long=$(printf 'x%.0s' $(seq 5000))

numbers=("" " 1" "1 " "+1" "-1" "0" "1x" "0x10" "1e3" "3.5" "-0" "nan" "inf" "-inf" "1e309" "1e-400"
  "2147483648" "-2147483649" "9223372036854775807" "9223372036854775808" "18446744073709551615"
  "18446744073709551616" "1152921504606846976" "99999999999999999999999999" "," "1,2" "=")
paths=("" "$tmp/fifo" "/dev/zero" "/dev/null" "$tmp/dir" "$tmp/nope" "$tmp/garbage" "$tmp/empty"
  "$tmp/a'b\"c" "\$(touch $tmp/PWNED)" "$tmp/$long" "-" "$tmp/run" "$tmp/run/config.json")

# subcommand | numeric flags | path flags | base arguments
cases=(
  "train|--steps --batch --seq --accum --lr --lr-end --warmup --decay-end --schedule-offset --wd --clip --seed --eval-every --eval-batches --save-every --synthetic-tokens --threads|--data --val-data --model --resume|--model tiny --batch 2 --seq 16 --steps 2 --accum 1 --threads 1 --synthetic-tokens 4096 --eval-batches 1 --out $tmp/t"
  "info|--kv-heads --seq|--model|--model tiny --kv-cache --seq 16"
  "tokenize|--tokenizer|--tokenizer|--tokenizer $tok hello"
  "data tokenize|--chunk --threads --shard-chunks --eos|--in --tokenizer|--in $tmp/dir --out $tmp/dt --tokenizer $tok --chunk 16 --threads 1 --shard-chunks 64"
  "data select|--scale --seed --threads --tokens|--in --tokenizer|--in $tmp/dir --out $tmp/ds --tokenizer $tok --threads 1"
  "data inspect|--chunk --n|--in --tokenizer|--in $tmp/bytes/train.bin --n 4"
  "data bytes|--val-fraction|--in|--in $tmp/text.txt --out $tmp/db"
  "data reorganize|--in|--in|--in $tmp/dir --out $tmp/dr"
  "eval|--limit --seq --batch|--ckpt --tokenizer --data --tokens --text|--ckpt $tmp/run --tokenizer $tok --tasks none --limit 1 --seq 16 --batch 2 --out $tmp/ev.json --overwrite"
  "generate|--max-new --top-k --top-p --temperature --seed|--ckpt --tokenizer|--ckpt $tmp/run --ids 1,2 --max-new 2"
  "analyze|--window --batches --batch --seq|--ckpt --data|--ckpt $tmp/run --metric entropy --batches 1 --batch 2 --seq 16 --out $tmp/an"
)

pick() { local -n arr=$1; echo "${arr[RANDOM % ${#arr[@]}]}"; }

start=$(date +%s) n=0 bad=0
while [ $(( $(date +%s) - start )) -lt "$SECONDS_MAX" ]; do
  IFS='|' read -r sub nums pathflags base <<<"${cases[RANDOM % ${#cases[@]}]}"
  read -ra sub_a <<<"$sub"
  read -ra base_a <<<"$base"
  if [ $((RANDOM % 2)) -eq 0 ]; then
    read -ra flags <<<"$nums"; flag=${flags[RANDOM % ${#flags[@]}]}; value=$(pick numbers)
    args=("${sub_a[@]}" "$flag" "$value" "${base_a[@]}")
  else
    read -ra flags <<<"$pathflags"; flag=${flags[RANDOM % ${#flags[@]}]}; value=$(pick paths)
    args=("${sub_a[@]}" "${base_a[@]}" "$flag" "$value")
  fi
  rm -rf "$tmp/t" "$tmp/dt" "$tmp/ds" "$tmp/db" "$tmp/dr" "$tmp/an"
  timeout -k 2 10 "$VRL" "${args[@]}" >/dev/null 2>"$tmp/err" </dev/null
  rc=$? n=$((n + 1))
  what="vrl ${sub} ${flag} \"${value:0:60}\""
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then bad=$((bad + 1)); echo "FAIL hang (10 s): $what"
  elif [ $rc -gt 128 ]; then bad=$((bad + 1)); echo "FAIL signal $((rc - 128)): $what"; tail -3 "$tmp/err"
  elif grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$tmp/err"; then
    bad=$((bad + 1)); echo "FAIL sanitizer: $what"; grep -m3 -E "Sanitizer|runtime error" "$tmp/err"
  fi
done
[ -e "$tmp/PWNED" ] && { bad=$((bad + 1)); echo "FAIL a path ran a shell command"; }
echo "seed $SEED: $n commands in ${SECONDS_MAX} s"
check cli_fuzz_no_signal_report_or_hang test $bad -eq 0
finish
