# lib.sh: what table5.sh, table1.sh, ablations.sh and figures.sh share (sourced, POSIX sh).
#
# One work folder per scale (default runs/reproduce-SCALE) holds the prepared data and
# every trained run, so the four scripts reuse each other's work: table1 and figures
# evaluate table5's models, ablations adds runs beside the same baseline. A step whose
# output is complete (a .done file) is not run again.
#
# Scales (docs/reproduce.md):
#   paper  the paper's settings (Table 3/4, formulas.md §2-3): 10,000 steps of 1024 x 2048
#          tokens, 8 GPUs x 32 sequences x 4 accumulation, through `mpirun -np 8`
#   small  one GPU, the same shape: 2,000 steps of 128 x 1024 tokens (hours)
#   tiny   this CPU, minutes: slimpajama-mini from ../shared/data, 64-token chunks,
#          models of 4-8 layers at d 32-48 with the real 50277-token vocabulary
# Numbers a run produces are the run's; the paper's sit beside them, always labelled.

REPRO_ROOT=$(cd "$(dirname "$0")/.." && pwd)

repro_usage() {
    cat <<EOF
usage: reproduce/$REPRO_NAME.sh [--scale paper|small|tiny] [--dry-run] [--work DIR]
                                [--results DIR] [--build DIR] [--shared DIR] [--tps N]
  --scale S      paper (8 GPUs via mpirun), small (1 GPU), tiny (this CPU) [tiny]
  --dry-run      print the plan: every command, tokens, steps and estimated time
  --work DIR     data and runs, shared by the four scripts [runs/reproduce-SCALE]
  --results DIR  where the table goes [results]
  --build DIR    vrl build folder [build]
  --shared DIR   real data (tokenizer, slimpajama-mini, eval sets) [../shared/data]
  --tps N        tokens/s for the time estimate instead of measuring one here
EOF
}

# repro_init NAME "$@": parse the flags and set every setting of the scale.
repro_init() {
    REPRO_NAME=$1
    shift
    SCALE=tiny DRY=0 WORK="" RESULTS=$REPRO_ROOT/results BUILD=$REPRO_ROOT/build
    SHARED=$REPRO_ROOT/../shared/data GIVEN_TPS=""
    while [ $# -gt 0 ]; do
        case $1 in
        --scale) SCALE=${2:?--scale needs a value}; shift ;;
        --dry-run) DRY=1 ;;
        --work) WORK=${2:?--work needs a folder}; shift ;;
        --results) RESULTS=${2:?--results needs a folder}; shift ;;
        --build) BUILD=${2:?--build needs a folder}; shift ;;
        --shared) SHARED=${2:?--shared needs a folder}; shift ;;
        --tps) GIVEN_TPS=${2:?--tps needs a number}; shift ;;
        -h|--help) repro_usage; exit 0 ;;
        *) echo "$REPRO_NAME.sh: unknown flag $1" >&2; repro_usage >&2; exit 2 ;;
        esac
        shift
    done
    WORK=${WORK:-$REPRO_ROOT/runs/reproduce-$SCALE}
    VRL=$BUILD/bin/vrl
    TOK=$SHARED/tokenizers/gpt-neox-20b.tokenizer.json
    SEED=1337 LR=6e-4 LR_END=6e-5 WARMUP=120
    case $SCALE in
    paper)  # Table 3/4: 10k steps, 2M-token batches of 1024 x 2048, 8 GPUs x 32 x accumulation 4
        GPUS=8 SEQ=2048 MICRO=32 ACCUM=4 STEPS=10000 DEVICE=cuda LAUNCH="mpirun -np 8"
        SIZES="82M 180M 468M" DATA_SCALE=1 EVAL_LIMIT=0 TASK_LIMIT=0 EVAL_BATCH=32 EVAL_EVERY=500 SAVE_EVERY=1000
        ANALYSIS_BATCHES=250 ANALYSIS_BATCH=4 WINDOW=100 ;;  # 1,000 sequences, as Sec. 4.1.3
    small)  # one GPU: 2,000 steps of 128 x 1024 tokens on a 2% selection (400M tokens)
        GPUS=1 SEQ=1024 MICRO=32 ACCUM=4 STEPS=2000 DEVICE=cuda LAUNCH=""
        SIZES="82M 180M 468M" DATA_SCALE=0.02 EVAL_LIMIT=500 TASK_LIMIT=500 EVAL_BATCH=32 EVAL_EVERY=200 SAVE_EVERY=500
        ANALYSIS_BATCHES=64 ANALYSIS_BATCH=4 WINDOW=100 ;;
    tiny)   # this CPU: minutes; learning rate raised for so few steps
        GPUS=1 SEQ=64 MICRO=4 ACCUM=1 STEPS=${TINY_STEPS:-40} DEVICE=cpu LAUNCH=""
        SIZES="tiny-s tiny-m tiny-l" DATA_SCALE=0.0001 EVAL_LIMIT=${TINY_EVAL_LIMIT:-40} TASK_LIMIT=${TINY_TASK_LIMIT:-10} EVAL_BATCH=8 EVAL_EVERY=0 SAVE_EVERY=0
        ANALYSIS_BATCHES=2 ANALYSIS_BATCH=4 WINDOW=5 LR=3e-3 LR_END=3e-4 WARMUP=4 ;;
    *) echo "$REPRO_NAME.sh: --scale must be paper, small or tiny (not \"$SCALE\")" >&2; exit 2 ;;
    esac
    GLOBAL=$((MICRO * ACCUM * GPUS))               # sequences per optimizer step
    TOKENS=$((STEPS * GLOBAL * SEQ))               # training tokens per run
    DATA=$WORK/data
    RUNS=$WORK/runs
    PLAN_TOKENS=0
    PLAN_RUNS=""
    if [ "$DRY" = 0 ]; then
        [ -x "$VRL" ] || { echo "$REPRO_NAME.sh: $VRL not built (bash scripts/build.sh)" >&2; exit 1; }
        if [ "$SCALE" = tiny ]; then
            for f in "$TOK" "$SHARED/corpora/slimpajama-mini" "$SHARED/eval" "$SHARED/corpora/wikitext-2-raw/wiki.test.raw"; do
                [ -e "$f" ] || { echo "$REPRO_NAME.sh: $f is missing (real data lives in ../shared/data)" >&2; exit 1; }
            done
        fi
        mkdir -p "$WORK" "$RUNS" "$RESULTS"
    fi
    echo "== $REPRO_NAME --scale $SCALE$( [ "$DRY" = 1 ] && echo ' (dry run: nothing is executed)')"
    echo "   $STEPS steps x $GLOBAL sequences x $SEQ tokens = $(repro_commas $TOKENS) tokens per run" \
        "($GPUS x $MICRO per micro-batch x $ACCUM accumulation; lr $LR -> $LR_END cosine, warm-up $WARMUP)"
    if [ "$SCALE" = paper ]; then
        echo "   per-rank batch = $GLOBAL / $GPUS ranks / $ACCUM accumulation = $MICRO sequences; sizes $SIZES (Table 4);"
        echo "   warm-up 120 as Table 4 and the authors' code (Sec. 4.1.1's text says 1,200); data: the formulas.md §3"
        echo "   20B-token SlimPajama selection (CC 10B, C4 4B, GitHub 2B, 1B each for the other four), 2048-token chunks"
    fi
}

