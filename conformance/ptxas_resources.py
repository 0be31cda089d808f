#!/usr/bin/env python3
"""ptxas_resources.py: ptxas' resource report (nvcc -Xptxas -v) against fast/'s occupancy floors.

    ptxas_resources.py FLOORS REPORT... [PTX...] [--markdown]

Each REPORT is the stderr of one `nvcc -cubin -arch=sm_90 -Xptxas -v` compile; each PTX (a
.ptx file, nvcc -keep) gives the kernels' __launch_bounds__ (.maxntid), and a floor line whose
block differs from its kernel's bound fails (the table's block must be the launch's). For every entry
function it reports it reads the registers per thread, the static shared memory, the stack frame
and the spill stores and loads; FLOORS (fast/occupancy_floors.txt) gives its block size and the
occupancy it must keep. It prints one row per kernel and exits 1 when any kernel spills, falls
under its floor, or when a line of FLOORS names no compiled kernel (a stale line), and 2 on a
malformed input. A kernel that no line names gets the table's default line (`*`), so a new
kernel is covered the day it is written.

Occupancy on an H100 (sm_90), the CUDA occupancy calculator's formula for compute
capability 9.0 (65536 registers, 64 warps, 32 blocks and 228 KiB shared memory per SM):
    warps/block  = ceil(block / 32)
    by registers = floor(floor(65536 / (ceil(regs * 32 / 256) * 256)) / 4) * 4 warps per SM
                   (registers are given out 256 at a time per warp, warps 4 at a time), / warps/block
    by shared    = floor(233472 / (smem + 1024)) blocks (1 KiB per block is the system's)
    by threads   = floor(64 / warps/block) blocks, and never over 32 blocks
    occupancy    = min(those) * warps/block / 64
The shared memory is the static one ptxas reports (fast/ launches no kernel with dynamic
shared memory); the split between L1 and shared memory is assumed at its largest, as the
driver picks it for a kernel that needs it.
"""
import fnmatch
import re
import sys

REGS_PER_SM = 65536
WARPS_PER_SM = 64
BLOCKS_PER_SM = 32
SMEM_PER_SM = 233472       # 228 KiB
SMEM_RESERVED = 1024       # per block, sm_80 and later
REG_UNIT = 256             # registers given to a warp at a time
WARP_UNIT = 4              # warps given at a time (one per SM sub-partition)


