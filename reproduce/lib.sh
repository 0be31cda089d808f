# lib.sh: what table5.sh, table1.sh, ablations.sh and figures.sh share (sourced, POSIX sh).
#
# One work folder per scale (default runs/reproduce-SCALE) holds the prepared data and
# every trained run, so the four scripts reuse each other's work: table1 and figures
# evaluate table5's models, ablations adds runs beside the same baseline. A step whose
# output is complete (a .done file) is not run again.
#
# Scales (docs/reproduce.md):
#   paper  the paper's settings (Table 3/4, formulas.md §2-3): 10,000 steps of 1024 x 2048
#          tokens, 8 GPUs x 32 sequences x 4 accumulation, through `mpirun -np 8` or `srun`
#   small  one GPU, the same shape: 2,000 steps of 128 x 1024 tokens (hours)
#   bytes  this CPU, about 1.5 hours: the experiment designed from pilots to answer Table 5's
#          question here (docs/results/reproduction.md, "The CPU-scale experiment"): slimpajama-mini whole
#          as bytes (vocabulary 256, the 7 domains kept), 256-token chunks, one 8-layer model at
#          d 64 whose FLOPs go into its layers, 32 seeds (80% power at half the paper's effect);
#          SVFormer beside ResFormer and a Transformer trained twice as long (the tokens-to-
#          equal-loss ratio) with the first 6
#   cpu    this CPU, hours: slimpajama-mini whole, 128-token chunks, models of 4-8 layers at
#          d 64-128 with the real vocabulary, 3 seeds each: a pipeline demonstration (the
#          embedding holds most parameters; it has no power to answer the question)
#   tiny   this CPU, minutes: slimpajama-mini from ../shared/data, 64-token chunks,
#          models of 4-8 layers at d 32-48 with the real 50277-token vocabulary (a smoke test)
# Numbers a run produces are the run's; the paper's sit beside them, always labelled.
# The GPU scales check what they need first (preflight.sh) and refuse before any download.

REPRO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$REPRO_ROOT/reproduce/preflight.sh"
. "$REPRO_ROOT/reproduce/cost.sh"

