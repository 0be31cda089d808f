#!/usr/bin/env python3
"""make_golden.py: golden token ids from the PyPI `tokenizers` library.

Run once from the repository root (pip install tokenizers; needs the zstd command and
../shared/data) and commit the output, conformance/tokenizer/golden.json:
    python3 conformance/tokenizer/make_golden.py

Cases are hand-written (stored as hex bytes so invalid UTF-8 can be expressed) or
references into ../shared/data: a file, optionally the line of a .jsonl.zst whose
"text" field is taken, and a byte range of that text. No corpus text lands in the repo.

Invalid UTF-8: a Python str cannot hold it, so the golden ids are HF's ids for
bytes.decode("utf-8", "replace") (each maximal invalid subpart -> U+FFFD), which is the
rule the C tokenizer applies to raw bytes.
"""
import json, os, subprocess, sys
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data")
TOKENIZERS = ["gpt-neox-20b", "gpt2"]

HAND = [
    ("empty", b""),
    ("hello", "Hello world".encode()),
    ("emoji", "👋🏽 hello 🇫🇷 family 👨‍👩‍👧 ok 😀😀😀!".encode()),
    ("cjk", "日本語のテキスト、中文文本。한국어 텍스트 漢字かなカナ".encode()),
    ("combining", "Cafe\u0301 A\u030a \u212b n\u0303 \u1100\u1161\u11a8 o\u0308\u0304 e\u0301\u0301".encode()),
    ("spaces", b"a  b   c    d\n\n\n  \t x   \n"),
    ("leading_trailing", b"   hello   "),
    ("space_run_40", b"x" + b" " * 40 + b"y" + b" " * 23 + b"z" + b" " * 25),
    ("newlines", b"\n\n\n\nfoo\r\n\r\nbar\n \n\t\t\n"),
    ("contractions", b"it's I'm we've they'll he'd don't THEY'RE o'clock 'twas '''s"),
    ("digits", "1234567890 3.14159 1,000,000 ٣٤٥ ½ ²".encode()),
    ("special_alone", b"<|endoftext|>"),
    ("special_inside", b"foo<|endoftext|>bar <|endoftext|> <|padding|>x<|endoftext|><|endoftext|>"),
    ("special_partial", b"<|endoftext| <|endoftext <|endoftext|>>"),
    ("unicode_spaces", "a\u00a0b\u3000c\u2028d\u0085e \u2003 f".encode()),
    ("punct_run", b"!!!!???...---===*** ;;" + b"!" * 300),
    ("long_word", b"a" * 3000),
    ("long_spaces", b" " * 5000 + b"end"),
    ("code", b"int main(void) {\n    return x->y[3] >= 0 ? 1 : -1; // done\n}\n"),
    ("invalid_ff", b"abc\xff\xfedef"),
    ("invalid_c3_28", b"\xc3\x28 x"),
    ("invalid_truncated", b"euro \xe2\x82 and \xf0\x9f\x98 end"),
    ("invalid_surrogate", b"\xed\xa0\x80 s"),
    ("invalid_overlong", b"\xc0\xaf \xe0\x80\xaf"),
    ("invalid_beyond", b"\xf4\x90\x80\x80 \xf5\x80"),
    ("invalid_lone_cont", b"\x80\x80x\xbf"),
    ("invalid_end", b"tail \xe2"),
]


def zst_lines(path):
    out = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    return out.split(b"\n")


def char_boundary(b, i):
    while 0 < i < len(b) and (b[i] & 0xC0) == 0x80:
        i -= 1
    return i


def refs():
    """(name, source dict, bytes) for the excerpts taken from ../shared/data."""
    out = []
    wiki = "corpora/wikitext-2-raw/wiki.test.raw"
    raw = open(os.path.join(DATA, wiki), "rb").read()
    end = raw.index(b"\n", 60000) + 1
    out.append(("wikitext2_test_head", {"file": wiki, "offset": 0, "length": end}, raw[:end]))
    mid = raw.index(b"\n", 700000) + 1
    end = raw.index(b"\n", mid + 20000) + 1
    out.append(("wikitext2_test_mid", {"file": wiki, "offset": mid, "length": end - mid}, raw[mid:end]))
    val = "corpora/slimpajama-mini/validation/chunk1/example_holdout_0.jsonl.zst"
    seen = {}
    for ln, line in enumerate(zst_lines(os.path.join(DATA, val))):
        if not line.strip():
            continue
        d = json.loads(line)
        dom = d["meta"]["redpajama_set_name"]
        if seen.get(dom, 0) >= 2:
            continue
        seen[dom] = seen.get(dom, 0) + 1
        text = d["text"].encode("utf-8", "surrogatepass")
        n = char_boundary(text, min(len(text), 6000))
        out.append((f"slimpajama_{dom}_{seen[dom]}", {"file": val, "line": ln, "offset": 0, "length": n}, text[:n]))
    return out


def main():
    toks = {n: Tokenizer.from_file(os.path.join(DATA, "tokenizers", n + ".tokenizer.json")) for n in TOKENIZERS}
    cases = [{"name": n, "hex": b.hex()} for n, b in HAND]
    blobs = [b for _, b in HAND]
    for n, src, b in refs():
        cases.append(dict(name=n, **src))
        blobs.append(b)
    for c, b in zip(cases, blobs):
        text = b.decode("utf-8", "replace")
        c["ids"] = {}
        for n, t in toks.items():
            ids = t.encode(text).ids
            c["ids"][n] = ids
            back = t.decode(ids, skip_special_tokens=False)
            if t.normalizer is None and back != text:
                print(f"note: {n} does not round-trip {c['name']}", file=sys.stderr)
    path = os.path.join(ROOT, "conformance", "tokenizer", "golden.json")
    with open(path, "w") as f:
        f.write('{"tokenizers": ' + json.dumps(TOKENIZERS) + ',\n "cases": [\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n]}\n")
    print(f"{path}: {len(cases)} cases, {os.path.getsize(path)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
