# table5_registered.sh: the analysis registered in docs/results/reproduction.md ("The CPU-scale experiment")
# before the scale-bytes runs were made (sourced by table5.sh when LONG > 0, POSIX sh + jq + awk).
#
# Primary outcome, per run: the token-weighted mean validation loss, sum_d loss_d tokens_d /
# sum_d tokens_d over the 7 domains of `vrl eval --limit EVAL_LIMIT` (eval-domains.json), so a
# domain with a few hundred validation chunks counts for them and CommonCrawl's 14 chunks and
# StackExchange's 9 do not drive it. Test: the paired difference ResFormer − Transformer over the
# seeds (the two runs of a seed start from the same weights and see the same batches), mean ± se,
# Student t with n − 1 degrees of freedom, two-sided p. SVFormer − Transformer the same way. The
# unweighted mean over domains (Table 5's "Avg.") and each domain are reported beside it, not tested.
# Data efficiency: the Transformer trained LONG times as long (its own cosine schedule) is
# validated every EVAL_EVERY steps on EVAL_BATCHES batches per domain, as ResFormer is; the tokens
# it needs to reach ResFormer's final validation loss on that same subset (token-weighted,
# interpolated linearly between evaluations) divided by ResFormer's tokens is the seed's ratio.

# reg_tokmean FILE: the token-weighted mean loss of an eval-domains.json ("nan" when missing).
reg_tokmean() {
    jq -r '[.domains | to_entries[] | select(.value | type == "object") | .value]
           | if length == 0 then "nan" else ((map(.loss * .tokens) | add) / (map(.tokens) | add)) end' "$1" 2>/dev/null ||
        echo nan
}

