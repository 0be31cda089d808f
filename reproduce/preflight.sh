# preflight.sh: what a GPU scale (paper, small) needs, checked before anything is
# downloaded or trained (sourced by lib.sh, POSIX sh). One line per missing thing.
#
# repro_preflight: prints "missing: ..." lines for this plan and sets PREFLIGHT_MISSING to
# their count. Reads the settings repro_init set (SCALE, GPUS, VRL, WORK, DATA, RUNS, TOK,
# SHARED, SIZES, LAUNCHER, REPRO_NAME). Nothing here writes outside a temporary folder.

# The data preparation's disk use at paper and small scale, in GB (decimal), estimated:
# the download is one SlimPajama-627B train chunk (~90 GB of .jsonl.zst, its download
# script) and the held-out splits (~5 GB); `vrl data reorganize` writes it as plain JSONL,
# 62.7B tokens x 3.66 bytes per token (measured on slimpajama-mini, docs/results/reproduction.md
# "Data preparation throughput") = ~230 GB; the selection is its share of that, and the
# shards 2 bytes per token. Checkpoints: fp32 weights + two AdamW moments, the latest and
# one previous checkpoint per run.
PREFLIGHT_RAW_GB=95
PREFLIGHT_REORG_GB=230
PREFLIGHT_URL=https://huggingface.co/datasets/cerebras/SlimPajama-627B/resolve/main/README.md

preflight_missing() {
    PREFLIGHT_MISSING=$((PREFLIGHT_MISSING + 1))
    echo "   missing: $*"
}

# preflight_disk_gb: GB the plan still needs in the work folder's file system.
preflight_disk_gb() {
    data=0
    if [ ! -f "$DATA/.done" ]; then
        sel_tokens=$(awk -v s="$DATA_SCALE" 'BEGIN { printf "%.0f", s * 20e9 }')
        data=$(awk -v t="$sel_tokens" -v raw=$PREFLIGHT_RAW_GB -v reorg=$PREFLIGHT_REORG_GB \
            'BEGIN { printf "%.0f", raw + reorg + t * 3.66 / 1e9 + t * 2 / 1e9 + 2 }')
    fi
    # runs of each size this script trains (figures: 3 more at the smallest, ablations: 15 there)
    small=${SIZES%% *} ckpt=0
    for size in $SIZES; do
        runs=2
        [ "$REPRO_NAME" != figures ] || [ "$size" != "$small" ] || runs=5
        [ "$REPRO_NAME" != ablations ] || { [ "$size" = "$small" ] && runs=15 || runs=0; }
        ckpt=$(awk -v c="$ckpt" -v r="$runs" -v n="$(repro_params "$size")" 'BEGIN { printf "%.1f", c + r * 2 * n * 4 * 3 / 1e9 }')
    done
    awk -v d="$data" -v c="$ckpt" 'BEGIN { printf "%.0f", d + c }'
}

repro_preflight() {
    PREFLIGHT_MISSING=0
    probe=$(mktemp -d)
    # A CUDA build: `vrl train --device cuda` names the reason when it cannot train on the GPU.
    gpus_seen=0
    if command -v nvidia-smi > /dev/null 2>&1; then
        gpus_seen=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
        [ "$gpus_seen" -ge "$GPUS" ] ||
            preflight_missing "GPUs: the plan needs $GPUS, nvidia-smi -L lists $gpus_seen"
    else
        preflight_missing "nvidia-smi: not found (no NVIDIA driver here; the plan needs $GPUS GPU$([ "$GPUS" = 1 ] || echo s))"
    fi
    if [ -x "$VRL" ]; then
        "$VRL" train --device cuda --model tiny --steps 1 --batch 1 --seq 16 --synthetic-tokens 1024 --eval-batches 1 \
            --save-every 0 --quiet --out "$probe/run" > "$probe/log" 2>&1 || {
            if grep -q "has no CUDA backend" "$probe/log"; then
                preflight_missing "a CUDA build: $VRL has no CUDA backend (configure where nvcc is found, without -DVRL_CUDA=OFF; docs/fast.md)"
            elif [ "$gpus_seen" -ge "$GPUS" ]; then  # the GPUs are there, yet it cannot train
                preflight_missing "vrl train --device cuda fails here: $(tail -1 "$probe/log")"
            fi
        }
        "$VRL" eval --help 2>&1 | grep -q -- "--device" ||
            preflight_missing "vrl eval --device: this vrl evaluates on the CPU only (evaluation at $SCALE scale runs \`vrl eval --device cuda\`)"
        if [ "$GPUS" -gt 1 ]; then
            ldd "$VRL" 2>/dev/null | grep -q libmpi ||
                preflight_missing "MPI in the build: $VRL is built without MPI (install libopenmpi-dev and configure again; docs/distributed.md)"
            ldd "$VRL" 2>/dev/null | grep -q libnccl ||
                preflight_missing "NCCL in the build: $VRL is built without NCCL, so fast/ cannot train on $GPUS GPUs (docs/distributed.md)"
        fi
    else
        preflight_missing "vrl: $VRL is not built (bash scripts/build.sh, or --build DIR)"
    fi
    if [ "$GPUS" -gt 1 ]; then
        launcher_cmd=$(echo "$LAUNCH" | cut -d' ' -f1)
        command -v "$launcher_cmd" > /dev/null 2>&1 ||
            preflight_missing "$launcher_cmd: not found (the plan launches $GPUS ranks with \`$LAUNCH\`; --launcher mpirun|srun)"
    fi
    [ -f "$TOK" ] || preflight_missing "tokenizer: $TOK (reproduce/data/download_tokenizer.sh DIR, then --shared)"
    if [ "$REPRO_NAME" = table1 ]; then
        [ -d "$SHARED/eval" ] || preflight_missing "zero-shot task files: $SHARED/eval (reproduce/data/download_eval.sh)"
        [ -f "$SHARED/corpora/wikitext-2-raw/wiki.test.raw" ] ||
            preflight_missing "WikiText-2: $SHARED/corpora/wikitext-2-raw/wiki.test.raw (reproduce/data/download_wikitext.sh)"
    fi
    # Disk: the file system the work folder is (or will be) on.
    where=$WORK
    while [ ! -d "$where" ]; do where=$(dirname "$where"); done
    need=$(preflight_disk_gb)
    free=$(df -Pk "$where" | awk 'NR == 2 { printf "%.0f", $4 * 1024 / 1e9 }')
    [ "$free" -ge "$need" ] ||
        preflight_missing "disk: $free GB free under $where, the plan needs about $need GB (data and checkpoints; --work DIR)"
    # Network: only when the data still has to be downloaded. A HEAD request, nothing fetched.
    if [ ! -f "$DATA/.done" ]; then
        if ! command -v curl > /dev/null 2>&1; then
            preflight_missing "curl: not found (reproduce/data/download_slimpajama.sh fetches the data with it)"
        elif ! curl -sSI --max-time 10 -o /dev/null "$PREFLIGHT_URL" 2> "$probe/net"; then
            preflight_missing "network: $(echo "$PREFLIGHT_URL" | cut -d/ -f1-3) cannot be reached ($(tail -1 "$probe/net")), and $DATA is not prepared"
        fi
    fi
    rm -rf "$probe"
}