repro_usage() {
    cat <<EOF
usage: reproduce/$REPRO_NAME.sh [--scale paper|small|bytes|cpu|tiny] [--dry-run] [--resume] [--work DIR]
                                [--results DIR] [--build DIR] [--shared DIR] [--tps N]
                                [--launcher mpirun|srun] [--seeds N|S1,S2,...] [--device D]
  --scale S      paper (8 GPUs via mpirun or srun), small (1 GPU), bytes (this CPU, the
                 powered experiment, ~1.5 hours), cpu (this CPU, a pipeline demonstration),
                 tiny (this CPU, minutes) [tiny]
  --seeds N|S,S  N seeds 1337, 1338, ... (a count), or the listed seeds (a comma makes a
                 list: 4242,9001; one seed: 4242,). The default seed 1337's run keeps its
                 plain name wherever it stands, every other is NAME-seedS [32 at scale bytes,
                 3 at cpu, else 1]
  --device D     where the runs train and evaluate: cpu (ref/), cuda, or cuda-cpu (fast/'s
                 kernels on this CPU, docs/fast.md) [cuda at paper and small, else cpu];
                 cuda-cpu and cpu only at the CPU scales. Another device than the scale's
                 keeps its runs apart: --work defaults to runs/reproduce-SCALE-DEVICE.
                 `vrl analyze` (figures.sh) runs on the reference either way
  --dry-run      print the plan: the preflight, every command, tokens, steps and the
                 estimated time of training and evaluation
  --resume       continue an interrupted table: finished runs and evaluations are kept
                 (as always), a run stopped after a checkpoint continues from it
                 (vrl train --resume) instead of starting again
  --launcher L   how the paper scale starts its 8 ranks [srun under SLURM, else mpirun]
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
    SHARED=$REPRO_ROOT/../shared/data GIVEN_TPS="" RESUME=0 LAUNCHER="" SEEDS_ARG="" DEVICE_ARG=""
    while [ $# -gt 0 ]; do
        case $1 in
        --scale) SCALE=${2:?--scale needs a value}; shift ;;
        --dry-run) DRY=1 ;;
        --resume) RESUME=1 ;;
        --launcher) LAUNCHER=${2:?--launcher needs mpirun or srun}; shift ;;
        --work) WORK=${2:?--work needs a folder}; shift ;;
        --results) RESULTS=${2:?--results needs a folder}; shift ;;
        --build) BUILD=${2:?--build needs a folder}; shift ;;
        --shared) SHARED=${2:?--shared needs a folder}; shift ;;
        --tps) GIVEN_TPS=${2:?--tps needs a number}; shift ;;
        --seeds) SEEDS_ARG=${2:?--seeds needs a count or a list of seeds}; shift ;;
        --device) DEVICE_ARG=${2:?--device needs cpu, cuda or cuda-cpu}; shift ;;
        -h|--help) repro_usage; exit 0 ;;
        *) echo "$REPRO_NAME.sh: unknown flag $1" >&2; repro_usage >&2; exit 2 ;;
        esac
        shift
    done
    VRL=$BUILD/bin/vrl
    TOK=$SHARED/tokenizers/gpt-neox-20b.tokenizer.json
    SEED=1337 LR=6e-4 LR_END=6e-5 WARMUP=120 VOCAB=50277 EOS="" EVAL_BATCHES=4 LONG=0 CURVE_EVERY=0 EXTRA_SEEDS=0
    case $SCALE in
    paper)  # Table 3/4: 10k steps, 2M-token batches of 1024 x 2048, 8 GPUs x 32 x accumulation 4
        GPUS=8 SEQ=2048 MICRO=32 ACCUM=4 STEPS=10000 DEVICE=cuda
        SIZES="82M 180M 468M" DATA_SCALE=1 EVAL_LIMIT=0 TASK_LIMIT=0 EVAL_BATCH=32 EVAL_EVERY=500 SAVE_EVERY=1000
        ANALYSIS_BATCHES=250 ANALYSIS_BATCH=4 WINDOW=100 ;;  # 1,000 sequences, as Sec. 4.1.3
    small)  # one GPU: 2,000 steps of 128 x 1024 tokens on a 2% selection (400M tokens)
        GPUS=1 SEQ=1024 MICRO=32 ACCUM=4 STEPS=2000 DEVICE=cuda LAUNCH=""
        SIZES="82M 180M 468M" DATA_SCALE=0.02 EVAL_LIMIT=500 TASK_LIMIT=500 EVAL_BATCH=32 EVAL_EVERY=200 SAVE_EVERY=500
        ANALYSIS_BATCHES=64 ANALYSIS_BATCH=4 WINDOW=100 ;;
    cpu)    # this CPU, hours (docs/reproduce.md): 400 steps of 8 x 128 tokens, two runs at a time;
            # the whole corpus, validation capped at 200 chunks per domain; lr as tiny
        GPUS=1 SEQ=128 MICRO=8 ACCUM=1 STEPS=${CPU_STEPS:-400} DEVICE=cpu LAUNCH=""
        SIZES="cpu-s cpu-m cpu-l" DATA_SCALE=1 EVAL_LIMIT=200 TASK_LIMIT=100 EVAL_BATCH=16 EVAL_EVERY=0 SAVE_EVERY=0
        ANALYSIS_BATCHES=8 ANALYSIS_BATCH=4 WINDOW=20 LR=3e-3 LR_END=3e-4 WARMUP=20 SEEDS_ARG=${SEEDS_ARG:-3} ;;
    bytes)  # this CPU, ~1.5 hours (docs/results/reproduction.md, "The CPU-scale experiment", from pilots):
            # 150 steps of 16 x 256 bytes (614,400 tokens, 1.2 per parameter), two runs at a time;
            # in-training validation at the end on 2 batches per domain, and `vrl eval` on the
            # first 200 chunks per domain; for the tokens-to-equal-loss ratio the Transformer of
            # the first EXTRA_SEEDS seeds also trains LONG times as long, validated every
            # CURVE_EVERY steps; SVFormer trains with those seeds
        GPUS=1 SEQ=256 MICRO=16 ACCUM=1 STEPS=${BYTES_STEPS:-150} DEVICE=cpu LAUNCH=""
        SIZES="b8" DATA_SCALE=1 EVAL_LIMIT=200 TASK_LIMIT=100 EVAL_BATCH=16 EVAL_EVERY=0 SAVE_EVERY=0 EVAL_BATCHES=2
        ANALYSIS_BATCHES=8 ANALYSIS_BATCH=4 WINDOW=20 LR=3e-3 LR_END=3e-4 WARMUP=20 VOCAB=256 EOS=0 LONG=2
        CURVE_EVERY=25 EXTRA_SEEDS=${BYTES_EXTRA_SEEDS:-6} SEEDS_ARG=${SEEDS_ARG:-32} ;;
    tiny)   # this CPU: minutes; learning rate raised for so few steps
        GPUS=1 SEQ=64 MICRO=4 ACCUM=1 STEPS=${TINY_STEPS:-40} DEVICE=cpu LAUNCH=""
        SIZES="tiny-s tiny-m tiny-l" DATA_SCALE=0.0001 EVAL_LIMIT=${TINY_EVAL_LIMIT:-40} TASK_LIMIT=${TINY_TASK_LIMIT:-10} EVAL_BATCH=8 EVAL_EVERY=0 SAVE_EVERY=0
        ANALYSIS_BATCHES=2 ANALYSIS_BATCH=4 WINDOW=5 LR=3e-3 LR_END=3e-4 WARMUP=4 ;;
    *) echo "$REPRO_NAME.sh: --scale must be paper, small, bytes, cpu or tiny (not \"$SCALE\")" >&2; exit 2 ;;
    esac
    case $EXTRA_SEEDS in ''|*[!0-9]*) echo "$REPRO_NAME.sh: BYTES_EXTRA_SEEDS must be a count, 0 or more (not \"$EXTRA_SEEDS\")" >&2; exit 2 ;; esac
    # --device: another device than the scale's trains (and evaluates) in a work folder of its own
    work_default=$REPRO_ROOT/runs/reproduce-$SCALE
    if [ -n "$DEVICE_ARG" ] && [ "$DEVICE_ARG" != "$DEVICE" ]; then
        case $DEVICE_ARG in
        cuda) ;;
        cpu|cuda-cpu) repro_local || { echo "$REPRO_NAME.sh: --device $DEVICE_ARG: scale $SCALE runs on GPUs (cuda); $DEVICE_ARG only at tiny, cpu and bytes" >&2; exit 2; } ;;
        *) echo "$REPRO_NAME.sh: --device must be cpu, cuda or cuda-cpu (not \"$DEVICE_ARG\")" >&2; exit 2 ;;
        esac
        DEVICE=$DEVICE_ARG
        work_default=$work_default-$DEVICE
    fi
    WORK=${WORK:-$work_default}
    # the byte tokenizer is written with the data (repro_data); the text tokenizer is read as is
    [ "$VOCAB" = 256 ] && TOK=$WORK/data/bytes-tokenizer/tokenizer.json
    repro_seeds "${SEEDS_ARG:-1}"
    SEEDS_GIVEN=$( [ "$SEEDS" = "$SEED " ] || echo "$SEEDS" | tr ' ' ',' | sed 's/,$//')  # for the results header
    repro_launch
    GLOBAL=$((MICRO * ACCUM * GPUS))               # sequences per optimizer step
    TOKENS=$((STEPS * GLOBAL * SEQ))               # training tokens per run
    DATA=$WORK/data
    RUNS=$WORK/runs
    PLAN_RUNS=""
    if ! repro_local; then
        # before anything is downloaded, written or trained; a dry run shows the same lines
        found=$(repro_preflight)
        n=$(printf '%s\n' "$found" | grep -c 'missing:' || true)
        if [ "$DRY" = 0 ] && [ "$n" -gt 0 ]; then
            {
                echo "$REPRO_NAME.sh: --scale $SCALE refused before any download or training: $n thing$([ "$n" = 1 ] || echo s) missing here:"
                printf '%s\n' "$found"
                echo "$REPRO_NAME.sh: (--dry-run prints the plan and its cost without these)"
            } >&2
            exit 1
        fi
    fi
    if [ "$DRY" = 0 ]; then
        [ -x "$VRL" ] || { echo "$REPRO_NAME.sh: $VRL not built (bash scripts/build.sh)" >&2; exit 1; }
        if repro_local; then
            # (the byte tokenizer is written with the data)
            for f in $( [ "$VOCAB" = 256 ] || echo "$TOK" ) "$SHARED/corpora/slimpajama-mini" "$SHARED/eval" "$SHARED/corpora/wikitext-2-raw/wiki.test.raw"; do
                [ -e "$f" ] || { echo "$REPRO_NAME.sh: $f is missing (real data lives in ../shared/data)" >&2; exit 1; }
            done
        fi
        mkdir -p "$WORK" "$RUNS" "$RESULTS"
    fi
    echo "== $REPRO_NAME --scale $SCALE$( [ "$DRY" = 1 ] && echo ' (dry run: nothing is executed)')"
    echo "   $STEPS steps x $GLOBAL sequences x $SEQ tokens = $(repro_commas $TOKENS) tokens per run" \
        "($GPUS x $MICRO per micro-batch x $ACCUM accumulation; lr $LR -> $LR_END cosine, warm-up $WARMUP)"
    [ "$SEEDS" = "$SEED " ] || echo "   seeds: $SEEDS(initialisation and data order; the data selection keeps seed $SEED)"
    if ! repro_local && [ "$DRY" = 1 ]; then
        if [ "$n" -gt 0 ]; then
            echo "   preflight: $n thing$([ "$n" = 1 ] || echo s) missing here (a run here would refuse before any download):"
            printf '%s\n' "$found"
        else
            echo "   preflight: everything the plan needs is here"
        fi
    fi
    [ "$RESUME" = 1 ] && echo "   --resume: finished runs are kept, a run stopped after a checkpoint continues from it"
    if [ "$SCALE" = paper ]; then
        echo "   launch: $LAUNCH ($([ "$LAUNCHER" = srun ] && echo "SLURM: run it inside an allocation of 8 GPUs, e.g. salloc -N1 --gpus=8" || echo "Open MPI, one node of 8 GPUs; --bind-to none leaves each rank's threads free; --allow-run-as-root only as root"))"
        echo "   per-rank batch = $GLOBAL / $GPUS ranks / $ACCUM accumulation = $MICRO sequences; sizes $SIZES (Table 4);"
        echo "   warm-up 120 as Table 4 and the authors' code (Sec. 4.1.1's text says 1,200); data: the formulas.md §3"
        echo "   20B-token SlimPajama selection (CC 10B, C4 4B, GitHub 2B, 1B each for the other four), 2048-token chunks"
    fi
}

