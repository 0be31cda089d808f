#!/usr/bin/env bash
# test_attention_option.sh: `--attention flash|mma|wgmma|cudnn` (docs/design/kernels.md, "Attention through
# cuDNN", "Attention on tensor cores") where it cannot run: the reference (--device cpu) has
# one attention and refuses the flag; the CPU layer (--device cuda-cpu) runs flash and mma and
# refuses cudnn, saying cuDNN needs a GPU; a bad name is refused. Each refusal is one stderr line, a non-zero exit, no run folder.
# `--attention mma` is the default: it gives the same bytes as no flag at all; flash trains too.
# `--attention wgmma` (fast/attention_wgmma_forward.cu and attention_wgmma_backward.cu): on the tiny
# model (hd 8, which the wgmma kernels leave to mma's) the bytes of mma, RoPE's pass writing the bits mma's
# fused rotation writes; at hd 64 (a config of 2 heads of 64) and T = 100 other bytes than mma's
# (T past mma's 64-key tile: its softmax rescales where the wgmma forward's one 128-key tile does
# not; at T <= 64 the two sum alike on the CPU layer and agree bit for bit); its numbers against
# ref in test_fast_cpu_vs_ref_wgmma_attention.
# `--gemm cublaslt|wgmma` likewise (docs/fast.md "Options"): refused on --device cpu and for a bad name;
# cublaslt is the default (the same bytes as no flag); wgmma (fast/gemm_wgmma.cu) trains on the CPU
# layer to other bits (its sums' order), its numbers in test_fast_cpu_vs_ref_wgmma.
# usage: test_attention_option.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

# expect_refusal NAME RC PATTERN CMD...: exit RC, exactly one stderr line matching PATTERN
# (vrl train exits 1 on an error, vrl eval 2 on a bad flag).
expect_refusal() {
  local name=$1 want=$2 pattern=$3; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then
    passes=$((passes + 1)); echo "ok   $name: $(cat "$tmp/err")"
  else
    fails=$((fails + 1)); echo "FAIL $name: exit $rc (want $want), $lines lines, expected /$pattern/:"; cat "$tmp/err"
  fi
}

T="$VRL train --quiet --model tiny --batch 2 --seq 32 --steps 2 --synthetic-tokens 4096"

expect_refusal train_cpu_refuses 1 "^vrl train: --attention flash: --device cpu has no such option" \
  $T --device cpu --attention flash --out "$tmp/r1"
check no_folder_cpu test ! -e "$tmp/r1"
expect_refusal train_cuda_cpu_refuses_cudnn 1 "^vrl train: --attention cudnn: cuDNN needs a GPU; --device cuda-cpu runs fast/'s own kernels only (--attention flash, mma or wgmma)" \
  $T --device cuda-cpu --attention cudnn --out "$tmp/r2"
check no_folder_cuda_cpu test ! -e "$tmp/r2"
expect_refusal train_bad_name 1 "^vrl train: --attention: \"tensor\" is not flash, mma, wgmma or cudnn" \
  $T --device cuda-cpu --attention tensor --out "$tmp/r3"

# mma (the tensor-core forward and backward) is what runs without the flag: byte-identical weights
$T --device cuda-cpu --out "$tmp/plain" 2>"$tmp/plain.err" || { echo "FAIL plain cuda-cpu run:"; cat "$tmp/plain.err"; exit 1; }
check train_cuda_cpu_mma $T --device cuda-cpu --attention mma --out "$tmp/mma"
check mma_is_the_default cmp "$tmp/plain/model.safetensors" "$tmp/mma/model.safetensors"
# flash (the CUDA-core kernels) trains on the CPU layer, to other bits (P stays fp32 before P·V);
# its numbers: test_fast_cpu_vs_ref_flash
check train_cuda_cpu_flash $T --device cuda-cpu --attention flash --out "$tmp/flash"
check flash_writes_weights test -s "$tmp/flash/model.safetensors"
check flash_is_not_mma bash -c "! cmp -s '$tmp/plain/model.safetensors' '$tmp/flash/model.safetensors'"
check train_cuda_cpu_wgmma $T --device cuda-cpu --attention wgmma --out "$tmp/wgattn"
check wgmma_hd8_is_mma cmp "$tmp/plain/model.safetensors" "$tmp/wgattn/model.safetensors"
printf '{"model_type": "llama", "hidden_size": 128, "intermediate_size": 64, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 64, "max_position_embeddings": 128}\n' >"$tmp/hd64.json"
H="$VRL train --quiet --model $tmp/hd64.json --batch 2 --seq 100 --steps 2 --synthetic-tokens 4096 --device cuda-cpu"
check train_hd64_mma $H --out "$tmp/hd64_mma"
check train_hd64_wgmma $H --attention wgmma --out "$tmp/hd64_wgmma"
check wgmma_hd64_is_not_mma bash -c "! cmp -s '$tmp/hd64_mma/model.safetensors' '$tmp/hd64_wgmma/model.safetensors'"

expect_refusal train_cpu_refuses_gemm 1 "^vrl train: --gemm wgmma: --device cpu has no such option" \
  $T --device cpu --gemm wgmma --out "$tmp/g1"
expect_refusal train_bad_gemm 1 "^vrl train: --gemm: \"cutlass\" is not cublaslt or wgmma" \
  $T --device cuda-cpu --gemm cutlass --out "$tmp/g2"
check no_folder_gemm test ! -e "$tmp/g1" -a ! -e "$tmp/g2"
check train_cuda_cpu_cublaslt $T --device cuda-cpu --gemm cublaslt --out "$tmp/cublaslt"
check cublaslt_is_the_default cmp "$tmp/plain/model.safetensors" "$tmp/cublaslt/model.safetensors"
# the tiny model's products are too short for the two sums' orders to round apart in two steps: small's
S="$VRL train --quiet --model small --batch 2 --seq 32 --steps 2 --synthetic-tokens 4096 --device cuda-cpu"
check train_small_cublaslt $S --out "$tmp/small"
check train_small_wgmma $S --gemm wgmma --out "$tmp/wgmma"
check wgmma_is_not_cublaslt bash -c "! cmp -s '$tmp/small/model.safetensors' '$tmp/wgmma/model.safetensors'"

E="$VRL eval --ckpt $tmp/plain --tasks none --text $tmp/plain/config.json --seq 32"
expect_refusal eval_cpu_refuses 2 "^vrl eval: --attention cudnn: --device cpu has no such option" \
  $E --device cpu --attention cudnn --out "$tmp/e1.json"
expect_refusal eval_cuda_cpu_refuses_cudnn 2 "^vrl eval: --attention cudnn: cuDNN needs a GPU" \
  $E --device cuda-cpu --attention cudnn --out "$tmp/e2.json"
check no_eval_output test ! -e "$tmp/e1.json" -a ! -e "$tmp/e2.json"
finish