def occupancy(regs, smem, block):
    """(blocks per SM, occupancy in [0, 1]) on sm_90 (the formula above)."""
    wpb = (block + 31) // 32
    per_warp = -(-regs * 32 // REG_UNIT) * REG_UNIT
    warps_reg = (REGS_PER_SM // per_warp) // WARP_UNIT * WARP_UNIT if per_warp else WARPS_PER_SM
    limits = [warps_reg // wpb, SMEM_PER_SM // (smem + SMEM_RESERVED), WARPS_PER_SM // wpb, BLOCKS_PER_SM]
    blocks = min(limits)
    return blocks, blocks * wpb / WARPS_PER_SM


def demangle(mangled):
    """'_Z24attention_forward_kernelILi64EEv...' -> 'attention_forward_kernel<64>' (the Itanium
    forms fast/'s kernels use: a plain name, then integer, float or named-type template
    arguments); anything else is returned as it is."""
    m = re.match(r"_Z(\d+)", mangled)
    if not m:
        return mangled
    n, pos = int(m.group(1)), m.end()
    name = mangled[pos:pos + n]
    pos += n
    if mangled[pos:pos + 1] != "I":
        return name
    pos += 1
    args = []
    while pos < len(mangled) and mangled[pos] != "E":
        t = re.match(r"Li(-?\d+)E|(\d+)|([a-z])", mangled[pos:])
        if not t:
            return mangled
        if t.group(1) is not None:
            args.append(t.group(1))
            pos += t.end()
        elif t.group(2) is not None:
            ln = int(t.group(2))
            start = pos + len(t.group(2))
            tname = mangled[start:start + ln]
            args.append("bf16" if tname == "__nv_bfloat16" else tname)
            pos = start + ln
        else:
            args.append({"f": "float", "d": "double", "i": "int"}.get(t.group(3), t.group(3)))
            pos += 1
    return f"{name}<{','.join(args)}>"


def parse_report(path):
    """[(kernel, regs, smem, stack, spill_st, spill_ld)] of one ptxas -v report."""
    kernels, cur = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r"Compiling entry function '([^']+)' for 'sm_(\d+)", line)
            if m:
                cur = {"name": demangle(m.group(1)), "stack": 0, "st": 0, "ld": 0}
                continue
            if cur is None:
                continue
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                cur["stack"], cur["st"], cur["ld"] = map(int, m.groups())
                continue
            m = re.search(r"Used (\d+) registers", line)
            if m:
                s = re.search(r"(\d+) bytes smem", line)
                kernels.append((cur["name"], int(m.group(1)), int(s.group(1)) if s else 0,
                                cur["stack"], cur["st"], cur["ld"]))
                cur = None
    return kernels


def parse_ptx_bounds(path):
    """{kernel: threads} of the entries of one .ptx file that declare .maxntid"""
    bounds, cur = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r"\.entry\s+(\S+?)\(", line)
            if m:
                cur = demangle(m.group(1))
                continue
            m = re.match(r"\s*\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", line)
            if m and cur:
                bounds[cur] = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
            if line.startswith("{"):
                cur = None
    return bounds


def parse_floors(path):
    """[(pattern, block, floor %, why)] in file order; the default line's pattern is '*'."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            try:
                if len(parts) < 4:
                    raise ValueError
                block, floor = int(parts[1]), float(parts[2])
                if not 1 <= block <= 1024 or not 0 <= floor <= 100:
                    raise ValueError
            except ValueError:
                sys.exit(f"ptxas_resources.py: {path}:{no}: want 'KERNEL BLOCK FLOOR% WHY' "
                         f"(block 1-1024, floor 0-100): {line}")
            rows.append((parts[0], block, floor, parts[3]))
    if not any(r[0] == "*" for r in rows):
        sys.exit(f"ptxas_resources.py: {path}: no default line ('* BLOCK FLOOR% WHY')")
    return rows


def floor_of(floors, name):
    """The line for kernel name: its exact name, else the first glob that matches, else '*'."""
    for r in floors:
        if r[0] == name:
            return r
    for r in floors:
        if r[0] != "*" and fnmatch.fnmatchcase(name, r[0]):
            return r
    return next(r for r in floors if r[0] == "*")


def main(argv):
    markdown = "--markdown" in argv
    args = [a for a in argv if a != "--markdown"]
    if len(args) < 2:
        sys.exit("usage: ptxas_resources.py FLOORS REPORT... [PTX...] [--markdown]")
    floors = parse_floors(args[0])
    kernels, bounds = [], {}
    for path in args[1:]:
        try:
            if path.endswith(".ptx"):
                bounds.update(parse_ptx_bounds(path))
            else:
                kernels += parse_report(path)
        except OSError as e:
            print(f"ptxas_resources.py: {path}: {e.strerror}", file=sys.stderr)
            return 2
    if not kernels:
        print(f"ptxas_resources.py: no entry function in {' '.join(args[1:])} (not a -Xptxas -v report?)",
              file=sys.stderr)
        return 2
    used, fails, rows = set(), [], []
    for name, regs, smem, stack, st, ld in sorted(kernels):
        rule = floor_of(floors, name)
        used.add(rule[0])
        pattern, block, floor, _ = rule
        blocks, occ = occupancy(regs, smem, block)
        verdict = "ok"
        if name in bounds and bounds[name] != block:
            verdict = "WRONG BLOCK"
            fails.append(f"{name}: {args[0]} gives block {block} ('{pattern}') but its __launch_bounds__ "
                         f"is {bounds[name]}")
        if st or ld:
            verdict = "SPILLS"
            fails.append(f"{name}: spills {st} B stored, {ld} B loaded ({regs} registers)")
        if 100 * occ + 1e-9 < floor:
            verdict = "UNDER FLOOR" if verdict == "ok" else verdict + ", UNDER FLOOR"
            fails.append(f"{name}: occupancy {100 * occ:.1f}% under its floor {floor:g}% "
                         f"({regs} registers, {smem} B shared, block {block}: {blocks} blocks/SM)")
        rows.append((name, block, regs, st, ld, stack, smem, blocks, 100 * occ, floor,
                     "default" if pattern == "*" else pattern, verdict))
    for pattern, _, _, _ in floors:
        if pattern != "*" and pattern not in used:
            fails.append(f"{args[0]}: the line '{pattern}' names no compiled kernel (stale)")
    if markdown:
        print("| kernel | block | registers | spill st/ld (B) | stack (B) | shared (B) | blocks/SM | occupancy | floor |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} / {r[4]} | {r[5]} | {r[6]} | {r[7]} | {r[8]:.1f}% | {r[9]:g}% |")
    else:
        print(f"{'kernel':40s} {'block':>5s} {'regs':>4s} {'spill st/ld':>11s} {'stack':>5s} {'smem':>6s} "
              f"{'blk/SM':>6s} {'occ %':>6s} {'floor':>5s}  verdict")
        for r in rows:
            print(f"{r[0]:40s} {r[1]:5d} {r[2]:4d} {r[3]:5d}/{r[4]:<5d} {r[5]:5d} {r[6]:6d} {r[7]:6d} "
                  f"{r[8]:6.1f} {r[9]:5g}  {r[11]}")
    for f in fails:
        print("FAIL " + f)
    print(f"{len(rows)} kernels, {len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
