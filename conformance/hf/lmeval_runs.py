"""lmeval_runs.py: lm-evaluation-harness itself on vrl run folders, as a user runs it (test_lmeval_hf.sh).

For each RUN, HFLM loads the folder as it is (pretrained=RUN, trust_remote_code=True: its config,
weights, tokenizer.json and the tokenizer_config.json vrl wrote) in float64 with max_length WINDOW,
and scores the first DOCS documents of lambada_openai and piqa and the first PAGES WikiText-2 pages
with lm-eval's own task definitions (conformance/lmeval_golden/make_expected.py's YAMLs). Writes
RUN.lmeval.json in the form of expected.json (metrics and every request's log-likelihood), which
lmeval_golden_check compares with `vrl eval`'s figures.

A folder whose tokenizer has no <|endoftext|> (a `vrl data bytes` tokenizer) names no special token,
so lm-eval is told the prefix of its rolling windows: prefix_token_id=0, what `vrl eval` uses.

Usage: lmeval_runs.py SHARED_DATA_DIR WINDOW DOCS PAGES RUN...
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lmeval_golden"))
import make_expected as mx  # noqa: E402  (sets HF_*_OFFLINE before lm_eval is imported)
import lm_eval  # noqa: E402
import torch  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

TASKS = ["wikitext", "lambada_openai", "piqa"]


def task_folder(shared, docs, pages):
    """The task YAMLs and data slices lm-eval reads; returns (include_path, {task: lm-eval name})."""
    work = tempfile.mkdtemp(prefix="vrl_lmeval_runs.")
    tasks = os.path.join(work, "tasks")
    os.makedirs(tasks)
    with open(os.path.join(tasks, "golden_shim.py"), "w") as f:
        f.write(mx.SHIM)
    data = {}
    for t in ("lambada_openai", "piqa"):
        data[t] = os.path.join(work, t + ".jsonl")
        mx.head_lines(os.path.join(shared, "eval", t + ".jsonl"), data[t], docs)
    with open(os.path.join(shared, "corpora/wikitext-2-raw/wiki.test.raw"), encoding="utf-8", newline="") as f:
        wiki = mx.wikitext_pages(f.read())[:pages]
    data["wikitext"] = os.path.join(work, "wikitext.jsonl")
    with open(data["wikitext"], "w", encoding="utf-8") as f:
        for p in wiki:
            f.write(json.dumps({"page": p}) + "\n")
    names = {t: "runs_" + t for t in TASKS}
    for t in TASKS:
        with open(os.path.join(tasks, t + ".yaml"), "w") as f:
            f.write(mx.yaml_task(names[t], data[t], mx.TASK_BODIES[t]))
    return tasks, names


def main():
    shared, window, docs, pages, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
    torch.set_num_threads(1)
    tasks, names = task_folder(shared, docs, pages)
    manager = TaskManager(include_path=tasks)
    for run in runs:
        with open(os.path.join(run, "tokenizer_config.json")) as f:
            has_eos = "eos_token" in json.load(f)
        args = f"pretrained={run},trust_remote_code=True,dtype=float64,max_length={window},device=cpu"
        if not has_eos:
            args += ",prefix_token_id=0"
        res = lm_eval.simple_evaluate(model="hf", model_args=args, tasks=list(names.values()), batch_size=4,
                                      log_samples=True, task_manager=manager)
        metrics, samples = mx.collect(res, names)
        with open(run.rstrip("/") + ".lmeval.json", "w") as f:
            json.dump({"model_args": args, "window": window, "metrics": metrics, "samples": samples}, f, indent=1)
        print(run, json.dumps(metrics))


if __name__ == "__main__":
    main()
