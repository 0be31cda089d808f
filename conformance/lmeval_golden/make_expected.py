"""make_expected.py: the figures `vrl eval` must reproduce, computed by lm-evaluation-harness.

Runs lm_eval's HFLM (transformers LlamaForCausalLM, float64, window 64) offline on the
model make_model.sh builds (VRL_GOLDEN_MODEL) and small slices of each task, with local task YAMLs that keep
lm-eval's own prompt templates, preprocessing and metrics, and writes expected.json:
every metric and every request's log-likelihood. Run by make_expected.sh.

With --float64-everywhere, transformers' float32 islands in a float64 Llama (RoPE
angles, RMSNorm, the attention softmax) are computed in float64 too, so every figure is
the float64 result and vrl's fp64 figures agree to rounding (expected_f64.json).

Usage: make_expected.py SHARED_DATA_DIR OUT_JSON [--float64-everywhere]
"""
import json
import math
import os
import shutil
import sys
import tempfile

SHARED = OUT = None              # set from the command line (conformance/hf/lmeval_runs.py imports
FLOAT64_EVERYWHERE = False       # this file for its task YAMLs and WikiText pages)
HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = 64          # max_length on both sides (vrl eval --seq 64)
TASK_DOCS = 10       # first documents of each task file (vrl eval --limit 10)
WIKI_PAGES = 2       # first pages of wiki.test.raw (vrl eval --limit 2)
MC_TASKS = ["piqa", "arc_easy", "arc_challenge", "openbook_qa"]

os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import lm_eval  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402


def lift_float32_islands():
    """transformers' Llama computes the RoPE angles, RMSNorm and the eager attention
    softmax in float32 whatever the model's dtype (about 1e-7 relative on a float64
    model's log-likelihoods); here they follow the input's dtype instead."""
    from transformers.models.llama import modeling_llama as m

    def rope_forward(self, x, position_ids):
        dim = self.config.head_dim
        theta = self.config.rope_parameters["rope_theta"]
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        freqs = position_ids[..., None].double() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def rmsnorm_forward(self, h):
        variance = h.pow(2).mean(-1, keepdim=True)
        return self.weight * (h * torch.rsqrt(variance + self.variance_epsilon))

    softmax = torch.nn.functional.softmax

    def softmax_in_input_dtype(x, dim=None, dtype=None, **kw):
        return softmax(x, dim=dim, **kw)

    m.LlamaRotaryEmbedding.forward = rope_forward
    m.LlamaRMSNorm.forward = rmsnorm_forward
    m.nn.functional.softmax = softmax_in_input_dtype


def wikitext_pages(text):
    """EleutherAI/wikitext_document_level's _generate_examples (the dataset lm-eval's
    wikitext task loads), line for line."""
    ret, pages = [], []
    for line in text.split("\n"):
        rline = line.replace("= = =", "===").replace("= =", "==").strip()
        if rline.startswith("= ") and rline.strip().endswith(" ="):
            page = "\n".join(ret)
            if page.strip():
                pages.append(page)
            ret = []
        ret.append(line)
    pages.append("\n".join(ret))
    return pages


def head_lines(src, dst, n):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        k = 0
        for line in f:
            if not line.strip():
                continue
            g.write(line)
            k += 1
            if k == n:
                break


SHIM = '''
from lm_eval.tasks.hellaswag.utils import process_docs as hellaswag_process_docs  # noqa: F401
from lm_eval.tasks.wikitext.preprocess_wikitext import process_results as wikitext_process_results  # noqa: F401
from lm_eval.tasks.wikitext.preprocess_wikitext import wikitext_detokenizer  # noqa: F401


# the llm-foundry files hold the prompts' parts: "Question: ...\\n" as query
def answer_prompt(doc):
    return doc["query"].strip() + "\\nAnswer:"


# winogrande in llm-foundry's form: context_options = sentence[:blank] + option,
# continuation = sentence[blank + 1:].strip(), as lm-eval's preprocess_winogrande builds them
def wg_gold(doc):
    return doc["gold"]


def wg_target(doc):
    return doc["continuation"]


def wg_choices(doc):
    return doc["context_options"]
'''


# lm-eval task bodies (after task/dataset lines) for every task, with lm-eval's own prompts
_MC = (
    "output_type: multiple_choice\n"
    "doc_to_choice: \"{{choices}}\"\ndoc_to_target: \"{{gold}}\"\n"
    "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
)
TASK_BODIES = {
    "piqa": "doc_to_text: !function golden_shim.answer_prompt\n" + _MC,
    "arc_easy": "doc_to_text: !function golden_shim.answer_prompt\n" + _MC,
    "arc_challenge": "doc_to_text: !function golden_shim.answer_prompt\n" + _MC,
    "openbook_qa": "doc_to_text: \"{{query}}\"\n" + _MC,
    # lm-eval's winogrande.yaml: partial scoring, acc only
    "winogrande": (
        "output_type: multiple_choice\n"
        "doc_to_text: !function golden_shim.wg_gold\n"
        "doc_to_target: !function golden_shim.wg_target\n"
        "doc_to_choice: !function golden_shim.wg_choices\n"
        "metric_list:\n  - metric: acc\n"
    ),
    # lm-eval's hellaswag.yaml
    "hellaswag": (
        "output_type: multiple_choice\nprocess_docs: !function golden_shim.hellaswag_process_docs\n"
        "doc_to_text: \"{{query}}\"\ndoc_to_target: \"{{label}}\"\ndoc_to_choice: \"choices\"\n"
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
    ),
    # lm-eval's lambada_openai.yaml
    "lambada_openai": (
        "output_type: loglikelihood\n"
        "doc_to_text: \"{{text.split(' ')[:-1]|join(' ')}}\"\n"
        "doc_to_target: \"{{' '+text.split(' ')[-1]}}\"\n"
        "metric_list:\n  - metric: perplexity\n    aggregation: perplexity\n    higher_is_better: false\n"
        "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
    ),
    # lm-eval's wikitext.yaml
    "wikitext": (
        "output_type: loglikelihood_rolling\ndoc_to_text: \"\"\n"
        "doc_to_target: !function golden_shim.wikitext_detokenizer\n"
        "process_results: !function golden_shim.wikitext_process_results\n"
        "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n  - metric: bits_per_byte\n"
    ),
}


