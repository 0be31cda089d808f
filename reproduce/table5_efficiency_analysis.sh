# table5_efficiency_analysis.sh: the analysis of Reproduce III, as registered in docs/results/reproduction.md
# ("Reproduce III: registered before the main run", items 2-5) before its main run (sourced by
# table5_efficiency.sh: eff_results after the main phase, eff_pilot_report for --power after the
# pilot; POSIX sh + jq + awk). It reads the run folders the driver made and trains nothing.
#
# Outcome of a main run: the token-weighted validation loss of its `vrl eval --limit 200`
# (reg_tokmean of RUN/eval-domains.json, table5_registered.sh). Of a pilot run: eff_final, the
# unweighted mean over the domains of its last in-training validation (+inf when not finite).
#   Table 5   ResFormer − Transformer at b8, each at its own best lr, paired over --seeds and
#             EFF_PAIR_SEEDS (Student t, n − 1 df, two-sided p); at the shared lr
#             (eff_resformer_shared-b8) over --seeds, tested the same way; at the other sizes over
#             --seeds, mean ± se only (not tested)
#   data      per seed the Transformer's b8 losses L(B) at B = 1 and EFF_BUDGETS x the tokens, the
#             target L_R ResFormer's b8 loss; B* by linear interpolation of L in ln B between the
#             first bracketing pair of budgets (L(B_i) > L_R >= L(B_i+1)); extrapolated from the
#             first segment when L(1) <= L_R already (a ratio below 1); censored (> the largest
#             budget) when no budget reaches L_R. r = B* / B(1). Summary: exp of the mean of ln r
#             with a 95% t interval; with any seed censored instead the median of r with a
#             percentile-bootstrap 95% interval (eff_boot below)
#   params    per seed and model the least-squares line L = a + b ln N through the sizes (N: the
#             non-embedding parameters, eff_params); L* = a_T + b_T ln N(b8), N_R = exp((L* − a_R)
#             / b_R), rho = N_R / N(b8), saving 1 − rho; a seed with b_R >= 0 has no ratio and is
#             ranked above every ratio (as a censored seed of the data ratio); the summary as above
#   power     from the pilot: the paired sd of ResFormer − Transformer at b8 at the chosen lrs over
#             the pilot seeds, and the power of the two-sided paired t test at 5% (noncentral t)
# Readings the registration leaves open, fixed here before any main run: a seed is censored only
# when no budget reaches L_R (the first crossing counts even if a later budget is above L_R again);
# a seed with L(1) <= L_R whose first segment does not fall (L(1.5) >= L(1)) cannot be extrapolated
# and has no ratio ("no slope": reported, left out of the summary); a seed without a parameter ratio
# (b_R >= 0) ranks above every ratio, as a censored seed does; the median of an even number of
# values is the mean of the middle two; the bootstrap interval's ends are the ceil(0.025 B)-th and
# (B + 1 − ceil(0.025 B))-th smallest of the B resampled medians.

. "$REPRO_ROOT/reproduce/table5_registered.sh"  # reg_tokmean, REG_STATS (tprob, paired, meansd, pfmt)

EFF_PAPER_DIFF=-0.0272     # the paper's Table 5, 82M: ResFormer − Transformer on the domain average
EFF_PAPER_DATA=0.203       # 20.3% less training data: ratio 1 / (1 − 0.203)
EFF_PAPER_SAVING=0.1611    # 16.11% fewer parameters: rho 0.839
EFF_POWER_EFFECT=0.022     # the effect the design assumes (the outside check at the best lrs)
EFF_POWER_SD_EARLIER=0.0277  # the 32-seed experiment's paired sd at lr 3e-3
EFF_BOOT=10000 EFF_BOOT_SEED=52

