#!/usr/bin/env python3
"""mutant_build.py: one test program rebuilt with one source file mutated, from the build's own
objects: only the mutated file is compiled again.

    mutant_build.py BUILD_DIR TARGET SOURCE MUTATED OUT_DIR

BUILD_DIR is a configured and built tree (CMake with CMAKE_EXPORT_COMPILE_COMMANDS, on by
default in vrl); TARGET a program of it (test_golden, test_fast_cpu_vs_ref_check, ...); SOURCE
the file's path relative to the repository root (fast/ops.cu); MUTATED the mutated copy. The
mutation scripts (conformance/fast_cpu_mutation_check.sh, fast_cpu_hazard_mutants.sh,
golden/mutation_check.sh) call it once per mutant. It

  1. finds every object compiled from SOURCE in compile_commands.json (a file may be built into
     several libraries: ref/ops.c into vrl_ref32 and vrl_ref64, fast/ops.cu into the CPU layer's
     plain, check and fp32 builds);
  2. keeps those that TARGET links (its link.txt names their static libraries);
  3. compiles MUTATED with each one's exact command (quoted includes still found beside SOURCE:
     -iquote its folder), into OUT_DIR;
  4. copies each affected static library into OUT_DIR with the new member in place (ar), and
  5. relinks TARGET with those copies into OUT_DIR/bin/TARGET, printing that path.
A SOURCE compiled into TARGET itself (a test's own .cpp) is relinked as the new object directly.

The build itself is never written. Exit 0 with the path on stdout; 1 with one line on stderr
when a step fails (the compiler's own messages above it: a mutant that does not compile is the
caller's to report); 2 on a bad argument.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys


def die(code, msg):
    print(f"mutant_build.py: {msg}", file=sys.stderr)
    sys.exit(code)


def find_link_txt(build, target):
    """(directory the link runs in, link.txt path) of TARGET: CMakeFiles/TARGET.dir anywhere"""
    for d, subdirs, _ in os.walk(build):
        if os.path.basename(d) == "CMakeFiles" and f"{target}.dir" in subdirs:
            p = os.path.join(d, f"{target}.dir", "link.txt")
            if os.path.isfile(p):
                return os.path.dirname(d), p
        subdirs[:] = [s for s in subdirs if not s.startswith(("Testing", "tmp", "bin"))]
    return None, None


def main(argv):
    if len(argv) != 6:
        die(2, "usage: mutant_build.py BUILD_DIR TARGET SOURCE MUTATED OUT_DIR")
    build, target, source, mutated, out = argv[1:]
    build, mutated, out = os.path.abspath(build), os.path.abspath(mutated), os.path.abspath(out)
    db = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(db):
        die(2, f"{db}: no such file (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)")
    if not os.path.isfile(mutated):
        die(2, f"{mutated}: no such file")
    link_dir, link_txt = find_link_txt(build, target)
    if not link_txt:
        die(2, f"{build}: no target {target} (no CMakeFiles/{target}.dir/link.txt)")
    with open(link_txt) as f:
        link = shlex.split(f.read())
    with open(db) as f:
        entries = json.load(f)
    os.makedirs(os.path.join(out, "bin"), exist_ok=True)

    # 1-2: the objects built from SOURCE, and the static library each belongs to
    libs = {}  # library path as link.txt names it -> [(member name, new object path)]
    n = 0
    for e in entries:
        if not os.path.normpath(e["file"]).endswith(os.sep + os.path.normpath(source)):
            continue
        cmd = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        obj = cmd[cmd.index("-o") + 1]
        # .../CMakeFiles/LIB.dir/...: the library LIB; link.txt names lib paths relative to link_dir
        parts = os.path.normpath(os.path.join(e["directory"], obj)).split(os.sep)
        lib_name = parts[parts.index("CMakeFiles") + 1][: -len(".dir")]
        lib_dir = os.sep.join(parts[: parts.index("CMakeFiles")])
        lib_path = os.path.relpath(os.path.join(lib_dir, f"lib{lib_name}.a"), link_dir)
        own_obj = os.path.relpath(os.path.normpath(os.path.join(e["directory"], obj)), link_dir)
        own = lib_name == target and own_obj in link  # an object of TARGET itself
        if lib_path not in link and not own:
            continue
        # 3: the same compile, of the mutated file, into OUT_DIR
        n += 1
        new_obj = os.path.join(out, f"{lib_name}.{os.path.basename(obj)}")
        src_i = next(i for i, a in enumerate(cmd) if a == e["file"] or (a.endswith(source) and i > 0 and cmd[i - 1] == "-c"))
        cmd[src_i] = mutated
        cmd[cmd.index("-o") + 1] = new_obj
        cmd[1:1] = ["-iquote", os.path.dirname(e["file"])]
        r = subprocess.run(cmd, cwd=e["directory"])
        if r.returncode:
            die(1, f"{source}: the mutated copy does not compile for {lib_name}")
        if own:
            link = [new_obj if a == own_obj else a for a in link]
            continue
        libs.setdefault(lib_path, []).append((os.path.basename(obj), new_obj))
    if not n:
        die(2, f"{target} links no object built from {source}")

    # 4: each affected library copied, its member replaced
    for lib_path, members in libs.items():
        copy = os.path.join(out, os.path.basename(lib_path))
        shutil.copyfile(os.path.join(link_dir, lib_path), copy)
        for member, new_obj in members:
            staged = os.path.join(out, "member", member)
            os.makedirs(os.path.dirname(staged), exist_ok=True)
            shutil.copyfile(new_obj, staged)
            r = subprocess.run(["ar", "r", copy, staged])
            if r.returncode:
                die(1, f"ar could not put {member} into {copy}")
        link = [copy if a == lib_path else a for a in link]

    # 5: the program, relinked with the copies
    binary = os.path.join(out, "bin", target)
    link[link.index("-o") + 1] = binary
    r = subprocess.run(link, cwd=link_dir)
    if r.returncode:
        die(1, f"{target} does not link with the mutated {source}")
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