# repro_seeds ARG: SEEDS ("S1 S2 ... ", the order given) and NSEEDS from --seeds: a count N
# (1337 ... 1337 + N - 1, as before lists existed) or a comma-separated list of seeds.
# A count is at most 100; a seed a positive integer without leading zeros (its run name
# spells it as given) below 2^31, none twice; anything else is a one-line error.
repro_seeds() {
    arg=$1
    case $arg in
    *,*)
        SEEDS="" NSEEDS=0
        rest=${arg%,}  # "4242," is the list of one seed
        while :; do
            s=${rest%%,*}
            case $s in
            ''|*[!0-9]*|0*) echo "$REPRO_NAME.sh: --seeds \"$arg\": \"$s\" is not a positive integer seed" >&2; exit 2 ;;
            esac
            [ "${#s}" -le 10 ] && [ "$s" -le 2147483647 ] ||
                { echo "$REPRO_NAME.sh: --seeds \"$arg\": seed $s is above 2147483647" >&2; exit 2; }
            case " $SEEDS" in *" $s "*) echo "$REPRO_NAME.sh: --seeds \"$arg\": seed $s is given twice" >&2; exit 2 ;; esac
            SEEDS="$SEEDS$s " NSEEDS=$((NSEEDS + 1))
            [ "$rest" = "$s" ] && break
            rest=${rest#*,}
        done ;;
    *)
        case $arg in ''|*[!0-9]*|0*) echo "$REPRO_NAME.sh: --seeds must be a count (a positive integer) or a comma-separated list of seeds (not \"$arg\")" >&2; exit 2 ;; esac
        # a lone seed mistaken for a count would plan thousands of runs
        [ "${#arg}" -le 3 ] && [ "$arg" -le 100 ] ||
            { echo "$REPRO_NAME.sh: --seeds $arg: a count above 100 (the single seed $arg is written --seeds $arg,)" >&2; exit 2; }
        NSEEDS=$arg
        SEEDS=$(awk -v s="$SEED" -v n="$NSEEDS" 'BEGIN { for (i = 0; i < n; i++) printf "%d ", s + i }') ;;
    esac
    FIRST_SEED=${SEEDS%% *}
}

