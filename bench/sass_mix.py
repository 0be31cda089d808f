#!/usr/bin/env python3
"""sass_mix.py: the instruction mix of compiled kernels, read from their SASS (no GPU).

    sass_mix.py SASS [--kernels REGEX] [--table | --mma-table]

SASS is the text `cuobjdump -sass FILE.cubin` (or `nvdisasm -c`) prints. For every kernel it
counts the instructions by class (FFMA, FMUL/FADD, LDS by width, LDSM, LDG, STG, SHFL, MUFU,
HMMA, BAR, STL/LDL, ...) in the whole kernel and in its hot loops: the innermost loops (the range
of a backward branch that holds an FFMA, or an HMMA in a kernel with tensor-core loops, and no
smaller such range inside or across it). Their instructions per FFMA (`ipf`, weighted by the
loops' FFMAs) is what bench/roofline.py turns into a rate: a warp scheduler issues one
instruction a clock, so a loop of ipf instructions per FFMA reaches at most 1/ipf of the fp32
peak (issue bound; latency, occupancy and bank conflicts not modelled). A tensor-core kernel's
hot loops are those holding an HMMA (mma.sync), and its figure is instructions per HMMA (`iph`):
a scheduler issues at most one HMMA per iph clocks, where the tensor core at the dense peak
would take one every 4.

--table prints the lines bench/attention_sass_mix.txt keeps for the CUDA-core kernels (one per
kernel): kernel, ipf, instructions and FFMAs in the hot loops, and the classes counted there;
--mma-table the same for the tensor-core kernels: kernel, iph, instructions and HMMAs in the hot
loops, and the classes that feed and follow the mma (ldmatrix, softmax arithmetic, exp2, ...,
and LDGSTS: cp.async tile loads).
"""
import re
import sys

CLASSES = ["FFMA", "FMUL", "FADD", "HMMA", "LDSM", "LDS.128", "LDS.64", "LDS.32", "LDS.U16", "STS", "LDG", "STG",
           "SHFL", "MUFU", "BAR", "F2FP (bf16 pack)", "STL", "LDL", "PRMT/SHF/IMAD.U32 (bf16 unpack)", "LDGSTS",
           "other"]


def classify(op, text):
    base = op.split(".")[0]
    # LDGSTS: cp.async, global to shared without a register (its own class: not an LDG, not an STS)
    if base in ("FFMA", "FMUL", "FADD", "HMMA", "LDSM", "SHFL", "MUFU", "BAR", "STS", "LDG", "STG", "STL", "LDL",
                "LDGSTS"):
        return base
    if base == "F2FP":  # two fp32 to a bf16 pair: P or dS packed as the next mma's A fragment
        return "F2FP (bf16 pack)"
    if base == "LDS":
        for w in ("128", "64", "U16", "S16", "U8"):
            if f".{w}" in op:
                return "LDS.U16" if w in ("U16", "S16", "U8") else f"LDS.{w}"
        return "LDS.32"
    # bf16 -> fp32 is a 16-bit shift or byte permute of the word (IMAD.U32 x, 0x10000 is a shift)
    if base in ("PRMT", "SHF") or (op.startswith("IMAD.U32") and "0x10000" in text):
        return "PRMT/SHF/IMAD.U32 (bf16 unpack)"
    return "other"


def parse(path):
    """{kernel: [(address, opcode, text)]} in program order."""
    kernels, cur = {}, None
    line_re = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r"Function : (\S+)", line)
            if m:
                cur = kernels.setdefault(m.group(1), [])
                continue
            m = line_re.search(line)
            if m and cur is not None:
                text = m.group(2)
                text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
                op = text.split()[0] if text.split() else ""
                cur.append((int(m.group(1), 16), op, text))
    return kernels


