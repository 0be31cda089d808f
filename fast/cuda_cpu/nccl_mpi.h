/* nccl_mpi.h: the NCCL calls fast/zero.cu makes, carried over MPI on host memory
 * (nccl_mpi.cpp), so `mpirun -np W vrl train --device cuda-cpu` runs fast/'s ZeRO-2 path.
 *
 * Every call is a blocking MPI collective on a duplicate of MPI_COMM_WORLD, done when it
 * returns; ncclGroupStart/End are no-ops because every rank issues the same calls in the
 * same order. A one-rank communicator needs no MPI at all (plain copies). Reductions are
 * fp32 sums; bf16 is only moved (all-gather, broadcast). */
#ifndef VRL_CUDA_CPU_NCCL_MPI_H
#define VRL_CUDA_CPU_NCCL_MPI_H

#include <stddef.h>

#include "fast/cuda_cpu/runtime.h"

enum ncclResult_t { ncclSuccess = 0, ncclSystemError = 2, ncclInvalidArgument = 4, ncclInvalidUsage = 5 };
enum ncclDataType_t { ncclFloat32 = 7, ncclBfloat16 = 9 };
enum ncclRedOp_t { ncclSum = 0 };
typedef struct {
    char internal[128];
} ncclUniqueId;
typedef struct NcclCpuComm *ncclComm_t;

const char *ncclGetErrorString(ncclResult_t r);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream);

#endif