def yaml_task(name, data, body):
    return (
        f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
        f"test_split: test\n{body}"
    )


def collect(res, names):
    """simple_evaluate's result -> (metrics {task: {metric: value}}, samples {task: [[doc, request,
    loglikelihood], ...]}), the form expected.json keeps (names: {task: lm-eval task name})."""
    metrics, samples = {}, {}
    for t, n in names.items():
        r = res["results"][n]
        metrics[t] = {k.split(",")[0]: v for k, v in r.items() if k.endswith(",none") and "stderr" not in k}
        rows = []
        for s in sorted(res["samples"][n], key=lambda s: s["doc_id"]):
            for j, resp in enumerate(s["resps"]):
                ll = resp[0][0] if isinstance(resp[0], (list, tuple)) else resp[0]
                rows.append([s["doc_id"], j, ll])
        samples[t] = rows
    for t, m in metrics.items():
        for k, v in m.items():
            assert isinstance(v, float) and math.isfinite(v), (t, k, v)
    return metrics, samples


def main():
    work = tempfile.mkdtemp(prefix="vrl_lmeval_golden.")
    tasks = os.path.join(work, "tasks")
    os.makedirs(tasks)
    with open(os.path.join(tasks, "golden_shim.py"), "w") as f:
        f.write(SHIM)
    data = {}
    for t in MC_TASKS + ["winogrande", "lambada_openai"]:
        data[t] = os.path.join(work, t + ".jsonl")
        head_lines(os.path.join(SHARED, "eval", t + ".jsonl"), data[t], TASK_DOCS)
    data["hellaswag"] = os.path.join(work, "hellaswag.jsonl")
    head_lines(os.path.join(HERE, "hellaswag.jsonl"), data["hellaswag"], TASK_DOCS)
    with open(os.path.join(SHARED, "corpora/wikitext-2-raw/wiki.test.raw"), encoding="utf-8", newline="") as f:
        pages = wikitext_pages(f.read())[:WIKI_PAGES]
    data["wikitext"] = os.path.join(work, "wikitext.jsonl")
    with open(data["wikitext"], "w", encoding="utf-8") as f:
        for p in pages:
            f.write(json.dumps({"page": p}) + "\n")

    yamls = TASK_BODIES
    names = {}
    for t, body in yamls.items():
        names[t] = "golden_" + t
        with open(os.path.join(tasks, t + ".yaml"), "w") as f:
            f.write(yaml_task(names[t], data[t], body))

    # the model folder HFLM reads: the make_model.sh weights + the NeoX tokenizer
    model = os.path.join(work, "model")
    os.makedirs(model)
    src = os.environ["VRL_GOLDEN_MODEL"]  # the folder make_model.sh built (make_expected.sh)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(src, f), model)  # follows the run folder's links
    shutil.copy(os.path.join(SHARED, "tokenizers/gpt-neox-20b.tokenizer.json"), os.path.join(model, "tokenizer.json"))
    with open(os.path.join(model, "tokenizer_config.json"), "w") as f:
        json.dump(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>",
                "model_max_length": WINDOW,
            },
            f,
        )

    torch.set_num_threads(1)
    if FLOAT64_EVERYWHERE:
        lift_float32_islands()
    res = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={model},dtype=float64,max_length={WINDOW},add_bos_token=False,device=cpu",
        tasks=list(names.values()),
        batch_size=4,
        log_samples=True,
        task_manager=TaskManager(include_path=tasks),
    )
    metrics, samples = collect(res, names)
    out = {
        "generator": {
            "lm_eval": lm_eval.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "model": "HFLM, dtype float64, max_length %d, batch_size 4, cpu" % WINDOW,
            "float64_everywhere": FLOAT64_EVERYWHERE,
        },
        "window": WINDOW,
        "task_docs": TASK_DOCS,
        "wikitext_pages": WIKI_PAGES,
        "metrics": metrics,
        "samples": samples,
    }
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    shutil.rmtree(work)
    print(json.dumps(metrics, indent=1))


if __name__ == "__main__":
    SHARED, OUT = sys.argv[1], sys.argv[2]
    FLOAT64_EVERYWHERE = "--float64-everywhere" in sys.argv[3:]
    main()
