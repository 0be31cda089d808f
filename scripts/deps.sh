#!/usr/bin/env bash
# deps.sh: install the Debian packages vrl builds with, only those that are missing.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run again.
set -euo pipefail

VRL_PACKAGES=(
  build-essential cmake pkg-config
  libopenblas-dev      # matrix products of the reference
  libomp-dev           # LLVM OpenMP: the reference's threads (ref/threads.h), also under gcc
  libcriterion-dev     # the test framework
  libjansson-dev       # JSON: config.json, safetensors headers, jsonl data
  libzstd-dev          # .jsonl.zst corpora
  libpcre2-dev         # the GPT-2 pre-tokenizer regex
  libutf8proc-dev      # NFC normalisation
  libprotobuf-c-dev protobuf-c-compiler libisal-dev  # TensorBoard events: Event protobuf, CRC-32C
  ccache               # the mutation tests rebuild a copy of the tree: only the mutated file, not all
  gnuplot-nox          # PNG plots
  clang libclang-rt-dev  # libFuzzer + sanitizers: fuzz/ in scripts/test.sh's second build
  libopenmpi-dev openmpi-bin  # `mpirun -np N vrl train`: data-parallel training (docs/distributed.md)
)

missing=()
for p in "${VRL_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "vrl: installing missing Debian packages: ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
    command -v sudo >/dev/null || { echo "vrl: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  else
    SUDO=
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