# EFF_STATS: awk functions beside REG_STATS.
# tquant(p, df): the t with two-sided tail p, by bisection on tprob (to 1e-13 relative).
# pnorm(x): the standard normal CDF, 0.5 (1 + erf(x / sqrt 2)), erf by its series of positive terms
#   erf(z) = 2/sqrt(pi) exp(-z^2) sum_n z (2 z^2)^n / (1 3 ... (2n + 1)) (no cancellation; 1 beyond z 6,
#   where 1 − erf < 3e-17).
# tpower(delta, df, alpha): power of the two-sided t test at level alpha when T = (Z + delta) /
#   S, S = sqrt(V / df), V chi-square with df: P(|T| > c) = E_S[Phi(delta − c S) + Phi(−delta − c S)],
#   the expectation over S's density 2 (df/2)^(df/2) / Gamma(df/2) s^(df−1) exp(−df s^2 / 2) by
#   Simpson's rule on [0, 8] (4,000 intervals; beyond 8 the density is below 1e-13 for every df >= 1).
# lcg(): Park and Miller's minimal standard generator, x <- 16807 x mod (2^31 − 1), LCG_X its state:
#   every product is below 2^46, exact in a double, so every awk draws the same numbers (rand()
#   differs between them; test_reproduce_efficiency passes with mawk and with gawk). A draw of 1..n is 1 + x mod n (bias below n / 2^31).
# Censored values are keys CENS + bound (CENS 1e6, far above any ratio): they sort above every value;
#   a median that averages one is known only as a lower bound, its key CENS + the average of the
#   bounds. medkey(k, n): the median key of k[1..n] (sorted here); hsort(a, n): heapsort.
EFF_STATS='
function tquant(p, df,    lo, hi, mid, i) {
    lo = 0; hi = 1
    while (tprob(hi, df) > p) hi *= 2
    for (i = 0; i < 300 && hi - lo > 1e-13 * hi; i++) { mid = (lo + hi) / 2; if (tprob(mid, df) > p) lo = mid; else hi = mid }
    return (lo + hi) / 2
}
function pnorm(x,    z, t, s, n) {
    z = (x < 0 ? -x : x) / sqrt(2)
    if (z > 6) s = 1
    else { t = z; s = z; for (n = 1; n < 400 && t > 1e-17 * s; n++) { t *= 2 * z * z / (2 * n + 1); s += t } s *= 2 / sqrt(3.14159265358979323846) * exp(-z * z) }
    return x < 0 ? 0.5 * (1 - s) : 0.5 * (1 + s)
}
function tpower(delta, df, alpha,    c, lc, m, h, i, s, w, f, sum) {
    c = tquant(alpha, df)
    lc = log(2) + df / 2 * log(df / 2) - lgam_half(df / 2)
    m = 4000; h = 8 / m; sum = 0
    for (i = 0; i <= m; i++) {
        s = i * h
        if (s == 0) f = (df == 1 ? exp(lc) : 0)
        else { f = lc + (df - 1) * log(s) - df * s * s / 2; f = f < -700 ? 0 : exp(f) }  # (gawk warns below exp(-745))
        w = (i == 0 || i == m) ? 1 : (i % 2 ? 4 : 2)
        sum += w * f * (pnorm(delta - c * s) + pnorm(-delta - c * s))
    }
    return sum * h / 3
}
function lcg() { LCG_X = (16807 * LCG_X) % 2147483647; return LCG_X }
function hsort(a, n,    i, end, t) {
    for (i = int(n / 2); i >= 1; i--) hsift(a, i, n)
    for (end = n; end > 1; end--) { t = a[1]; a[1] = a[end]; a[end] = t; hsift(a, 1, end - 1) }
}
function hsift(a, i, n,    c, t) {
    while (2 * i <= n) {
        c = 2 * i; if (c < n && a[c + 1] > a[c]) c++
        if (a[i] >= a[c]) return
        t = a[i]; a[i] = a[c]; a[c] = t; i = c
    }
}
function unkey(k) { return k >= 1e6 ? k - 1e6 : k }
function medkey(k, n,    a, b) {
    hsort(k, n)
    if (n % 2) return k[(n + 1) / 2]
    a = k[n / 2]; b = k[n / 2 + 1]
    if (a < 1e6 && b < 1e6) return (a + b) / 2
    return 1e6 + (unkey(a) + unkey(b)) / 2
}
function keyfmt(k, f) { return k >= 1e6 ? "> " sprintf(f, k - 1e6) : sprintf(f, k) }
# eff_boot(key, n, B, seed): the median of key[1..n] (BOOT_MED) and its percentile-bootstrap 95%
# interval: B resamples of n with replacement (lcg from seed), each resample'"'"'s median; the
# interval is the ceil(0.025 B)-th and (B + 1 − ceil(0.025 B))-th smallest (250th and 9,751st of 10,000).
function eff_boot(key, n, B, seed,    i, j, r, med, cp, lo) {
    for (i = 1; i <= n; i++) cp[i] = key[i]
    BOOT_MED = medkey(cp, n)
    LCG_X = seed
    for (i = 1; i <= B; i++) {
        for (j = 1; j <= n; j++) r[j] = key[1 + lcg() % n]
        med[i] = medkey(r, n)
    }
    hsort(med, B)
    lo = int(0.025 * B); if (lo < 0.025 * B) lo++
    BOOT_LO = med[lo]; BOOT_HI = med[B + 1 - lo]
}
# tci(x, n): the mean of x[1..n] and its 95% t interval (n − 1 df): CI_M, CI_LO, CI_HI, CI_SE, CI_T.
function tci(x, n) {
    meansd(x, n)
    CI_M = MM; CI_SE = MSD / sqrt(n); CI_T = tquant(0.05, n - 1)
    CI_LO = MM - CI_T * CI_SE; CI_HI = MM + CI_T * CI_SE
}
'