repro_commas() { printf '%s' "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }

# repro_do CMD...: print it; run it unless dry.
repro_do() {
    echo "+ $*"
    [ "$DRY" = 1 ] || "$@"
}

# The model of size S for this scale: a preset name, or a config file for tiny sizes and GQA.
# repro_model SIZE [KV_DIVISOR]
repro_model() {
    size=$1 kvdiv=${2:-1}
    case $size in
    tiny-s) set -- 4 2 32 112 ;;   # layers heads hidden ffn (Table 4: 82M is 8 8 512 1792)
    tiny-m) set -- 6 2 32 112 ;;
    tiny-l) set -- 8 4 48 168 ;;
    82M) set -- 8 8 512 1792 ;;     # Table 4
    180M) set -- 12 12 768 2688 ;;
    468M) set -- 24 16 1024 3584 ;;
    *) echo "$REPRO_NAME.sh: unknown size $size" >&2; exit 2 ;;
    esac
    case $size in tiny-*) ;; *) [ "$kvdiv" = 1 ] && { echo "$size"; return; } ;; esac
    f=$WORK/configs/$size-kv$kvdiv.json
    if [ "$DRY" = 0 ] && [ ! -f "$f" ]; then
        mkdir -p "$WORK/configs"
        maxpos=$SEQ
        cat > "$f" <<JSON
{"model_type": "llama", "num_hidden_layers": $1, "num_attention_heads": $2, "num_key_value_heads": $(($2 / kvdiv)),
 "hidden_size": $3, "intermediate_size": $4, "vocab_size": 50277, "max_position_embeddings": $maxpos,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}
JSON
    fi
    echo "$f"
}

# repro_layers SIZE: the number of layers (for ablations that name layers).
repro_layers() {
    case $1 in tiny-s) echo 4 ;; tiny-m) echo 6 ;; tiny-l) echo 8 ;; 82M) echo 8 ;; 180M) echo 12 ;; 468M) echo 24 ;; esac
}