# repro_local: true at the scales that run on this CPU (tiny, cpu, bytes).
repro_local() { [ "$SCALE" = tiny ] || [ "$SCALE" = cpu ] || [ "$SCALE" = bytes ]; }

# repro_seed_name NAME SEED: the run folder's name for SEED: the default seed ($SEED, 1337)
# keeps NAME wherever it stands in --seeds, any other seed is NAME-seedSEED, so a run's folder
# names its seed whatever list it was trained in.
repro_seed_name() { [ "$2" = "$SEED" ] && echo "$1" || echo "$1-seed$2"; }

# repro_launch: LAUNCH, the prefix that starts the GPU ranks ("" for one process).
repro_launch() {
    LAUNCH=""
    [ "$GPUS" -gt 1 ] || return 0
    [ -n "$LAUNCHER" ] || LAUNCHER=$( [ -n "${SLURM_JOB_ID:-}" ] && echo srun || echo mpirun )
    case $LAUNCHER in
    mpirun)  # Open MPI binds each rank to one core by default, starving its threads; as root it
             # refuses to start unless told (docs/distributed.md)
        LAUNCH="mpirun -np $GPUS --bind-to none"
        [ "$(id -u)" != 0 ] || LAUNCH="$LAUNCH --allow-run-as-root" ;;
    srun) LAUNCH="srun --mpi=pmix --ntasks=$GPUS --cpu-bind=none" ;;
    *) echo "$REPRO_NAME.sh: --launcher must be mpirun or srun (not \"$LAUNCHER\")" >&2; exit 2 ;;
    esac
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
    # shellcheck disable=SC2046
    set -- $(repro_shape "$size")
    case $size in tiny-* | cpu-* | b8*) ;; *) [ "$kvdiv" = 1 ] && { echo "$size"; return; } ;; esac
    f=$WORK/configs/$size-kv$kvdiv.json
    if [ "$DRY" = 0 ] && [ ! -f "$f" ]; then
        mkdir -p "$WORK/configs"
        maxpos=$SEQ
        cat > "$f" <<JSON
{"model_type": "llama", "num_hidden_layers": $1, "num_attention_heads": $2, "num_key_value_heads": $(($2 / kvdiv)),
 "hidden_size": $3, "intermediate_size": $4, "vocab_size": $VOCAB, "max_position_embeddings": $maxpos,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}
