/* The CPU build's stand-in for <nccl.h>: NCCL's collectives over MPI (fast/cuda_cpu/nccl_mpi.h). */
#include "fast/cuda_cpu/nccl_mpi.h"
