# table5_seeds.sh: Table 5 over several seeds (sourced by table5.sh when --seeds gives more than
# one, POSIX sh; SEEDS holds the seeds used, in the order given, FIRST_SEED the first). Per size: each model's per-domain validation loss as mean ± sample standard deviation
# over the seeds; the paired difference ResFormer − Transformer (the two runs of one seed see
# the same batches) as mean ± standard error with its paired t statistic; and the paper's rows. A domain whose validation split holds
# fewer than FEW_TOKENS tokens is marked: its loss rests on a few documents.
FEW_TOKENS=10000

# table5_values NAME: "d1 ... d7 mean" from the run's eval-domains.json (DOMAINS order), or
# nothing when the file is missing.
table5_values() {
    f=$RUNS/$1/eval-domains.json
    [ -f "$f" ] || return 0
    line=""
    for d in $DOMAINS; do line="$line $(jq -r ".domains.$d.loss // \"nan\"" "$f")"; done
    echo "$line $(jq -r '.domains.mean // "nan"' "$f")"
}

# table5_stats: reads lines "ARCH v1 ... v8" (ARCH transformer|resformer, one line per seed, the
# two archs' lines in seed order) and prints the rows "mean±sd" per arch and the paired row.
table5_stats() {
    awk '
    # two-sided 5% critical values of Student t, by degrees of freedom (1-30; above 30 the
    # value at 30, slightly conservative: 2.021 at 40, 2.000 at 60)
    function tcrit(df) {
        split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 " \
              "2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tc, " ")
        return df >= 1 && df <= 30 ? tc[df] + 0 : 2.042
    }
    $1 == "transformer" { nt++; for (i = 2; i <= NF; i++) t[nt, i] = $i; k = NF }
    $1 == "resformer"   { nr++; for (i = 2; i <= NF; i++) r[nr, i] = $i }
    function row(label, a, n,    i, j, m, v, out) {
        out = "| " label " | mean ± sd"
        for (i = 2; i <= k; i++) {
            m = 0; for (j = 1; j <= n; j++) m += a[j, i]; m /= n
            v = 0; for (j = 1; j <= n; j++) v += (a[j, i] - m) ^ 2; v = n > 1 ? sqrt(v / (n - 1)) : 0
            out = out (n > 1 ? sprintf(" | %.4f ± %.4f", m, v) : sprintf(" | %.4f", m))
        }
        print out " |"
    }
    END {
        if (nt == 0 || nt != nr) { print "| (runs missing: " nt " transformer, " nr " resformer) |"; exit }
        row("Transformer", t, nt)
        row("ResFormer", r, nr)
        out = "| ResFormer − Transformer, paired | mean ± se (t)"
        sig = ""
        for (i = 2; i <= k; i++) {
            m = 0; for (j = 1; j <= nt; j++) m += r[j, i] - t[j, i]; m /= nt
            v = 0; for (j = 1; j <= nt; j++) v += (r[j, i] - t[j, i] - m) ^ 2
            se = nt > 1 ? sqrt(v / (nt - 1) / nt) : 0
            tt = se > 0 ? m / se : 0
            out = out (nt > 1 ? sprintf(" | %+.4f ± %.4f (%.1f)", m, se, tt) : sprintf(" | %+.4f", m))
            if (i == k && nt > 1) sig = (se > 0 && (tt > tcrit(nt - 1) || tt < -tcrit(nt - 1))) ? "significant" : "not significant"
        }
        print out " |"
        if (sig != "") printf "SIG %s %d\n", sig, nt - 1
    }'
}

