/* The CPU build's stand-in for CUDA's <cuda_runtime.h> (fast/cuda_cpu/runtime.h). */
#include "fast/cuda_cpu/runtime.h"
