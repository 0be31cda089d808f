/* fuzz_tasks.c: an eval task file (jsonl) through task_load (common/eval/lmeval.c),
 * read as each task format in turn: the first byte picks the task. */
#include "common/eval/lmeval.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n == 0) return 0;
    int ntasks = 0;
    while (LMEVAL_TASKS[ntasks].name) ntasks++;
    const TaskInfo *info = &LMEVAL_TASKS[data[0] % ntasks];
    TaskSet t;
    int rc = task_load(info, fuzz_file("task.jsonl", data + 1, n - 1), 0, &t);
    fuzz_check_error(rc);
    if (rc == 0) task_free(&t);
    return 0;
}
