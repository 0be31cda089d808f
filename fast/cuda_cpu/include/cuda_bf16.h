/* The CPU build's stand-in for CUDA's <cuda_bf16.h> (fast/cuda_cpu/bf16.h). */
#include "fast/cuda_cpu/bf16.h"