# eff_loss NAME SEED: the registered outcome of the main run NAME of SEED ("nan" when not evaluated).
eff_loss() {
    f=$RUNS/$(repro_seed_name "$1" "$2")/eval-domains.json
    [ -f "$f" ] && reg_tokmean "$f" || echo nan
}

# eff_budget_ratio X: the tokens of the X-times run over the 1x run's (its steps are rounded as the
# driver rounds them).
eff_budget_ratio() { awk -v s="$STEPS" -v x="$1" 'BEGIN { printf "%.10g", int(s * x + 0.5) / s }'; }

# eff_pilot_report: the pilot's table (each model, size and lr: every pilot seed's score and their
# mean, the chosen lr) and the power computed from it (stdout), from EFF_SCORES (the driver's
# eff_pilot_scores). Returns 1, having said why on stderr, when a pilot run is missing.
eff_pilot_report() {
    [ -n "${EFF_SCORES:-}" ] || eff_pilot_scores
    bests=" "
    for size in $EFF_SIZES; do for model in transformer resformer; do
        b=$(eff_best "$model" "$size")
        [ -n "$b" ] || { echo "table5_efficiency.sh: the pilot of $model at $size is not complete (--pilot-only first)" >&2; return 1; }
        bests="$bests$model:$size=$b "
    done; done
    bt=${bests#* transformer:b8=} br=${bests#* resformer:b8=}
    bt=${bt%% *} br=${br%% *}
    echo "## Pilot: each model's lr, and the power of the main run"
    echo
    echo "Pilot score: the unweighted mean over the domains of a run's last in-training validation loss"
    echo "($EVAL_BATCHES batches of $MICRO chunks per domain); a diverged run (not finite) scores +∞. Best lr: the lowest mean"
    echo "over the pilot seeds ($(echo $EFF_PILOT_SEEDS)), ties to the smaller lr (the rule of docs/results/reproduction.md, \"Reproduce III\", item 1)."
    echo
    hdr="| size | model | lr |" sep="|---|---|---|"
    for seed in $EFF_PILOT_SEEDS; do hdr="$hdr seed $seed |" sep="$sep---|"; done
    echo "$hdr mean | |"
    echo "$sep---|---|"
    # a best at the lowest or highest lr piloted for its model and size (the grid's, or the rule's
    # added point) is marked as at the edge
    printf '%s' "$EFF_SCORES" | awk -v bests="$bests" '
    { key = $1 " " $2 " " $3; if (!(key in o)) { o[key] = ++k; name[k] = key; model[k] = $2; size[k] = $1; lr[k] = $3 } sc[k] = sc[k] " " $5
      ms = $1 " " $2; if (!(ms in lo) || $3 + 0 < lo[ms] + 0) lo[ms] = $3; if (!(ms in hi) || $3 + 0 > hi[ms] + 0) hi[ms] = $3 }
    END {
        for (j = 1; j <= k; j++) {
            line = "| " size[j] " | " model[j] " | " lr[j] " |"; n = split(sc[j], v, " "); s = 0; inf = 0
            for (i = 1; i <= n; i++) { if (v[i] == "nan") { inf = 1; line = line " diverged (+∞) |" } else { s += v[i]; line = line sprintf(" %.4f |", v[i]) } }
            line = line (inf ? " +∞ |" : sprintf(" %.4f |", s / n))
            ms = size[j] " " model[j]
            if (index(bests, " " model[j] ":" size[j] "=" lr[j] " ")) line = line ((lr[j] == lo[ms] || lr[j] == hi[ms]) ? " **best** (at the grid'"'"'s edge) |" : " **best** |")
            else line = line " |"
            print line
        }
    }'
    echo
    # the paired sd at b8 at the chosen lrs, and the power
    printf '%s' "$EFF_SCORES" | awk -v bt="$bt" -v br="$br" -v eff="$EFF_POWER_EFFECT" -v sd0="$EFF_POWER_SD_EARLIER" "$REG_STATS$EFF_STATS"'
    $1 == "b8" && $2 == "transformer" && $3 == bt { n++; seed[n] = $4; t[n] = $5 }
    $1 == "b8" && $2 == "resformer" && $3 == br { r[++nr] = $5 }
    END {
        for (i = 1; i <= n; i++) if (t[i] == "nan" || r[i] == "nan") bad = 1
        list = ""; for (i = 1; i <= n; i++) list = list sprintf("%s%s %+.4f", (i > 1 ? ", " : ""), seed[i], (bad ? 0 : r[i] - t[i]))
        if (bad || n < 2) { printf "Paired sd at b8: not computable (a chosen pilot run diverged, or fewer than 2 pilot seeds).\n"; sd = "" }
        else {
            paired(t, r, n); sd = PSD
            printf "**Paired sd of ResFormer − Transformer at b8 at the chosen lrs (Transformer %s, ResFormer %s), pilot seeds: %.4f** (%d df; the differences %s; their mean %+.4f).\n", bt, br, sd, n - 1, list, PM
        }
        print ""
        printf "Power of the two-sided paired t test at 5%% for an effect of %s (noncentral t: delta = effect / sd x sqrt(n), n − 1 df):\n", eff
        print ""
        print "| paired sd | d = effect / sd | 8 seeds (7 df) | 16 seeds (15 df) |"
        print "|---|---|---|---|"
        if (sd != "" && sd > 0) printf "| %.4f (the pilot) | %.2f | %.1f%% | %.1f%% |\n", sd, eff / sd, 100 * tpower(eff / sd * sqrt(8), 7, 0.05), 100 * tpower(eff / sd * sqrt(16), 15, 0.05)
        printf "| %s (the 32-seed experiment, lr 3e-3) | %.2f | %.1f%% | %.1f%% |\n", sd0, eff / sd0, 100 * tpower(eff / sd0 * sqrt(8), 7, 0.05), 100 * tpower(eff / sd0 * sqrt(16), 15, 0.05)
        print ""
        printf "The pilot seeds give the sd with %d degree%s of freedom: read the first row with that in mind.\n", n - 1, (n - 1 == 1 ? "" : "s")
    }'
}

# eff_results: the results file (stdout).
eff_results() {
    pn=$(eff_params b8)
    [ -n "${EFF_SCORES:-}" ] || eff_pilot_scores
    bt=$(eff_best transformer b8) br=$(eff_best resformer b8)
    repro_header "Reproduce III: the paper's headline claims at scale $SCALE, each model at its own best lr"
    echo
    echo "Analysis as registered in docs/results/reproduction.md (\"Reproduce III: registered before the main run\") before the main"
    echo "run: reproduce/table5_efficiency_analysis.sh. Outcome of every main run: the token-weighted validation loss of"
    echo "\`vrl eval --limit $EVAL_LIMIT\` (sum of loss x tokens over the 7 domains / their tokens). Main seeds: $(echo $SEEDS);"
    echo "b8's pair also for $(echo $EFF_PAIR_SEEDS). Best lrs at b8: Transformer ${bt:-?}, ResFormer ${br:-?} (the pilot below)."
    # every main run's outcome, once: "seed main T_b8 R_b8 RS_b8 | T R per size | T per budget"
    blob=""
    for seed in $SEEDS $EFF_PAIR_SEEDS; do
        main=0; case " $SEEDS " in *" $seed "*) main=1 ;; esac
        line="$seed $main $(eff_loss eff_transformer-b8 "$seed") $(eff_loss eff_resformer-b8 "$seed")"
        if [ "$main" = 1 ]; then
            line="$line $(eff_loss eff_resformer_shared-b8 "$seed")"
            for size in $EFF_SIZES; do
                if [ "$size" = b8 ]; then line="$line = ="  # b8's pair is columns 3-4
                else line="$line $(eff_loss "eff_transformer-$size" "$seed") $(eff_loss "eff_resformer-$size" "$seed")"; fi
            done
            for x in $EFF_BUDGETS; do line="$line $(eff_loss "eff_transformer_x$x-b8" "$seed")"; done
        fi
        blob="$blob$line
"
    done
    sizes_n="" sizes_text=""
    for size in $EFF_SIZES; do
        sizes_n="$sizes_n $size:$(eff_params "$size")"
        sizes_text="${sizes_text:+$sizes_text, }$size $(repro_commas "$(eff_params "$size")")"
    done
    budgets="1"
    for x in $EFF_BUDGETS; do budgets="$budgets $(eff_budget_ratio "$x")"; done

    echo
    echo "## Table 5 at each model's best lr (item 2)"
    echo
    printf '%s' "$blob" | awk -v sizes="$sizes_n" -v paper="$EFF_PAPER_DIFF" -v bt="$bt" -v br="$br" "$REG_STATS$EFF_STATS"'
    function fm(v) { return v == "nan" ? "—" : sprintf("%.4f", v) }
    function fd(a, b) { return (a == "nan" || b == "nan") ? "—" : sprintf("%+.4f", b - a) }
    { n++; row[n] = $0; if ($3 != "nan" && $4 != "nan") { k++; t[k] = $3; r[k] = $4 }
      if ($2 == 1 && $3 != "nan" && $5 != "nan") { ks++; ts[ks] = $3; rs[ks] = $5 }
      if ($2 == 1) nmain++ }
    END {
        ns = split(sizes, sz, " ")
        if (k < 2) { print "Fewer than two seeds have both b8 runs evaluated: nothing to test yet."; exit }
        paired(t, r, k)
        printf "**Result: ResFormer − Transformer at b8, each at its own best lr (Transformer %s, ResFormer %s), token-weighted validation loss, %d seeds: %+.4f ± %.4f (se), t = %.2f, p = %s (two-sided, %d degrees of freedom): %s at 5%%.** The paper (82M, Table 5, the unweighted domain average): %+.4f.\n", \
            bt, br, k, PM, PSE, PT, pfmt(PP), k - 1, (PP < 0.05 ? "significant" : "not significant"), paper
        print ""
        print "| comparison | seeds | Transformer | ResFormer | ResFormer − Transformer | paper (82M) |"
        print "|---|---|---|---|---|---|"
        meansd(t, k); a = sprintf("%.4f ± %.4f", MM, MSD); meansd(r, k); b = sprintf("%.4f ± %.4f", MM, MSD)
        printf "| b8, each at its best lr (primary) | %d | %s | %s | %+.4f ± %.4f (t %.2f, p %s) | %+.4f |\n", k, a, b, PM, PSE, PT, pfmt(PP), paper
        if (ks >= 2) {
            meansd(ts, ks); a = sprintf("%.4f ± %.4f", MM, MSD); meansd(rs, ks); b = sprintf("%.4f ± %.4f", MM, MSD); paired(ts, rs, ks)
            printf "| b8, ResFormer at the Transformer'"'"'s lr %s (shared) | %d | %s | %s | %+.4f ± %.4f (t %.2f, p %s) | %+.4f |\n", bt, ks, a, b, PM, PSE, PT, pfmt(PP), paper
        }
        for (j = 1; j <= ns; j++) {
            split(sz[j], p, ":"); if (p[1] == "b8") continue
            m = 0; delete ta; delete ra
            for (i = 1; i <= n; i++) { split(row[i], f, " "); c = 6 + 2 * (j - 1); if (f[2] == 1 && f[c] != "nan" && f[c + 1] != "nan") { m++; ta[m] = f[c]; ra[m] = f[c + 1] } }
            if (m < 2) { printf "| %s, each at its best lr (not tested) | %d | — | — | — | |\n", p[1], m; continue }
            meansd(ta, m); a = sprintf("%.4f ± %.4f", MM, MSD); meansd(ra, m); b = sprintf("%.4f ± %.4f", MM, MSD); paired(ta, ra, m)
            printf "| %s, each at its best lr (not tested) | %d | %s | %s | %+.4f ± %.4f | |\n", p[1], m, a, b, PM, PSE
        }
        print ""
        print "Models: mean ± sample sd over seeds; differences: paired mean ± se (the two runs of a seed start from the same"
        print "weights and see the same batches); t and two-sided p where the design registered a test."
        print ""
        print "### Per seed"
        print ""
        h = "| seed | Transformer b8 | ResFormer b8 | R − T | ResFormer b8, shared lr | R − T, shared |"; s = "|---|---|---|---|---|---|"
        for (j = 1; j <= ns; j++) { split(sz[j], p, ":"); if (p[1] == "b8") continue; h = h " T " p[1] " | R " p[1] " | R − T |"; s = s "---|---|---|" }
        print h; print s
        for (i = 1; i <= n; i++) {
            split(row[i], f, " ")
            line = sprintf("| %s | %s | %s | %s |", f[1], fm(f[3]), fm(f[4]), fd(f[3], f[4]))
            if (f[2] == 1) line = line sprintf(" %s | %s |", fm(f[5]), fd(f[3], f[5])); else line = line " — | — |"
            for (j = 1; j <= ns; j++) {
                split(sz[j], p, ":"); if (p[1] == "b8") continue; c = 6 + 2 * (j - 1)
                if (f[2] == 1) line = line sprintf(" %s | %s | %s |", fm(f[c]), fm(f[c + 1]), fd(f[c], f[c + 1])); else line = line " — | — | — |"
            }
            print line
        }
        print ""
        if (n > nmain) printf "Seeds %d-%d of the list are b8'"'"'s pair only (Table 5'"'"'s power); the other columns are the %d main seeds.\n", nmain + 1, n, nmain
    }'

    echo
    echo "## Data efficiency (item 3)"
    echo
    printf '%s' "$blob" | awk -v budgets="$budgets" -v tokens="$TOKENS" -v tokc="$(repro_commas "$TOKENS")" -v nbc="$(repro_commas "$EFF_BOOT")" -v paper="$EFF_PAPER_DATA" -v nb="$EFF_BOOT" -v bseed="$EFF_BOOT_SEED" \
        -v ns="$(echo $EFF_SIZES | wc -w)" "$REG_STATS$EFF_STATS"'
    $2 == 1 {
        nb_ = split(budgets, B, " "); n++; seed[n] = $1; LR[n] = $4
        for (j = 1; j <= nb_; j++) L[n, j] = (j == 1) ? $3 : $(5 + 2 * ns + j - 1)
        how[n] = ""; miss = ($4 == "nan"); for (j = 1; j <= nb_; j++) if (L[n, j] == "nan") miss = 1
        if (miss) { how[n] = "missing"; next }
        if (L[n, 1] <= LR[n]) {  # already there at 1x: extrapolated from the first segment
            if (L[n, 2] >= L[n, 1]) { how[n] = "no slope"; next }
            lb = log(B[1]) + (LR[n] - L[n, 1]) * (log(B[2]) - log(B[1])) / (L[n, 2] - L[n, 1])
            how[n] = "extrapolated (below 1)"
        } else {
            for (j = 1; j < nb_; j++) if (L[n, j] > LR[n] && L[n, j + 1] <= LR[n]) break
            if (j == nb_) { how[n] = "censored (> " B[nb_] ")"; cens[n] = 1; next }
            lb = log(B[j]) + (L[n, j] - LR[n]) / (L[n, j] - L[n, j + 1]) * (log(B[j + 1]) - log(B[j]))
            how[n] = sprintf("interpolated %s-%s", B[j], B[j + 1])
        }
        ratio[n] = exp(lb); lr_[n] = lb
    }
    END {
        nb_ = split(budgets, B, " ")
        for (i = 1; i <= n; i++) { if (i in ratio) { k++; x[k] = lr_[i]; key[k] = ratio[i] } else if (i in cens) { c++; k2++; ckey[k2] = 1e6 + B[nb_] } else if (how[i] != "") skip = skip sprintf("%s%s (%s)", (skip == "" ? "" : ", "), seed[i], how[i]) }
        pr = 1 / (1 - paper)
        if (c == 0 && k >= 2) {
            tci(x, k)
            printf "**Result: the Transformer at its best lr reaches ResFormer'"'"'s b8 loss with %.3f times ResFormer'"'"'s %s tokens (95%% t interval %.3f-%.3f, %d df; exp of the mean ln r over %d seeds, ln r %.4f ± %.4f se).** The paper: %.2f = 1 / (1 − %s).\n", \
                exp(CI_M), tokc, exp(CI_LO), exp(CI_HI), k - 1, k, CI_M, CI_SE, pr, paper
            printf "\nThe interval %s 1 and %s the paper'"'"'s %.2f.\n", (exp(CI_LO) <= 1 && 1 <= exp(CI_HI)) ? "holds" : "excludes", (exp(CI_LO) <= pr && pr <= exp(CI_HI)) ? "holds" : "excludes", pr
        } else if (c > 0 && k + c >= 2) {
            for (i = 1; i <= c; i++) key[k + i] = ckey[i]
            eff_boot(key, k + c, nb, bseed)
            printf "**Result: %d of %d seeds censored (the Transformer above ResFormer'"'"'s loss even at %s times the tokens), so the median: %s times ResFormer'"'"'s %s tokens (95%% percentile-bootstrap interval %s to %s; %s resamples, seed %d; censored seeds ranked above every ratio).** The paper: %.2f = 1 / (1 − %s).\n", \
                c, k + c, B[nb_], keyfmt(BOOT_MED, "%.3f"), tokc, keyfmt(BOOT_LO, "%.3f"), keyfmt(BOOT_HI, "%.3f"), nbc, bseed, pr, paper
            if (BOOT_MED >= 1e6 || BOOT_HI >= 1e6) printf "\n(\"> x\": a median or endpoint that averages a censored seed, counted at %s: it is above x.)\n", B[nb_]
        } else print "Fewer than two seeds have a ratio: nothing to summarise yet."
        if (skip != "") printf "\nLeft out (no ratio): %s.\n", skip
        print ""
        print "### Per seed"
        print ""
        h = "| seed | ResFormer b8, L_R |"; s = "|---|---|"
        for (j = 1; j <= nb_; j++) { h = h " Transformer L(" B[j] ") |"; s = s "---|" }
        print h " B* (tokens) | r | how |"; print s "---|---|---|"
        for (i = 1; i <= n; i++) {
            line = sprintf("| %s | %s |", seed[i], LR[i] == "nan" ? "—" : sprintf("%.4f", LR[i]))
            for (j = 1; j <= nb_; j++) line = line (L[i, j] == "nan" ? " — |" : sprintf(" %.4f |", L[i, j]))
            if (i in ratio) line = line sprintf(" %.0f | %.3f |", ratio[i] * tokens, ratio[i])
            else if (i in cens) line = line sprintf(" > %.0f | > %s |", B[nb_] * tokens, B[nb_])
            else line = line " — | — |"
            print line " " how[i] " |"
        }
        print ""
        printf "L(B): the Transformer at its best lr trained on B times %s tokens, each on its own full cosine schedule;\n", tokc
        print "B* by linear interpolation of L against ln B between the first pair of budgets that brackets L_R."
    }'

    echo
    echo "## Parameter efficiency (item 4)"
    echo
    printf '%s' "$blob" | awk -v sizes="$sizes_n" -v sizes_text="$sizes_text" -v pn="$pn" -v pnc="$(repro_commas "$pn")" -v nbc="$(repro_commas "$EFF_BOOT")" -v paper="$EFF_PAPER_SAVING" -v nb="$EFF_BOOT" -v bseed="$EFF_BOOT_SEED" "$REG_STATS$EFF_STATS"'
    # fit(y, x, m): least squares y = FA + FB x
    function savefmt(k) { return k >= 1e6 ? sprintf("< %.2f%%", 100 * (1 - unkey(k))) : sprintf("%.2f%%", 100 * (1 - k)) }
    function fit(y, x, m,    i, mx, my, sxx, sxy) {
        mx = 0; my = 0; for (i = 1; i <= m; i++) { mx += x[i]; my += y[i] } mx /= m; my /= m
        sxx = 0; sxy = 0; for (i = 1; i <= m; i++) { sxx += (x[i] - mx) ^ 2; sxy += (x[i] - mx) * (y[i] - my) }
        FB = sxy / sxx; FA = my - FB * mx
    }
    $2 == 1 {
        ns = split(sizes, sz, " "); n++; seed[n] = $1; miss = 0
        for (j = 1; j <= ns; j++) {
            split(sz[j], p, ":"); name[j] = p[1]; lnN[j] = log(p[2])
            if (p[1] == "b8") { T[n, j] = $3; R[n, j] = $4 } else { T[n, j] = $(6 + 2 * (j - 1)); R[n, j] = $(7 + 2 * (j - 1)) }
            if (T[n, j] == "nan" || R[n, j] == "nan") miss = 1
        }
        if (miss) { how[n] = "missing"; next }
        for (j = 1; j <= ns; j++) { yt[j] = T[n, j]; yr[j] = R[n, j] }
        fit(yt, lnN, ns); aT[n] = FA; bT[n] = FB
        fit(yr, lnN, ns); aR[n] = FA; bR[n] = FB
        Ls[n] = aT[n] + bT[n] * log(pn)
        if (bR[n] >= 0) { how[n] = "no ratio (b_R >= 0)"; nor[n] = 1; next }
        lrho[n] = (Ls[n] - aR[n]) / bR[n] - log(pn); rho[n] = exp(lrho[n]); how[n] = ""
    }
    END {
        for (i = 1; i <= n; i++) { if (i in rho) { k++; x[k] = lrho[i]; key[k] = rho[i]; if (rho[i] > top) top = rho[i] } else if (i in nor) c++; else skip = skip sprintf("%s%s (%s)", (skip == "" ? "" : ", "), seed[i], how[i]) }
        pr = 1 - paper
        if (c == 0 && k >= 2) {
            tci(x, k)
            printf "**Result: ResFormer reaches the Transformer'"'"'s fitted b8 loss with %.3f times its %s non-embedding parameters at b8 (95%% t interval %.3f-%.3f, %d df; exp of the mean ln rho over %d seeds, ln rho %.4f ± %.4f se): %.2f%% fewer parameters (95%% interval %.2f%% to %.2f%%).** The paper: %.2f%% fewer (rho = %.3f).\n", \
                exp(CI_M), pnc, exp(CI_LO), exp(CI_HI), k - 1, k, CI_M, CI_SE, 100 * (1 - exp(CI_M)), 100 * (1 - exp(CI_HI)), 100 * (1 - exp(CI_LO)), 100 * paper, pr
            printf "\nThe interval %s rho = 1 (no saving) and %s the paper'"'"'s %.3f.\n", (exp(CI_LO) <= 1 && 1 <= exp(CI_HI)) ? "holds" : "excludes", (exp(CI_LO) <= pr && pr <= exp(CI_HI)) ? "holds" : "excludes", pr
        } else if (c > 0 && k + c >= 2) {
            for (i = 1; i <= c; i++) key[k + i] = 1e6 + top
            eff_boot(key, k + c, nb, bseed)
            printf "**Result: %d of %d seeds %s no ratio (ResFormer'"'"'s loss does not fall with size, b_R >= 0; ranked above every ratio), so the median: rho %s (95%% percentile-bootstrap interval %s to %s; %s resamples, seed %d), %s fewer parameters (interval %s to %s).** The paper: %.2f%% fewer (rho = %.3f).\n", \
                c, k + c, (c == 1 ? "has" : "have"), keyfmt(BOOT_MED, "%.3f"), keyfmt(BOOT_LO, "%.3f"), keyfmt(BOOT_HI, "%.3f"), nbc, bseed, savefmt(BOOT_MED), savefmt(BOOT_HI), savefmt(BOOT_LO), 100 * paper, pr
            if (BOOT_MED >= 1e6 || BOOT_HI >= 1e6) print "\n(\"> x\": a median or endpoint that averages a seed without a ratio, counted at the largest ratio of any seed: it is above x.)"
        } else print "Fewer than two seeds have a ratio: nothing to summarise yet."
        if (skip != "") printf "\nLeft out: %s.\n", skip
        print ""
        print "### Per seed"
        print ""
        h = "| seed |"; s = "|---|"
        for (j = 1; j <= ns; j++) { h = h " T " name[j] " |"; s = s "---|" }
        for (j = 1; j <= ns; j++) { h = h " R " name[j] " |"; s = s "---|" }
        print h " b_T | b_R | L* | N_R | rho | saving |"; print s "---|---|---|---|---|---|"
        for (i = 1; i <= n; i++) {
            line = "| " seed[i] " |"
            for (j = 1; j <= ns; j++) line = line (T[i, j] == "nan" ? " — |" : sprintf(" %.4f |", T[i, j]))
            for (j = 1; j <= ns; j++) line = line (R[i, j] == "nan" ? " — |" : sprintf(" %.4f |", R[i, j]))
            if (how[i] == "missing") { print line " — | — | — | — | — | missing |"; continue }
            line = line sprintf(" %.4f | %.4f | %.4f |", bT[i], bR[i], Ls[i])
            if (i in rho) line = line sprintf(" %.0f | %.3f | %.2f%% |", rho[i] * pn, rho[i], 100 * (1 - rho[i]))
            else line = line " — | — | " how[i] " |"
            print line
        }
        print ""
        print "Per seed and model the least-squares line L = a + b ln N through the sizes (N: non-embedding parameters,"
        printf "%s), each size at the model'"'"'s own best lr; L* = a_T + b_T ln %s, N_R = exp((L* − a_R) / b_R), rho = N_R / %s.\n", sizes_text, pnc, pnc
    }'
    echo
    eff_pilot_report || echo "(the pilot is incomplete: no pilot table)"
    echo
    echo "What the CPU scale can and cannot say: models of $(repro_commas "$(eff_params "${EFF_SIZES%% *}")")-$(repro_commas "$(eff_params "${EFF_SIZES##* }")") non-embedding parameters on"
    echo "$(repro_commas "$TOKENS") to $(repro_commas "$(awk -v t="$TOKENS" -v b="${budgets##* }" 'BEGIN { printf "%.0f", t * b }')") bytes, one width family: the ratios describe this regime; whether they carry to the"
    echo "paper's 82M-468M models on 20B tokens is outside what this design tests. A line in ln N through $(echo $EFF_SIZES | wc -w) sizes is a"
    echo "local slope, not a scaling law; the data ratio is bracketed by the budgets (above ${budgets##* } only a lower bound)."
}