table5_seeds() {
    repro_header "Table 5 over $NSEEDS seeds: validation loss per domain"
    echo
    [ "$SCALE" != cpu ] || { echo "**A pipeline demonstration: at this scale the embedding holds most parameters and the paired"
        echo "sd needs ~25 seeds for the paper's effect; the powered experiment is --scale bytes (docs/reproduce.md).**"; echo; }
    echo "Seeds: $SEEDS(each seed sets the initial weights and the data order; the two models of"
    echo "a seed see the same batches in the same order, which is what makes the difference paired)."
    echo "Losses are token means over the first $EVAL_LIMIT validation chunks of $SEQ tokens per domain."
    echo "Columns marked † hold fewer than $(repro_commas $FEW_TOKENS) validation tokens (a few"
    echo "documents): read them as anecdotes. Paired rows: mean difference over seeds ± its standard"
    echo "error, (t) the paired t statistic; the Avg. column says whether it is significant at 5%"
    echo "(two-sided, $((NSEEDS - 1)) degrees of freedom)."
    # each validation domain's loss under the add-one unigram model of the training tokens
    # (`vrl data inspect --entropy`): the context-free baseline the runs must get well below
    ent=$("$VRL" data inspect --in "$DATA/tok" --entropy)
    unigram="" mean_h=""
    for d in $DOMAINS; do
        unigram="$unigram$(echo "$ent" | awk -v d="$d" '$1 == "validation" && $2 == d { print $(NF - 2) }') | "
    done
    unigram="$unigram$(echo "$unigram" | tr -d ' ' | tr '|' '\n' | awk 'NF { s += $1; n++ } END { if (n) printf "%.4f", s / n }')"
    echo
    echo "Training data: $(echo "$ent" | awk '$1 == "train" && $2 == "(all)" { print $3 }') tokens, whose pooled unigram entropy is"
    echo "$(echo "$ent" | awk '$1 == "train" && $2 == "(all)" { print $(NF - 1) }') nats; each run samples the formulas.md §3 mixture from it, so small domains repeat"
    echo "(CommonCrawl's weight is 1/2 of a run's tokens but it holds 2% of the corpus)."
    for size in $SIZES; do
        first=$RUNS/$(repro_seed_name "transformer-$size" "$FIRST_SEED")/eval-domains.json
        head="| $size | | "
        sep="|---|---|"
        for d in $DOMAINS; do
            short=$(echo "$d" | sed 's/^RedPajama//; s/CommonCrawl/CC/; s/StackExchange/StackEx./')
            n=$(jq -r ".domains.$d.tokens // 0" "$first" 2>/dev/null || echo 0)
            mark=$(awk -v n="$n" -v f="$FEW_TOKENS" 'BEGIN { if (n < f) print " †" }')
            head="$head$short$mark ($(repro_commas "$n")) | "
            sep="$sep---|"
        done
        params=$("$VRL" info --model "$(repro_model "$size")" | sed -n 's/^parameters: //p')
        echo
        echo "### $size ($(repro_shape "$size" | awk '{ printf "%d layers, %d heads, d %d, FFN %d", $1, $2, $3, $4 }'), $params parameters; the paper's $(paper_size "$size"))"
        echo
        echo "${head}Avg. |"
        echo "$sep---|"
        stats=$(for seed in $SEEDS; do
            for arch in transformer resformer; do
                v=$(table5_values "$(repro_seed_name "$arch-$size" "$seed")")
                [ -n "$v" ] && echo "$arch $v"
            done
        done | table5_stats)
        echo "$stats" | grep -v '^SIG '
        echo "| unigram model of the training tokens | | $unigram |"
        for arch in transformer resformer; do
            echo "| paper, $arch $(paper_size "$size") | | $(paper_row "$arch-$size" | sed 's/ / | /g') |"
        done
        echo "| paper, ResFormer − Transformer | | $(awk -v a="$(paper_row "resformer-$size")" -v b="$(paper_row "transformer-$size")" \
            'BEGIN { n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; i++) printf "%+.4f |%s", x[i] - y[i], i < n ? " " : "" }')"
        sig=$(echo "$stats" | sed -n 's/^SIG //p')
        # the training-loss curves of the size's runs, every seed, in one PNG (gnuplot)
        curves=$RESULTS/table5-$SCALE-curves/$size runs=""
        for seed in $SEEDS; do
            for arch in transformer resformer; do
                r=$RUNS/$(repro_seed_name "$arch-$size" "$seed")
                [ -s "$r/metrics.jsonl" ] && runs="$runs $r"
            done
        done
        # shellcheck disable=SC2086 # one argument per run folder
        [ -n "$runs" ] && "$VRL" analyze --loss $runs --window "$WINDOW" --out "$curves" > /dev/null 2>&1 &&
            [ -s "$curves/loss_curves.png" ] && echo && echo "Training loss (moving average $WINDOW): table5-$SCALE-curves/$size/loss_curves.png"
        echo
        if [ -n "$sig" ]; then
            echo "Average over domains: the paired difference is ${sig% *} at 5% (${sig##* } degrees of freedom)."
        else
            echo "Average over domains: not every run of this size has been evaluated yet."
        fi
    done
}