JSON
    fi
    echo "$f"
}

# repro_shape SIZE: "layers heads hidden ffn".
repro_shape() {
    case $1 in
    tiny-s) echo 4 2 32 112 ;;   # (Table 4: 82M is 8 8 512 1792)
    tiny-m) echo 6 2 32 112 ;;
    tiny-l) echo 8 4 48 168 ;;
    cpu-s) echo 4 2 64 224 ;;    # FFN 3.5 d as Table 4; head_dim 32
    cpu-m) echo 6 3 96 336 ;;
    cpu-l) echo 8 4 128 448 ;;
    b8) echo 8 4 64 224 ;;       # bytes: 8 layers as the paper's 82M, head_dim 16
    b8-d48) echo 8 3 48 168 ;;   # bytes, the width family of table5_efficiency.sh (head_dim 16, FFN 3.5 d)
    b8-d96) echo 8 6 96 336 ;;
    82M) echo 8 8 512 1792 ;;     # Table 4
    180M) echo 12 12 768 2688 ;;
    468M) echo 24 16 1024 3584 ;;
    *) echo "$REPRO_NAME.sh: unknown size $1" >&2; exit 2 ;;
    esac
}

# repro_layers SIZE: the number of layers (for ablations that name layers).
repro_layers() { repro_shape "$1" | cut -d' ' -f1; }

