/* zeroshot.c: task selection and the zero-shot table of `vrl eval` (zeroshot.h). */
#include "common/eval/zeroshot.h"

#include <string.h>
#include <sys/stat.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"

int zeroshot_select(const char *tasks, const char *eval_dir, ZeroShot *z) {
    memset(z, 0, sizeof *z);
    if (!strcmp(tasks, "all")) {
        struct stat st;
        if (stat(eval_dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return vrl_error("%s: no such folder (the task files: give --eval-dir DIR, or --tasks none)", eval_dir);
        for (const TaskInfo *t = LMEVAL_TASKS; t->name && z->n < ZEROSHOT_MAX_TASKS; t++) {
            snprintf(z->path[z->n], sizeof z->path[0], "%s/%s", eval_dir, t->file);
            if (file_exists(z->path[z->n])) z->info[z->n++] = t;
            else fprintf(stderr, "vrl eval: %s: absent, task %s skipped\n", z->path[z->n], t->name);
        }
        if (!z->n) return vrl_error("%s: holds none of the task files (see vrl eval --help; or --tasks none)", eval_dir);
    } else if (strcmp(tasks, "none")) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", tasks);
        for (char *save, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            const TaskInfo *t = lmeval_task(name);
            if (!t) return vrl_error("--tasks: unknown task \"%s\"", name);
            if (z->n == ZEROSHOT_MAX_TASKS) return vrl_error("--tasks: too many tasks");
            snprintf(z->path[z->n], sizeof z->path[0], "%s/%s", eval_dir, t->file);
            if (!file_exists(z->path[z->n]))
                return vrl_error("%s: no such task file (task %s; see --eval-dir)", z->path[z->n], name);
            z->info[z->n++] = t;
        }
    }
    return 0;
}

int zeroshot_load(ZeroShot *z, size_t limit) {
    for (int i = 0; i < z->n; i++) {
        if (task_load(z->info[i], z->path[i], limit, &z->sets[i]) < 0) {
            zeroshot_free(z);
            return -1;
        }
        z->n_loaded = i + 1;
    }
    return 0;
}

void zeroshot_free(ZeroShot *z) {
    for (int i = 0; i < z->n_loaded; i++) task_free(&z->sets[i]);
    z->n_loaded = 0;
}

json_t *zeroshot_run(ZeroShot *z, Scorer *s, const Tokenizer *tok, FILE *log) {
    json_t *jt = json_object();
    if (!jt) {
        vrl_error("out of memory");
        return NULL;
    }
    printf("\nzero-shot (lm-evaluation-harness definitions; acc_norm divides by the choice's characters)\n");
    printf("  %-14s %8s %9s %11s %7s\n", "task", "acc", "acc_norm", "perplexity", "n");
    double sa = 0;
    int n_mc = 0;
    for (int i = 0; i < z->n_loaded; i++) {
        const TaskInfo *info = z->sets[i].info;
        TaskResult tr;
        s->label = info->name;
        if (task_evaluate(s, tok, &z->sets[i], log, &tr) < 0) {
            json_decref(jt);
            return NULL;
        }
        json_t *o = json_pack("{s:f, s:I}", "acc", tr.acc, "n", (json_int_t)tr.n);
        printf("  %-14s %8.4f", info->name, tr.acc);
        if (info->has_acc_norm) printf(" %9.4f", tr.acc_norm), json_object_set_new(o, "acc_norm", json_real(tr.acc_norm));
        else printf(" %9s", "-");
        if (info->kind == TASK_LAMBADA)
            printf(" %11.4f", tr.perplexity), json_object_set_new(o, "perplexity", json_real(tr.perplexity));
        else printf(" %11s", "-"), sa += tr.acc, n_mc++;
        printf(" %7zu\n", tr.n);
        fflush(stdout);
        json_object_set_new(jt, info->name, o);
    }
    if (n_mc) {
        printf("  %-14s %8.4f   (multiple-choice tasks)\n", "average", sa / n_mc);
        json_object_set_new(jt, "average", json_pack("{s:f, s:i}", "acc", sa / n_mc, "tasks", n_mc));
    }
    return jt;
}
