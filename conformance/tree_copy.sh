# tree_copy.sh: sourced by the mutation scripts (fast_cpu_mutation_check.sh,
# fast_cpu_hazard_mutants.sh). tree_copy ROOT DEST copies the working tree's files (tracked
# and untracked-but-not-ignored) to DEST and configures DEST/build (Release, CPU build only).
#
# When ccache is installed (scripts/deps.sh installs it; scripts/build.sh builds through it),
# the copy builds through it too, with CCACHE_BASEDIR at the deepest folder holding both
# ROOT and DEST: ccache then sees the copy's sources by the same relative paths as the
# tree's own build, so only the mutated file is compiled again (without it the copy is a
# full rebuild: ~5 CPU-minutes of the suite's plain pass per script). A cache miss only
# costs time; the objects are the compiler's either way.
tree_copy() {
  local root=$1 dest=$2 base
  (cd "$root" && git ls-files -co --exclude-standard -z) | (cd "$root" && xargs -0 cp --parents -t "$dest")
  local launch=()
  if command -v ccache >/dev/null; then
    base=$root
    while [ "$base" != / ] && [ "${dest#"$base"/}" = "$dest" ]; do base=$(dirname "$base"); done
    launch=("-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$base;ccache"
            "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$base;ccache")
  fi
  cmake -S "$dest" -B "$dest/build" -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF "${launch[@]}" >/dev/null
}