# repro_params SIZE: parameters of the baseline model, as `vrl info` counts them: per layer
# Q, K, V, O, the SwiGLU FFN and two norms; embedding, head and the final norm.
repro_params() {
    # shellcheck disable=SC2046
    set -- $(repro_shape "$1")
    awk -v L="$1" -v d="$3" -v f="$4" -v V="$VOCAB" 'BEGIN { printf "%.0f", L * (4 * d * d + 3 * d * f + 2 * d) + 2 * d * V + d }'
}

# repro_data: SlimPajama -> per-domain JSONL -> seeded selection -> 2048-token (tiny: 64, cpu:
# 128) shards.
repro_data() {
    [ -f "$DATA/.done" ] && { echo "   data: $DATA (prepared earlier)"; return 0; }
    threads=$(repro_local && echo 2 || echo 16)
    if repro_local; then
        raw=$SHARED/corpora/slimpajama-mini
    else
        raw=$DATA/raw
        # one train chunk of SlimPajama-627B (~63B tokens) holds every domain's budget
        repro_do sh "$REPRO_ROOT/reproduce/data/download_slimpajama.sh" "$raw" 1
    fi
    [ "$DRY" = 1 ] || rm -rf "$DATA/reorg" "$DATA/select" "$DATA/tok"
    # bytes: the byte tokenizer (id b is the byte b; EOS the byte 0, which text never holds)
    [ "$VOCAB" = 256 ] && repro_do "$VRL" data bytes --tokenizer-only --out "${TOK%/tokenizer.json}"
    repro_do "$VRL" data reorganize --in "$raw" --out "$DATA/reorg"
    repro_do "$VRL" data select --in "$DATA/reorg" --out "$DATA/select" --tokenizer "$TOK" --scale "$DATA_SCALE" \
        --seed "$SEED" --threads "$threads"
    case $SCALE in tiny) chunk=64 ;; cpu | bytes) chunk=$SEQ ;; *) chunk=2048 ;; esac
    # shellcheck disable=SC2046 # --eos ID, or nothing for the tokenizer's own <|endoftext|>
    repro_do "$VRL" data tokenize --in "$DATA/select" --out "$DATA/tok" --tokenizer "$TOK" --chunk "$chunk" \
        --threads "$threads" $( [ -z "$EOS" ] || echo "--eos $EOS" )
    [ "$DRY" = 1 ] || touch "$DATA/.done"
}