# repro_data: SlimPajama -> per-domain JSONL -> seeded selection -> 2048-token (tiny: 64) shards.
repro_data() {
    [ -f "$DATA/.done" ] && { echo "   data: $DATA (prepared earlier)"; return 0; }
    threads=$( [ "$SCALE" = tiny ] && echo 2 || echo 16 )
    if [ "$SCALE" = tiny ]; then
        raw=$SHARED/corpora/slimpajama-mini
    else
        raw=$DATA/raw
        # one train chunk of SlimPajama-627B (~63B tokens) holds every domain's budget
        repro_do sh "$REPRO_ROOT/reproduce/data/download_slimpajama.sh" "$raw" 1
    fi
    [ "$DRY" = 1 ] || rm -rf "$DATA/reorg" "$DATA/select" "$DATA/tok"
    repro_do "$VRL" data reorganize --in "$raw" --out "$DATA/reorg"
    repro_do "$VRL" data select --in "$DATA/reorg" --out "$DATA/select" --tokenizer "$TOK" --scale "$DATA_SCALE" \
        --seed "$SEED" --threads "$threads"
    chunk=$( [ "$SCALE" = tiny ] && echo 64 || echo 2048 )
    repro_do "$VRL" data tokenize --in "$DATA/select" --out "$DATA/tok" --tokenizer "$TOK" --chunk "$chunk" \
        --threads "$threads"
    [ "$DRY" = 1 ] || touch "$DATA/.done"
}

# repro_train NAME SIZE VARIANT [KV_DIVISOR]: one training run into $RUNS/NAME (skipped when done).
repro_train() {
    name=$1 size=$2 variant=$3 kvdiv=${4:-1}
    model=$(repro_model "$size" "$kvdiv")
    PLAN_RUNS="$PLAN_RUNS $size"
    PLAN_TOKENS=$((PLAN_TOKENS + TOKENS))
    [ -f "$RUNS/$name/.done" ] && { echo "   train $name: done earlier ($RUNS/$name)"; return 0; }
    [ "$DRY" = 1 ] || rm -rf "${RUNS:?}/$name"
    # shellcheck disable=SC2086  # LAUNCH is a command prefix ("" or "mpirun -np 8")
    repro_do $LAUNCH "$VRL" train --model "$model" --variant "$variant" --device "$DEVICE" --data "$DATA/tok" \
        --steps "$STEPS" --batch "$MICRO" --accum "$ACCUM" --seq "$SEQ" --lr "$LR" --lr-end "$LR_END" \
        --warmup "$WARMUP" --schedule cosine --wd 0.1 --clip 1.0 --seed "$SEED" --eval-every "$EVAL_EVERY" \
        --eval-batches 4 --save-every "$SAVE_EVERY" --quiet --out "$RUNS/$name"
    [ "$DRY" = 1 ] || touch "$RUNS/$name/.done"
}

# repro_train_all "NAME SIZE VARIANT [KVDIV]" ...: tiny runs two at a time (2 cores, one BLAS
# thread each); GPU runs one after another.
repro_train_all() {
    if [ "$SCALE" != tiny ] || [ "$DRY" = 1 ]; then
        for r in "$@"; do
            # shellcheck disable=SC2086
            repro_train $r
        done
        return 0
    fi
    export OPENBLAS_NUM_THREADS=1
    pending=""
    for r in "$@"; do
        # shellcheck disable=SC2086
        set -- $r
        log=$WORK/train-$1.log
        ( repro_train "$@" > "$log" 2>&1 || { echo "$REPRO_NAME.sh: training $1 failed:" >&2; tail -3 "$log" >&2; exit 1; } ) &
        pending="$pending $!"
        if [ "$(echo $pending | wc -w)" -ge 2 ]; then
            for p in $pending; do wait "$p" || exit 1; done
            pending=""
        fi
    done
    for p in $pending; do wait "$p" || exit 1; done
}

# repro_eval NAME KIND: KIND domains (per-domain validation loss) or downstream (WikiText-2
# perplexity and the zero-shot tasks). Writes $RUNS/NAME/eval-KIND.json.
repro_eval() {
    name=$1 kind=$2
    out=$RUNS/$name/eval-$kind.json
    [ -f "$out" ] && { echo "   eval $name $kind: done earlier"; return 0; }
    limit=$( [ "$EVAL_LIMIT" = 0 ] && echo "" || echo "--limit $EVAL_LIMIT" )
    [ "$kind" = domains ] || limit=$( [ "$TASK_LIMIT" = 0 ] && echo "" || echo "--limit $TASK_LIMIT" )
    if [ "$kind" = domains ]; then
        # shellcheck disable=SC2086
        repro_do "$VRL" eval --ckpt "$RUNS/$name" --data "$DATA/tok" --tasks none $limit --seq "$SEQ" --batch "$EVAL_BATCH"
    else
        wiki=$SHARED/corpora/wikitext-2-raw/wiki.test.raw
        if [ "$SCALE" = tiny ]; then  # the first article: WikiText windows dominate CPU time
            [ "$DRY" = 1 ] || awk '/^ = [^=]/ { n++ } n <= 1' "$wiki" > "$WORK/wiki.test.head.raw"
            wiki=$WORK/wiki.test.head.raw
        fi
        # shellcheck disable=SC2086
        repro_do "$VRL" eval --ckpt "$RUNS/$name" --tokenizer "$TOK" --eval-dir "$SHARED/eval" --wikitext "$wiki" \
            --tasks all $limit --seq "$SEQ" --batch "$EVAL_BATCH"
    fi
    [ "$DRY" = 1 ] || mv "$RUNS/$name/eval.json" "$out"
}