def loops(insts):
    """[(start index, end index)] of the backward branches' ranges."""
    index = {a: i for i, (a, _, _) in enumerate(insts)}
    out = []
    for i, (addr, op, text) in enumerate(insts):
        if op.split(".")[0] != "BRA":
            continue
        m = re.search(r"BRA(?:\.\S+)?\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target <= addr and target in index:
            out.append((index[target], i))
    return out


def mix(insts, lo=0, hi=None):
    counts = dict.fromkeys(CLASSES, 0)
    for _, op, text in insts[lo:(len(insts) if hi is None else hi + 1)]:
        if op in ("NOP",):
            continue
        counts[classify(op, text)] += 1
    return counts


def hot_loops(insts):
    """[(instructions, counts)] of the innermost loops holding an HMMA, or where no loop holds
    one (a CUDA-core kernel), an FFMA"""
    ranges = [(lo, hi, mix(insts, lo, hi)) for lo, hi in loops(insts)]
    # a tensor-core kernel's FFMA-only loops (an epilogue's) are not where its time goes
    key = "HMMA" if any(c["HMMA"] for _, _, c in ranges) else "FFMA"
    cands = [(lo, hi, c) for lo, hi, c in ranges if c[key]]
    # innermost: no smaller hot range inside or across it (a range that crosses another is a
    # back edge from code the compiler moved out of line, e.g. a `continue` path, not a body)
    out = []
    for lo, hi, c in cands:
        if not any(h2 - l2 < hi - lo and l2 <= hi and lo <= h2 for l2, h2, _ in cands):
            out.append((sum(c.values()), c))
    return out


def demangle(name):
    m = re.match(r"_Z(\d+)", name)
    if not m:
        return name
    n = int(m.group(1))
    base = name[m.end():m.end() + n]
    t = re.match(r"ILi(\d+)E", name[m.end() + n:])
    return f"{base}<{t.group(1)}>" if t else base


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit("usage: sass_mix.py SASS [--kernels REGEX] [--table | --mma-table]")
    pattern = re.compile(argv[argv.index("--kernels") + 1]) if "--kernels" in argv else None
    table = "--table" in argv
    mma_table = "--mma-table" in argv
    try:
        kernels = parse(argv[0])
    except OSError as e:
        sys.exit(f"sass_mix.py: {argv[0]}: {e.strerror}")
    if not kernels:
        sys.exit(f"sass_mix.py: {argv[0]}: no 'Function :' in it (not cuobjdump -sass output?)")
    shown = ["LDS.128", "LDS.32", "LDS.U16", "PRMT/SHF/IMAD.U32 (bf16 unpack)", "SHFL", "MUFU", "STL", "LDL"]
    shown_mma = ["LDSM", "FFMA", "FMUL", "FADD", "MUFU", "SHFL", "F2FP (bf16 pack)", "BAR", "LDG", "STS", "STL", "LDL",
                 "LDGSTS"]
    if table:
        print("# kernel ipf hot_instructions hot_FFMA " + " ".join(c.split(" ")[0] for c in shown))
    if mma_table:
        print("# kernel iph hot_instructions hot_HMMA " + " ".join(c.split(" ")[0] for c in shown_mma))
    for name in sorted(kernels, key=demangle):
        short = demangle(name)
        if pattern and not pattern.search(short):
            continue
        insts = kernels[name]
        hot = hot_loops(insts)
        n = sum(h[0] for h in hot)
        tot = {c: sum(h[1][c] for h in hot) for c in CLASSES}
        unit = "HMMA" if tot["HMMA"] else "FFMA"
        per = n / tot[unit] if tot[unit] else 0.0
        if table or mma_table:
            if (unit == "HMMA") == mma_table:  # each table keeps its own kind of kernel
                cols = shown_mma if mma_table else shown
                print(f"{short} {per:.3f} {n} {tot[unit]} " + " ".join(str(tot[c]) for c in cols))
            continue
        allc = mix(insts)
        print(f"{short}: {len(insts)} instructions; FFMA {allc['FFMA']}, LDS.128 {allc['LDS.128']}, "
              f"LDS.U16 {allc['LDS.U16']}, LDSM {allc['LDSM']}, LDG {allc['LDG']}, STG {allc['STG']}, "
              f"HMMA {allc['HMMA']}, LDGSTS {allc['LDGSTS']}, STL/LDL {allc['STL']}/{allc['LDL']}")
        for k, (cnt, c) in enumerate(hot):
            parts = ", ".join(f"{cl.split(' ')[0]} {c[cl]}" for cl in CLASSES if c[cl])
            print(f"  hot loop {k + 1}: {cnt} instructions, {c[unit] / cnt:.2f} {unit}/instruction: {parts}")
        if hot and unit == "HMMA":
            print(f"  hot loops: {per:.2f} instructions per HMMA (issue bound: one HMMA per {per:.2f} clocks per "
                  f"scheduler, {100 * 4 / per:.0f}% of the dense tensor-core peak's one per 4)")
        elif hot:
            print(f"  hot loops: {per:.2f} instructions per FFMA (fp32 issue bound {100 / per:.0f}% of peak)")

if __name__ == "__main__":
    main(sys.argv[1:])