# repro_train NAME SIZE VARIANT [KV_DIVISOR [SEED [STEPS [LR]]]]: one training run into $RUNS/NAME
# (skipped when done), with --seed SEED [$SEED] for STEPS steps [$STEPS] (the longer Transformer of
# the tokens-to-equal-loss ratio) at peak learning rate LR [$LR] (its end scaled with it: LR_END / LR
# x LR, as the lr grids of table5_efficiency.sh).
repro_train() {
    name=$1 size=$2 variant=$3 kvdiv=${4:-1} seed=${5:-$SEED} steps=${6:-$STEPS} lr=${7:-$LR}
    lr_end=$( [ "$lr" = "$LR" ] && echo "$LR_END" || awk -v a="$lr" -v b="$LR" -v e="$LR_END" 'BEGIN { if (a == a + 0) printf "%g", a * e / b; else printf "%s/%g", a, b / e }')  # a placeholder (a dry run's BEST...) stays one
    model=$(repro_model "$size" "$kvdiv")
    PLAN_RUNS="$PLAN_RUNS $size"
    [ -f "$RUNS/$name/.done" ] && { echo "   train $name: done earlier ($RUNS/$name)"; return 0; }
    if [ "$RESUME" = 1 ] && [ -e "$RUNS/$name/train_state.safetensors" ]; then
        # killed after its last save but before .done: nothing left to train
        last=$(readlink "$RUNS/$name/latest" 2>/dev/null | sed -n 's/.*step-0*\([0-9]\)/\1/p')
        if [ "$last" = "$steps" ]; then
            echo "   train $name: complete at step $steps ($RUNS/$name)"
            [ "$DRY" = 1 ] || touch "$RUNS/$name/.done"
            return 0
        fi
        repro_cost_add train "$name" "$size" $((TOKENS / STEPS * steps))  # counted whole: an upper bound
        # the run's own flags are in its folder; it continues from its last checkpoint
        # shellcheck disable=SC2086
        repro_do $LAUNCH "$VRL" train --resume "$RUNS/$name" --quiet
        [ "$DRY" = 1 ] || touch "$RUNS/$name/.done"
        return 0
    fi
    repro_cost_add train "$name" "$size" $((TOKENS / STEPS * steps))
    every=$EVAL_EVERY
    [ "$steps" = "$STEPS" ] || [ "$CURVE_EVERY" = 0 ] || every=$CURVE_EVERY  # the long run's curve
    [ "$DRY" = 1 ] || rm -rf "${RUNS:?}/$name"
    # shellcheck disable=SC2086  # LAUNCH is a command prefix ("", "mpirun -np 8 ...", "srun ...")
    repro_do $LAUNCH "$VRL" train --model "$model" --variant "$variant" --device "$DEVICE" --data "$DATA/tok" \
        --steps "$steps" --batch "$MICRO" --accum "$ACCUM" --seq "$SEQ" --lr "$lr" --lr-end "$lr_end" \
        --warmup "$WARMUP" $( [ "${SCHED_OFFSET:-0}" = 0 ] || echo "--schedule-offset $SCHED_OFFSET") --schedule cosine --wd 0.1 --clip 1.0 --seed "$seed" --eval-every "$every" \
        --eval-batches "$EVAL_BATCHES" --save-every "$SAVE_EVERY" --quiet --out "$RUNS/$name"
    [ "$DRY" = 1 ] || touch "$RUNS/$name/.done"
}