# repro_estimate: tokens/s on this machine (measured with a few steps of the plan's smallest
# model, or given with --tps) and the time the plan's training takes at that rate.
repro_estimate() {
    [ "$DRY" = 1 ] || return 0
    size=$(echo $PLAN_RUNS | cut -d' ' -f1)
    if [ -n "$GIVEN_TPS" ]; then
        tps=$GIVEN_TPS how="given with --tps"
    else
        dev=cpu
        command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1 && dev=$DEVICE
        tmp=$(mktemp -d)
        mseq=$( [ "$SEQ" -gt 128 ] && echo 128 || echo "$SEQ" )
        mkdir -p "$tmp/configs"
        model=$(WORK=$tmp; DRY=0; repro_model "$size")
        mb=$( [ "$dev" = "$DEVICE" ] && echo "$MICRO" || echo 1 )
        # two runs, 1 and 4 steps: the difference is 3 steps without the start-up cost
        for n in 1 4; do
            start=$(date +%s.%N)
            OPENBLAS_NUM_THREADS=$(nproc) "$VRL" train --model "$model" --device "$dev" --steps $n --batch "$mb" \
                --seq "$mseq" --warmup 1 --eval-every 0 --eval-batches 1 --save-every 0 --quiet --out "$tmp/run$n" \
                > "$tmp/log" 2>&1 || { echo "   (could not measure: $(tail -1 "$tmp/log")); use --tps N"; rm -rf "$tmp"; return 0; }
            end=$(date +%s.%N)
            eval "t$n=\$(awk -v a=\"\$start\" -v b=\"\$end\" 'BEGIN { print b - a }')"
        done
        tps=$(awk -v t="$mseq" -v b="$mb" -v x="$t1" -v y="$t4" 'BEGIN { d = y - x; if (d <= 0) d = 1e-3; printf "%.0f", 3 * b * t / d }')
        how="measured here: 4 steps minus 1 step of $size, $mb x $mseq tokens, on $dev"
        [ "$dev" = "$DEVICE" ] || how="$how; no GPU here, so this is a CPU figure: a GPU is far faster"
        rm -rf "$tmp"
    fi
    echo "== estimate: $(repro_commas $PLAN_TOKENS) training tokens in $(echo $PLAN_RUNS | wc -w) runs;" \
        "at $(repro_commas "$tps") tokens/s ($how):" \
        "$(awk -v n="$PLAN_TOKENS" -v r="$tps" 'BEGIN { s = n / r; if (s < 3600) printf "%.1f minutes", s / 60; else if (s < 172800) printf "%.1f hours", s / 3600; else printf "%.1f days", s / 86400 }')" \
        "(larger models of the plan are slower per token; evaluation and data preparation not included)"
}

# repro_header TITLE: the results file's head: scale, commit, machine, date.
repro_header() {
    commit=$(git -C "$REPRO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$REPRO_ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
    cat <<EOF
# $1 — scale $SCALE (a run of vrl, not the paper's result)

- scale: $SCALE ($STEPS steps x $GLOBAL x $SEQ tokens = $(repro_commas $TOKENS) tokens per run, device $DEVICE)
- commit: $commit$dirty
- machine: $(uname -n), ${cpu:-unknown CPU}, $(nproc) cores
- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- runs: $RUNS
- command: reproduce/$REPRO_NAME.sh --scale $SCALE

"paper" columns are the paper's published numbers; "run" columns come from this run's files
(eval-*.json in each run folder); "diff" = run − paper.
EOF
}

# repro_json FILE JQ_EXPR: one number from a run's JSON file, to 4 decimals ("—" when absent).
repro_json() {
    jv=$(jq -r "($2) // \"—\"" "$1" 2>/dev/null || true)
    echo "${jv:-—}" | awk '{ if ($1 + 0 == $1 && $1 != "") printf "%.4f\n", $1; else print "—" }'
}

# repro_diff RUN PAPER: run − paper to 4 places, or — when either is missing.
repro_diff() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "—" || b == "—" || a == "" || b == "") print "—"; else printf "%+.4f", a - b }'; }
