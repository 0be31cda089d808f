"""lmeval_runs.py: lm-evaluation-harness itself on vrl run folders, as a user runs it (test_lmeval_hf.sh).

For each RUN, HFLM loads the folder as it is, with no model argument but the precision and the
machine: pretrained=RUN, trust_remote_code=True, dtype=float64, device=cpu (its config, generation_config, weights,
tokenizer.json and the tokenizer_config.json vrl wrote; max_length is the folder's
max_position_embeddings, WINDOW; the prefix of rolling windows is the tokenizer's BOS, as for any
model). With batch size 4 it
  - scores the first DOCS documents of lambada_openai and piqa and the first PAGES WikiText-2 pages
    with lm-eval's own task definitions (conformance/lmeval_golden/make_expected.py's YAMLs), and
    writes RUN.lmeval.json in the form of expected.json (metrics and every request's
    log-likelihood), which lmeval_golden_check compares with `vrl eval`'s figures;
  - runs a generate_until task on the same DOCS piqa questions (greedy, GEN_TOKENS tokens): the
    prompts differ in length, so lm-eval pads them on the left into batches. The same task with
    batch size 1 (no padding) must give the same texts, and they must not be empty.

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
GEN_TOKENS = 12
# a generate_until task on piqa's questions: greedy, stopped only by GEN_TOKENS or the EOS, so every
# answer has text to compare
GEN_BODY = (
    "output_type: generate_until\ndoc_to_text: !function golden_shim.answer_prompt\n"
    "doc_to_target: \"{{choices[gold]}}\"\n"
    f"generation_kwargs:\n  until: []\n  do_sample: false\n  max_gen_toks: {GEN_TOKENS}\n"
    "metric_list:\n  - metric: exact_match\n"
)


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
    with open(os.path.join(tasks, "gen.yaml"), "w") as f:
        f.write(mx.yaml_task("runs_gen", data["piqa"], GEN_BODY))
    return tasks, names


def generated(res):
    """lm-eval's generated texts of runs_gen, by document."""
    return [s["resps"][0][0] for s in sorted(res["samples"]["runs_gen"], key=lambda s: s["doc_id"])]


def main():
    shared, window, docs, pages, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
    torch.set_num_threads(1)
    tasks, names = task_folder(shared, docs, pages)
    manager = TaskManager(include_path=tasks)
    for run in runs:
        args = f"pretrained={run},trust_remote_code=True,dtype=float64,device=cpu"
        res = lm_eval.simple_evaluate(model="hf", model_args=args, tasks=list(names.values()) + ["runs_gen"],
                                      batch_size=4, log_samples=True, task_manager=manager)
        one = lm_eval.simple_evaluate(model="hf", model_args=args, tasks=["runs_gen"], batch_size=1,
                                      log_samples=True, task_manager=manager)
        texts, alone = generated(res), generated(one)
        assert len(texts) == docs and all(texts), f"{run}: generate_until gave empty texts: {texts}"
        for i, (a, b) in enumerate(zip(texts, alone)):
            assert a == b, f"{run}: generate_until document {i}: batch of 4 (left-padded) {a!r}, alone {b!r}"
        metrics, samples = mx.collect(res, names)
        with open(run.rstrip("/") + ".lmeval.json", "w") as f:
            json.dump({"model_args": args, "window": window, "metrics": metrics, "samples": samples}, f, indent=1)
        print(run, json.dumps(metrics))
        print(run, f"generate_until, {docs} piqa questions, batch 4 = batch 1:", json.dumps(texts))


if __name__ == "__main__":
    main()