# repro_parallel FUNC "ARGS" ...: FUNC ARGS for each; on this CPU (tiny, cpu) two at a time, one
# thread each (2 cores; pairs, so give them in pairs of like cost), each into WORK/FUNC-NAME.log
# (NAME: the first of ARGS); on GPUs one after another.
repro_parallel() {
    func=$1
    shift
    if ! repro_local || [ "$DRY" = 1 ]; then
        for r in "$@"; do
            # shellcheck disable=SC2086
            $func $r
        done
        return 0
    fi
    export OPENBLAS_NUM_THREADS=1
    pending=""
    for r in "$@"; do
        # shellcheck disable=SC2086
        set -- $r
        log=$WORK/${func#repro_}-$(echo "$1" | tr : -).log
        ( $func "$@" > "$log" 2>&1 || { echo "$REPRO_NAME.sh: ${func#repro_} $1 failed:" >&2; tail -3 "$log" >&2; exit 1; } ) &
        pending="$pending $!"
        if [ "$(echo $pending | wc -w)" -ge 2 ]; then
            for p in $pending; do wait "$p" || exit 1; done
            pending=""
        fi
    done
    for p in $pending; do wait "$p" || exit 1; done
}

# repro_train_all "NAME SIZE VARIANT [KVDIV [SEED]]" ...: every training run (repro_parallel).
repro_train_all() { repro_parallel repro_train "$@"; }

# repro_eval_all KIND NAME ...: repro_eval NAME KIND for every run (repro_parallel).
repro_eval_all() {
    kind=$1
    shift
    set -- $(for n in "$@"; do echo "$n:$kind"; done)
    repro_parallel repro_eval_one "$@"
}
repro_eval_one() { repro_eval "${1%%:*}" "${1#*:}"; }

# repro_eval NAME KIND: KIND domains (per-domain validation loss) or downstream (WikiText-2
# perplexity and the zero-shot tasks). Writes $RUNS/NAME/eval-KIND.json.
repro_eval() {
    name=$1 kind=$2
    out=$RUNS/$name/eval-$kind.json
    [ -f "$out" ] && { echo "   eval $name $kind: done earlier"; return 0; }
    for eval_size in $SIZES; do case $name in *-"$eval_size" | *-"$eval_size"-seed*) break ;; esac; done  # the run's size
    repro_cost_add eval "$name-$kind" "$eval_size" "$(repro_eval_tokens "$kind")"
    # the GPU scales evaluate on the GPU: `vrl eval --device cuda` (the preflight checks it)
    device=$( [ "$DEVICE" = cpu ] && echo "" || echo "--device $DEVICE" )
    limit=$( [ "$EVAL_LIMIT" = 0 ] && echo "" || echo "--limit $EVAL_LIMIT" )
    [ "$kind" = domains ] || limit=$( [ "$TASK_LIMIT" = 0 ] && echo "" || echo "--limit $TASK_LIMIT" )
    if [ "$kind" = domains ]; then
        # shellcheck disable=SC2086
        repro_do "$VRL" eval --ckpt "$RUNS/$name" --data "$DATA/tok" --tasks none $limit --seq "$SEQ" --batch "$EVAL_BATCH" $device
    else
        wiki=$SHARED/corpora/wikitext-2-raw/wiki.test.raw
        if repro_local; then  # the first article: WikiText windows dominate CPU time
            [ "$DRY" = 1 ] || awk '/^ = [^=]/ { n++ } n <= 1' "$wiki" > "$WORK/wiki.test.head.raw"
            wiki=$WORK/wiki.test.head.raw
        fi
        # shellcheck disable=SC2086
        repro_do "$VRL" eval --ckpt "$RUNS/$name" --tokenizer "$TOK" --eval-dir "$SHARED/eval" --wikitext "$wiki" \
            --tasks all $limit --seq "$SEQ" --batch "$EVAL_BATCH" $device
    fi
    [ "$DRY" = 1 ] || mv "$RUNS/$name/eval.json" "$out"
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
- command: reproduce/$REPRO_NAME.sh --scale $SCALE$( [ -z "$SEEDS_GIVEN" ] || echo " --seeds $SEEDS_GIVEN")$( [ -z "$DEVICE_ARG" ] || echo " --device $DEVICE_ARG")

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
