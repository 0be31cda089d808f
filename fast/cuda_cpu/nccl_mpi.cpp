/* nccl_mpi.cpp: NCCL over MPI on host memory (nccl_mpi.h). */
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/deferred.h"
#include "fast/cuda_cpu/nccl_mpi.h"

struct NcclCpuComm {
    int rank, world;
    MPI_Comm mpi; /* MPI_COMM_NULL for one rank */
};

namespace {

char why[768];

ncclResult_t fail(ncclResult_t r, const char *what) {
    snprintf(why, sizeof why, "%s", what);
    return r;
}

size_t type_bytes(ncclDataType_t t) { return t == ncclFloat32 ? 4 : 2; }
MPI_Datatype mpi_type(ncclDataType_t t) { return t == ncclFloat32 ? MPI_FLOAT : MPI_UINT16_T; }

/* The collective as one operation on stream for the checkers (check.h): it reads send
 * and writes recv; ncclInvalidUsage naming the hazard, or ncclSuccess. */
ncclResult_t checked(cudaStream_t stream, const char *what, const void *send, size_t send_bytes, void *recv,
                     size_t recv_bytes) {
    if (!cuda_cpu::check::enabled()) return ncclSuccess;
    cuda_cpu::check::op_begin(stream, what);
    cuda_cpu::check::op_range(send, send_bytes, 0);
    cuda_cpu::check::op_range(recv, recv_bytes, 1);
    cuda_cpu::check::op_end();
    if (!cuda_cpu::check::op_error()) return ncclSuccess;
    snprintf(why, sizeof why, "%s", cuda_cpu::check::op_error());
    return ncclInvalidUsage;
}

ncclResult_t mpi(int rc, const char *what) { return rc == MPI_SUCCESS ? ncclSuccess : fail(ncclSystemError, what); }

/* A collective on a capturing stream would run now, not at replay: the stand-in refuses it
 * (fast/ keeps its collectives out of graphs, docs/design/kernels.md). */
ncclResult_t check(ncclComm_t c, ncclDataType_t t, int reduce, cudaStream_t stream) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (stream && cudaStreamIsCapturing(stream, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
        return fail(ncclInvalidUsage, "a collective on a capturing stream (the MPI stand-in cannot be replayed)");
    if (!c) return fail(ncclInvalidArgument, "NULL communicator");
    if (t != ncclFloat32 && t != ncclBfloat16) return fail(ncclInvalidArgument, "data type other than fp32 and bf16");
    if (reduce && t != ncclFloat32) return fail(ncclInvalidArgument, "the MPI stand-in sums fp32 only");
    /* deferred mode: the collective runs now, after only its own stream's queued work (and
     * what that waits for); NCCL's stream goes first at every later synchronisation point */
    cuda_cpu::deferred::nccl_stream(stream);
    if (cuda_cpu::deferred::drain(stream) != cudaSuccess) return fail(ncclSystemError, "queued work before it failed");
    return ncclSuccess;
}

} // namespace

const char *ncclGetErrorString(ncclResult_t r) {
    if (r == ncclSuccess) return "no error";
    return why[0] ? why : "error";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id); /* MPI_COMM_WORLD is the communicator: nothing to draw */
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    (void)id;
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "bad rank or world size");
    NcclCpuComm *c = new NcclCpuComm{rank, nranks, MPI_COMM_NULL};
    if (nranks > 1) {
        int inited = 0, size = 0, me = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            delete c;
            return fail(ncclInvalidUsage, "a communicator of several ranks needs MPI (mpirun)");
        }
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (size != nranks || me != rank) {
            delete c;
            return fail(ncclInvalidUsage, "ranks differ from MPI_COMM_WORLD's");
        }
        if (MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi) != MPI_SUCCESS) {
            delete c;
            return fail(ncclSystemError, "MPI_Comm_dup failed");
        }
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (comm && comm->mpi != MPI_COMM_NULL) MPI_Comm_free(&comm->mpi);
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    (void)op;
    ncclResult_t r = check(comm, type, 1, stream);
    if (r == ncclSuccess)
        r = checked(stream, "ncclReduceScatter", send, recvcount * type_bytes(type) * (size_t)comm->world, recv,
                    recvcount * type_bytes(type));
    if (r != ncclSuccess) return r;
    if (comm->world == 1) {
        memmove(recv, send, recvcount * type_bytes(type));
        return ncclSuccess;
    }
    return mpi(MPI_Reduce_scatter_block(send, recv, (int)recvcount, MPI_FLOAT, MPI_SUM, comm->mpi),
               "MPI_Reduce_scatter_block failed");
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    (void)op;
    ncclResult_t r = check(comm, type, 1, stream);
    if (r == ncclSuccess)
        r = checked(stream, "ncclReduce", send, count * type_bytes(type), comm->rank == root ? recv : NULL,
                    comm->rank == root ? count * type_bytes(type) : 0);
    if (r != ncclSuccess) return r;
    if (comm->world == 1) {
        memmove(recv, send, count * type_bytes(type));
        return ncclSuccess;
    }
    const int in_place = comm->rank == root && send == recv;
    return mpi(MPI_Reduce(in_place ? MPI_IN_PLACE : send, comm->rank == root ? recv : NULL, (int)count, MPI_FLOAT,
                          MPI_SUM, root, comm->mpi),
               "MPI_Reduce failed");
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
    ncclResult_t r = check(comm, type, 0, stream);
    if (r != ncclSuccess) return r;
    const size_t bytes = sendcount * type_bytes(type);
    char *mine = (char *)recv + (size_t)comm->rank * bytes;
    r = checked(stream, "ncclAllGather", send, bytes, recv, bytes * (size_t)comm->world);
    if (r != ncclSuccess) return r;
    if (comm->world == 1) {
        if (send != mine) memmove(mine, send, bytes);
        return ncclSuccess;
    }
    return mpi(MPI_Allgather(send == mine ? MPI_IN_PLACE : send, (int)sendcount, mpi_type(type), recv, (int)sendcount,
                             mpi_type(type), comm->mpi),
               "MPI_Allgather failed");
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    ncclResult_t r = check(comm, type, 0, stream);
    if (r == ncclSuccess)
        r = checked(stream, "ncclBroadcast", comm->rank == root ? send : NULL, count * type_bytes(type), recv,
                    count * type_bytes(type));
    if (r != ncclSuccess) return r;
    if (comm->rank == root && send != recv) memmove(recv, send, count * type_bytes(type));
    if (comm->world == 1) return ncclSuccess;
    return mpi(MPI_Bcast(recv, (int)count, mpi_type(type), root, comm->mpi), "MPI_Bcast failed");
}
