/* attention_cudnn.h: causal attention on tensor cores through cuDNN's fused SDPA
 * (cudnn-frontend), behind a C interface (fast/attention_cudnn.cpp, docs/design/kernels.md
 * "Attention through cuDNN"). Built only when CMake found cuDNN and the frontend headers
 * (VRL_HAVE_CUDNN); fast/model.cu calls it for `--attention cudnn`.
 *
 * Same tensors and meaning as fast/attention.cuh's flash attention_forward/backward: rows of
 * [B,T,heads·hd], bf16, read in place through strides (no transposes, no copies); query head
 * h reads kv head h / (NH/NKV) (GQA/MQA); scale 1/√hd; causal. lse is cuDNN's softmax
 * statistics, the natural-log log-sum-exp of each scaled score row in [B,NH,T] fp32: the
 * layout and meaning of flash's lse, so no conversion either way.
 *
 * Every call returns 0, or -1 with one vrl_error line naming the cuDNN call and the shape;
 * it never aborts. Pointers to bf16 are void * (C has no bf16 type); stream is a
 * cudaStream_t. */
#ifndef VRL_FAST_ATTENTION_CUDNN_H
#define VRL_FAST_ATTENTION_CUDNN_H

#ifdef __cplusplus
extern "C" {
#endif

/* A model's cuDNN attention: its workspaces, one per shape, allocated on the shape's first
 * call. The cuDNN handle and the graph cache (one graph per (B, T, NH, NKV, hd, row
 * strides, forward|backward), built on its first call in the process, reused by every later call and
 * every model) belong to the process and last until it ends. */
typedef struct CudnnAttention CudnnAttention;

/* Loads cuDNN (dlopen) once per process: 0, or -1 with vrl_error when no libcudnn of the major
 * version built against can be loaded. fast_set_attention("cudnn") and cudnn_attention_create
 * call it, so a machine without cuDNN refuses `--attention cudnn` with the loader's reason. */
int cudnn_attention_load(void);
/* NULL with vrl_error when cuDNN cannot start (the first call makes the process's handle). */
CudnnAttention *cudnn_attention_create(void);
/* Frees the model's workspaces (the process's graphs stay). NULL is fine. */
void cudnn_attention_destroy(CudnnAttention *ca);

/* out [B,T,NH*hd] bf16, lse [B,NH,T] fp32, q [B,T,ld_q], k [B,T,ld_k] and v [B,T,ld_v] bf16 (NH*hd,
 * NKV*hd, NKV*hd used: rows ld apart, views into the fused projection or tensors of their own) */
int cudnn_attention_forward(CudnnAttention *ca, void *stream, void *out, float *lse, const void *q, int ld_q,
                            const void *k, int ld_k, const void *v, int ld_v, int B, int T, int NH, int NKV, int hd);
/* The deterministic backward algorithm (cuDNN's, requested): the same inputs give the same
 * bits. dq [B,T,ld_q] and dk [B,T,ld_k] bf16 (their inputs' strides), dv [B,T,NKV*hd] bf16
 * contiguous (all written, not added); dout and out [B,T,NH*hd], q, k, v (v's rows ld_v apart)
 * and lse as the forward's. */
int cudnn_attention_backward(CudnnAttention *ca, void *stream, void *dq, int ld_q, void *dk, int ld_k, void *dv,
                             const void *dout, const void *out, const void *q, const void *k, const void *v, int ld_v,
                             const float *lse, int B, int T, int NH, int NKV, int hd);

#ifdef __cplusplus
}
#endif

#endif