# reg_curve RUN WEIGHTS: "tokens loss" per validation of RUN's metrics.jsonl: the per-domain
# validation losses weighted by WEIGHTS ("domain chunks" lines: the chunks each domain's
# evaluation reads, min(chunks, EVAL_BATCHES x MICRO)).
reg_curve() {
    jq -r 'select(.split == "val" and .domain != null) | "\(.step) \(.domain) \(.val_loss)"' "$1/metrics.jsonl" 2>/dev/null |
        awk -v w="$2" -v tps=$((GLOBAL * SEQ)) '
        BEGIN { n = split(w, x, " "); for (i = 1; i + 1 <= n; i += 2) wt[x[i]] = x[i + 1] }
        ($2 in wt) { s[$1] += $3 * wt[$2]; c[$1] += wt[$2]; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        END { for (i = 1; i <= k; i++) printf "%d %.6f\n", order[i] * tps, s[order[i]] / c[order[i]] }'
}

# reg_weights FILE: "domain chunks ..." for reg_curve from an eval-domains.json (chunks there are
# min(n, EVAL_LIMIT); the in-training evaluation reads min(n, EVAL_BATCHES x MICRO) of them).
reg_weights() {
    jq -r '.domains | to_entries[] | select(.value | type == "object") | "\(.key) \(.value.chunks)"' "$1" 2>/dev/null |
        awk -v cap=$((EVAL_BATCHES * MICRO)) '{ printf "%s %d ", $1, ($2 < cap ? $2 : cap) }'
}

# reg_ratio TARGET CURVE_LINES: the first tokens at which CURVE ("tokens loss" lines on stdin)
# reaches TARGET, interpolated; "never" when it does not.
reg_reach() {
    awk -v L="$1" '
        { if ($2 <= L) { if (NR == 1) { print $1 } else { print pt + ($1 - pt) * (pl - L) / (pl - $2) } found = 1; exit }
          pt = $1; pl = $2 }
        END { if (!found) print "never" }'
}

# reg_stats_awk: awk functions for the paired statistics (prepended to the programs below).
# tprob(t, df): two-sided p of Student t with df degrees of freedom, P(|T| >= |t|) =
# I_x(df/2, 1/2) with x = df / (df + t^2), the regularized incomplete beta function, from its
# continued fraction (modified Lentz) with the prefactor in logs, so the tail keeps its relative
# precision however small (1 - CDF would lose it: p below 1e-16 came out 0). Where x is above
# the continued fraction's fast side it uses I_x(a, b) = 1 - I_{1-x}(b, a), with 1 - x computed
# as t^2 / (df + t^2), not by a subtraction. lgam_half: log Gamma at a multiple of 1/2 (df is an
# integer), by the product Gamma(n) = (n-1)!, Gamma(n + 1/2) = sqrt(pi) prod_{k<=n} (k - 1/2).
REG_STATS='
function lgam_half(z,    s, k) {
    s = 0
    if (z == int(z)) { for (k = 2; k < z; k++) s += log(k); return s }
    s = 0.5 * log(3.14159265358979323846)
    for (k = 1; k < z; k++) s += log(k - 0.5)
    return s
}
function betacf(a, b, x,    m, m2, aa, c, d, del, h, tiny) {
    tiny = 1e-300
    c = 1; d = 1 - (a + b) * x / (a + 1); if (d < tiny && d > -tiny) d = tiny; d = 1 / d; h = d
    for (m = 1; m <= 1000; m++) {
        m2 = 2 * m
        aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2))
        d = 1 + aa * d; if (d < tiny && d > -tiny) d = tiny; c = 1 + aa / c; if (c < tiny && c > -tiny) c = tiny
        d = 1 / d; h *= d * c
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2))
        d = 1 + aa * d; if (d < tiny && d > -tiny) d = tiny; c = 1 + aa / c; if (c < tiny && c > -tiny) c = tiny
        d = 1 / d; del = d * c; h *= del
        if (del - 1 < 1e-15 && 1 - del < 1e-15) break
    }
    return h
}
function tprob(t, df,    a, b, x, y, lfront) {
    if (t < 0) t = -t
    if (t == 0) return 1
    a = df / 2; b = 0.5
    x = df / (df + t * t); y = t * t / (df + t * t)
    if (x == 0) return 0
    lfront = a * log(x) + b * log(y) - (lgam_half(a) + lgam_half(b) - lgam_half(a + b))
    if (x < (a + 1) / (a + b + 2)) return exp(lfront) * betacf(a, b, x) / a
    return 1 - exp(lfront) * betacf(b, a, y) / b
}
function paired(a, b, n,    i, m, v, d, se, t) {
    m = 0; for (i = 1; i <= n; i++) m += b[i] - a[i]; m /= n
    v = 0; for (i = 1; i <= n; i++) { d = b[i] - a[i] - m; v += d * d }
    se = n > 1 ? sqrt(v / (n - 1) / n) : 0
    t = se > 0 ? m / se : 0
    PM = m; PSE = se; PT = t; PP = (n > 1 && se > 0) ? tprob(t, n - 1) : 1; PSD = n > 1 ? sqrt(v / (n - 1)) : 0
}
function meansd(a, n,    i, m, v) {
    m = 0; for (i = 1; i <= n; i++) m += a[i]; m /= n
    v = 0; for (i = 1; i <= n; i++) v += (a[i] - m) ^ 2
    MM = m; MSD = n > 1 ? sqrt(v / (n - 1)) : 0
}
function pfmt(p) { return p < 0.0001 ? sprintf("%.1e", p) : sprintf("%.4f", p) }
'

