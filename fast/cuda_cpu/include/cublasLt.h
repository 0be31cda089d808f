/* The CPU build's stand-in for CUDA's <cublasLt.h> (fast/cuda_cpu/cublaslt.h). */
#include "fast/cuda_cpu/cublaslt.h"