# table5_registered: the results file (stdout).
table5_registered() {
    size=${SIZES%% *}
    repro_header "Table 5 at scale $SCALE: the registered analysis over $NSEEDS seeds"
    params=$("$VRL" info --model "$(repro_model "$size")" | sed -n 's/^parameters: //p')
    echo
    echo "Model: $(repro_shape "$size" | awk '{ printf "%d layers, %d heads, d %d, FFN %d", $1, $2, $3, $4 }'), vocabulary $VOCAB (bytes), $params parameters."
    echo "Seeds: $SEEDS(each sets the initial weights and the data order; the runs of a seed start from"
    echo "the same weights where shapes agree and see the same batches, which makes the differences paired)."
    echo "Analysis as registered in docs/results/reproduction.md (\"The CPU-scale experiment\") before the runs: reproduce/table5_registered.sh."
    # per seed: T, R, SV token-weighted and unweighted means; the ratio
    per_seed=""
    for seed in $SEEDS; do
        t=$RUNS/$(repro_seed_name "transformer-$size" "$seed") r=$RUNS/$(repro_seed_name "resformer-$size" "$seed")
        v=$RUNS/$(repro_seed_name "svformer-$size" "$seed") l=$RUNS/$(repro_seed_name "transformer_long-$size" "$seed")
        [ -f "$t/eval-domains.json" ] && [ -f "$r/eval-domains.json" ] || continue
        tw=$(reg_tokmean "$t/eval-domains.json") rw=$(reg_tokmean "$r/eval-domains.json")
        vw=$( [ -f "$v/eval-domains.json" ] && reg_tokmean "$v/eval-domains.json" || echo nan)
        tu=$(jq -r '.domains.mean' "$t/eval-domains.json") ru=$(jq -r '.domains.mean' "$r/eval-domains.json")
        vu=$( [ -f "$v/eval-domains.json" ] && jq -r '.domains.mean' "$v/eval-domains.json" || echo nan)
        w=$(reg_weights "$t/eval-domains.json")
        target=$(reg_curve "$r" "$w" | tail -1 | cut -d' ' -f2)
        reach=never
        if [ -f "$l/.done" ] && [ -n "$target" ]; then reach=$(reg_curve "$l" "$w" | reg_reach "$target"); fi
        [ -f "$l/.done" ] || reach=missing
        per_seed="$per_seed$seed $tw $rw $vw $tu $ru $vu ${target:-nan} $reach
"
    done
    n=$(printf '%s' "$per_seed" | grep -c . || true)
    [ "$n" -ge 2 ] || { echo; echo "Fewer than two seeds have both runs evaluated: nothing to test yet."; return 0; }
    echo
    printf '%s' "$per_seed" | awk -v tokens="$TOKENS" -v long="$LONG" "$REG_STATS"'
    { n++; seed[n] = $1; tw[n] = $2; rw[n] = $3; tu[n] = $5; ru[n] = $6; reach[n] = $9
      if ($4 != "nan") { nv++; vw[nv] = $4; vu[nv] = $7; tvw[nv] = $2; tvu[nv] = $5 } }
    END {
        paired(tw, rw, n)
        verdict = PP < 0.05 ? "significant" : "not significant"
        printf "**Result: ResFormer − Transformer, token-weighted validation loss, %d seeds: %+.4f ± %.4f (se), t = %.2f, p = %s (two-sided, %d degrees of freedom): %s at 5%%.**\n", \
            n, PM, PSE, PT, pfmt(PP), n - 1, verdict
        rm = PM; rse = PSE
        print ""
        print "| quantity | Transformer | ResFormer | SVFormer | ResFormer − Transformer | SVFormer − Transformer |"
        print "|---|---|---|---|---|---|"
        meansd(tw, n); a = sprintf("%.4f ± %.4f", MM, MSD); meansd(rw, n); b = sprintf("%.4f ± %.4f", MM, MSD)
        c = "—"; sv = "—"; if (nv > 1) { meansd(vw, nv); c = sprintf("%.4f ± %.4f", MM, MSD) }
        paired(tw, rw, n); d = sprintf("%+.4f ± %.4f (t %.2f, p %s)", PM, PSE, PT, pfmt(PP))
        if (nv > 1) { paired(tvw, vw, nv); sv = sprintf("%+.4f ± %.4f (t %.2f, p %s)", PM, PSE, PT, pfmt(PP)) }
        print "| validation loss, token-weighted (primary) | " a " | " b " | " c " | " d " | " sv " |"
        meansd(tu, n); a = sprintf("%.4f ± %.4f", MM, MSD); meansd(ru, n); b = sprintf("%.4f ± %.4f", MM, MSD)
        c = "—"; sv = "—"; if (nv > 1) { meansd(vu, nv); c = sprintf("%.4f ± %.4f", MM, MSD) }
        paired(tu, ru, n); d = sprintf("%+.4f ± %.4f (t %.2f, p %s)", PM, PSE, PT, pfmt(PP))
        if (nv > 1) { paired(tvu, vu, nv); sv = sprintf("%+.4f ± %.4f (t %.2f, p %s)", PM, PSE, PT, pfmt(PP)) }
        print "| mean of the 7 domains, unweighted (Table 5 Avg.) | " a " | " b " | " c " | " d " | " sv " |"
        print ""
        printf "Models: mean ± sample sd over seeds; differences: paired mean ± se (t, two-sided p). Transformer and ResFormer: %d seeds; ", n
        if (nv == 0) print "SVFormer: no runs (none trained, BYTES_EXTRA_SEEDS=0)."
        else printf "SVFormer: the first %d of them, paired with their Transformers.\n", nv
        # tokens to equal loss
        nr = 0; cens = 0
        for (i = 1; i <= n; i++) {
            if (reach[i] == "missing") continue
            if (reach[i] == "never") { cens++; continue }
            nr++; rr[nr] = reach[i] / tokens
        }
        print ""
        if (nr + cens == 0) { print "Tokens to equal loss: the long Transformer runs are missing."; exit }
        if (nr > 0) {
            meansd(rr, nr); lo = rr[1]; hi = rr[1]; for (i = 2; i <= nr; i++) { if (rr[i] < lo) lo = rr[i]; if (rr[i] > hi) hi = rr[i] }
            printf "**Tokens to equal loss: the Transformer needs %.2f ± %.2f (se; sd %.2f, range %.2f-%.2f) times ResFormer'"'"'s tokens to reach ResFormer'"'"'s final validation loss (%d of %d seeds reached it", \
                MM, MSD / sqrt(nr), MSD, lo, hi, nr, nr + cens
            if (cens) printf "; %d did not within %d times the tokens, so the mean is a lower bound", cens, long
            print ").**"
        } else {
            printf "**Tokens to equal loss: no seed'"'"'s Transformer reached ResFormer'"'"'s final validation loss within %d times the tokens (ratio > %d).**\n", long, long
        }
    }'
    echo
    echo "### Per seed"
    echo
    echo "| seed | Transformer | ResFormer | SVFormer | ResFormer − Transformer | SVFormer − Transformer | ResFormer's final in-training val. | Transformer tokens to reach it | ratio |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s' "$per_seed" | awk -v tokens="$TOKENS" '{
        sv = $4 == "nan" ? "—" : sprintf("%.4f", $4); svd = $4 == "nan" ? "—" : sprintf("%+.4f", $4 - $2)
        reach = ($9 == "never" || $9 == "missing") ? $9 : sprintf("%.0f", $9); ratio = ($9 == "never" || $9 == "missing") ? "—" : sprintf("%.3f", $9 / tokens)
        printf "| %s | %.4f | %.4f | %s | %+.4f | %s | %.4f | %s | %s |\n", $1, $2, $3, sv, $3 - $2, svd, $8, reach, ratio }'
    echo
    echo "Token-weighted validation loss per run (\`vrl eval --limit $EVAL_LIMIT\`: the first $EVAL_LIMIT chunks of $SEQ bytes per domain)."
    echo "The last three columns use the in-training validation ($EVAL_BATCHES batches of $MICRO chunks per domain, the same subset for"
    echo "both models): ResFormer's at its last step, the long Transformer's every $CURVE_EVERY steps. ResFormer trained"
    echo "$(repro_commas "$TOKENS") tokens, the long Transformer $LONG times that on its own cosine schedule."
    echo
    echo "### Per domain"
    echo
    first=$RUNS/$(repro_seed_name "transformer-$size" "$FIRST_SEED")/eval-domains.json
    head="| | " sep="|---|"
    for d in $DOMAINS; do
        short=$(echo "$d" | sed 's/^RedPajama//; s/CommonCrawl/CC/; s/StackExchange/StackEx./')
        head="$head$short ($(repro_commas "$(jq -r ".domains.$d.tokens // 0" "$first")") tokens) | " sep="$sep---|"
    done
    echo "${head}"
    echo "$sep"
    for seed in $SEEDS; do  # seeds with both of the pair evaluated, as above; SVFormer after its Transformer
        [ -f "$RUNS/$(repro_seed_name "transformer-$size" "$seed")/eval-domains.json" ] &&
            [ -f "$RUNS/$(repro_seed_name "resformer-$size" "$seed")/eval-domains.json" ] || continue
        for arch in transformer resformer svformer; do
            f=$RUNS/$(repro_seed_name "$arch-$size" "$seed")/eval-domains.json
            [ -f "$f" ] || continue
            printf '%s' "$arch"
            for d in $DOMAINS; do printf ' %s' "$(jq -r ".domains.$d.loss" "$f")"; done
            echo
        done
    done | awk "$REG_STATS"'
        $1 == "transformer" { nt++; for (i = 2; i <= NF; i++) t[i, nt] = $i; k = NF }
        $1 == "resformer" { nr++; for (i = 2; i <= NF; i++) r[i, nr] = $i }
        $1 == "svformer" { nv++; for (i = 2; i <= NF; i++) { v[i, nv] = $i; tv[i, nv] = t[i, nt] } }
        function col(x, i, n,    j) { delete CA; for (j = 1; j <= n; j++) CA[j] = x[i, j] }
        END {
            n = nt
            if (nr != n) exit
            line = "| Transformer"; for (i = 2; i <= k; i++) { col(t, i, n); meansd(CA, n); line = line sprintf(" | %.4f ± %.4f", MM, MSD) } print line " |"
            line = "| ResFormer"; for (i = 2; i <= k; i++) { col(r, i, n); meansd(CA, n); line = line sprintf(" | %.4f ± %.4f", MM, MSD) } print line " |"
            if (nv > 1) { line = "| SVFormer"; for (i = 2; i <= k; i++) { col(v, i, nv); meansd(CA, nv); line = line sprintf(" | %.4f ± %.4f", MM, MSD) } print line " |" }
            line = "| ResFormer − Transformer"
            for (i = 2; i <= k; i++) { col(t, i, n); for (j = 1; j <= n; j++) A[j] = CA[j]; col(r, i, n); paired(A, CA, n); line = line sprintf(" | %+.4f ± %.4f (p %s)", PM, PSE, pfmt(PP)) }
            print line " |"
            if (nv > 1) {
                line = "| SVFormer − Transformer"
                for (i = 2; i <= k; i++) { col(tv, i, nv); for (j = 1; j <= nv; j++) A[j] = CA[j]; col(v, i, nv); paired(A, CA, nv); line = line sprintf(" | %+.4f ± %.4f (p %s)", PM, PSE, pfmt(PP)) }
                print line " |"
            }
        }'
    echo
    echo "Per-domain p values are descriptive (not corrected for the 7 comparisons); only the token-weighted"
    echo "mean was registered as the test. The paper (82M, Table 5): ResFormer − Transformer −0.0272 on the domain average."
    # the curves: the training loss of the first seed's four runs (every seed's would be a tangle)
    curves=$RESULTS/table5-$SCALE-curves runs=""
    for arch in transformer resformer svformer transformer_long; do
        r=$RUNS/$(repro_seed_name "$arch-$size" "$FIRST_SEED")
        [ -s "$r/metrics.jsonl" ] && runs="$runs $r"
    done
    # shellcheck disable=SC2086 # one argument per run folder
    [ -n "$runs" ] && "$VRL" analyze --loss $runs --window "$WINDOW" --out "$curves" > /dev/null 2>&1 &&
        [ -s "$curves/loss_curves.png" ] && echo && echo "Training loss of seed $FIRST_SEED's runs (moving average $WINDOW): table5-$SCALE-curves/loss_curves.png"
    return 0
}
