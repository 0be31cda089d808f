// attention_cudnn.cpp: causal SDPA forward and backward through cuDNN's fused attention,
// built with cudnn-frontend's graph API (header-only C++, PyPI nvidia-cudnn-frontend,
// scripts/cudnn_frontend.sh). The one C++ file of fast/ outside the .cu files: the
// frontend is C++ and needs no nvcc; the rest of fast/ sees the C interface of
// attention_cudnn.h. docs/design/kernels.md, "Attention through cuDNN".
//
// A graph is built once per shape (B, T, NH, NKV, hd, row strides, forward|backward) on its
// first call in the process and reused by every later call and every model; each model
// allocates its workspace for a shape once, on that shape's first call. So after the first (uncaptured)
// step: no rebuild, no allocation, no host wait, and the calls can sit inside fast/'s
// captured step graphs.
// cuDNN itself is loaded on first use (cudnn_attention_load, through the frontend's dynamic
// loading: fast/fast.cmake), so that a program built with this path starts where cuDNN is
// missing; every cuDNN call goes through the frontend's detail:: wrappers.
// Compiled here (no GPU), never run: unverified until a GPU runs test_fast_vs_ref.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cudnn_frontend.h>

extern "C" {
#include "common/base/error.h"
}
#include "fast/attention_cudnn.h"

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

namespace {

// The tensors' ids in a graph's variant pack (fixed: the pack is rebuilt from them per call).
enum : int64_t { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV };

// ld_q, ld_k, ld_v: the row strides of q, k and v (and of dq, dk); dv, o and dO are contiguous.
struct Shape {
    int B, T, NH, NKV, hd, ld_q, ld_k, ld_v, backward;
    bool operator==(const Shape &o) const {
        return B == o.B && T == o.T && NH == o.NH && NKV == o.NKV && hd == o.hd && ld_q == o.ld_q &&
               ld_k == o.ld_k && ld_v == o.ld_v && backward == o.backward;
    }
};

// Frontend messages can span lines; vrl's errors are one line.
std::string one_line(std::string m) {
    for (char &c : m)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    while (!m.empty() && m.back() == ' ') m.pop_back();
    return m.empty() ? std::string("no message") : m;
}

int shape_error(const Shape &s, const char *call, const std::string &why) {
    return vrl_error("fast: cuDNN attention %s (B=%d T=%d NH=%d NKV=%d hd=%d ld=%d,%d,%d): %s: %s",
                     s.backward ? "backward" : "forward", s.B, s.T, s.NH, s.NKV, s.hd, s.ld_q, s.ld_k, s.ld_v, call,
                     one_line(why).c_str());
}

// Rows [B,T,ld] (heads·hd used) seen as cuDNN's [B,heads,T,hd] through strides: no transpose,
// no copy; ld = heads·hd for a tensor of its own, the fused projection's width for a view.
void set_rows(fe::graph::Tensor_attributes &t, const Shape &s, int heads, int ld) {
    const int64_t B = s.B, T = s.T, H = heads, D = s.hd, L = ld;
    t.set_dim({B, H, T, D}).set_stride({T * L, D, L, 1}).set_data_type(fe::DataType_t::BFLOAT16);
}

TensorPtr rows_input(fe::graph::Graph &g, const char *name, int64_t uid, const Shape &s, int heads, int ld) {
    fe::graph::Tensor_attributes t;
    t.set_name(name).set_uid(uid);
    set_rows(t, s, heads, ld);
    return g.tensor(t);
}

// The softmax statistics [B,NH,T] fp32 as cuDNN's [B,NH,T,1]: flash's lse layout.
void set_stats(fe::graph::Tensor_attributes &t, const Shape &s) {
    const int64_t B = s.B, T = s.T, H = s.NH;
    t.set_dim({B, H, T, 1}).set_stride({H * T, T, 1, 1}).set_data_type(fe::DataType_t::FLOAT);
}

void set_output(const TensorPtr &t, const char *name, int64_t uid, const Shape &s, int heads, int ld) {
    t->set_name(name).set_uid(uid).set_output(true);
    set_rows(*t, s, heads, ld);
}

// The graph of s, not yet built: causal (top-left diagonal, nothing right of it), scale 1/√hd,
// bf16 in and out, fp32 softmax and accumulation.
std::shared_ptr<fe::graph::Graph> describe(const Shape &s) {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    const float scale = 1.0f / std::sqrt((float)s.hd);
    const int qC = s.NH * s.hd, kvC = s.NKV * s.hd;
    TensorPtr q = rows_input(*g, "Q", UID_Q, s, s.NH, s.ld_q);
    TensorPtr k = rows_input(*g, "K", UID_K, s, s.NKV, s.ld_k);
    TensorPtr v = rows_input(*g, "V", UID_V, s, s.NKV, s.ld_v);
    if (!s.backward) {
        auto attrs = fe::graph::SDPA_attributes()
                         .set_name("vrl_sdpa_forward")
                         .set_generate_stats(true)
                         .set_attn_scale(scale)
                         .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                         .set_diagonal_band_right_bound(0);
        auto outs = g->sdpa(q, k, v, attrs);
        set_output(outs[0], "O", UID_O, s, s.NH, qC);
        outs[1]->set_name("Stats").set_uid(UID_STATS).set_output(true);
        set_stats(*outs[1], s);
        return g;
    }
    TensorPtr o = rows_input(*g, "O", UID_O, s, s.NH, qC);
    TensorPtr dout = rows_input(*g, "dO", UID_DO, s, s.NH, qC);
    fe::graph::Tensor_attributes st;
    st.set_name("Stats").set_uid(UID_STATS);
    set_stats(st, s);
    TensorPtr stats = g->tensor(st);
    auto attrs = fe::graph::SDPA_backward_attributes()
                     .set_name("vrl_sdpa_backward")
                     .set_attn_scale(scale)
                     .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                     .set_diagonal_band_right_bound(0)
                     .set_deterministic_algorithm(true); // the same inputs give the same bits
    auto grads = g->sdpa_backward(q, k, v, o, dout, stats, attrs);
    set_output(grads[0], "dQ", UID_DQ, s, s.NH, s.ld_q); // into the fused gradient's views
    set_output(grads[1], "dK", UID_DK, s, s.NKV, s.ld_k);
    set_output(grads[2], "dV", UID_DV, s, s.NKV, kvC); // contiguous: attention_dv_scatter places it
    return g;
}

// The graphs, built once per process: every model of a shape reuses them (the conformance
// test makes dozens of models of a few shapes; a build can take a second). They live until
// the process ends, like cuBLASLt's own heuristics caches; a model owns only its workspaces.
struct Built {
    Shape shape;
    std::shared_ptr<fe::graph::Graph> graph;
    int64_t workspace_bytes = 0;
};

struct Process {
    cudnnHandle_t handle = nullptr; // the current device's, made by the first model
    std::vector<Built> graphs;
};
Process *process = nullptr; // never freed: a handle destroyed after CUDA's own teardown can fail

} // namespace

// A model's part: a workspace per shape, so that two models on two streams never share one.
struct CudnnAttention {
    std::vector<std::pair<Shape, void *>> workspaces; // device memory, NULL when the graph needs none
};

namespace {

#define FE_STEP(call, what)                                                                                  \
    do {                                                                                                     \
        fe::error_t st_ = (call);                                                                            \
        if (st_.is_bad()) return shape_error(s, what, st_.get_message());                                    \
    } while (0)

// The built graph of s: validated, lowered, planned (heuristics A, then the fallback list) on
// its first use in the process.
int graph_for(const Shape &s, const Built **out) {
    for (const Built &b : process->graphs)
        if (b.shape == s) {
            *out = &b;
            return 0;
        }
    Built b;
    b.shape = s;
    b.graph = describe(s);
    fe::graph::Graph &g = *b.graph;
    cudnnHandle_t h = process->handle;
    FE_STEP(g.validate(), "validate");
    FE_STEP(g.build_operation_graph(h), "build_operation_graph");
    FE_STEP(g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}), "create_execution_plans");
    FE_STEP(g.check_support(h), "check_support");
    FE_STEP(g.build_plans(h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans");
    FE_STEP(g.get_workspace_size(b.workspace_bytes), "get_workspace_size");
    process->graphs.push_back(std::move(b));
    *out = &process->graphs.back();
    return 0;
}

// This model's workspace for s, allocated on the shape's first call.
int workspace_for(CudnnAttention *ca, const Shape &s, int64_t bytes, void **out) {
    for (auto &w : ca->workspaces)
        if (w.first == s) {
            *out = w.second;
            return 0;
        }
    void *p = nullptr;
    if (bytes > 0) {
        const cudaError_t err = cudaMalloc(&p, (size_t)bytes);
        if (err != cudaSuccess)
            return shape_error(s, "cudaMalloc(workspace)", std::to_string(bytes) + " bytes: " + cudaGetErrorString(err));
    }
    ca->workspaces.emplace_back(s, p);
    *out = p;
    return 0;
}

int run(CudnnAttention *ca, const Shape &s, void *stream, std::unordered_map<int64_t, void *> &pack) {
    if (!ca || !process) return shape_error(s, "cudnn_attention", "no cuDNN context (cudnn_attention_create first)");
    if (s.NKV <= 0 || s.NH % s.NKV) return shape_error(s, "GQA", "NH must be a multiple of NKV");
    if (s.ld_q < s.NH * s.hd || s.ld_k < s.NKV * s.hd || s.ld_v < s.NKV * s.hd)
        return shape_error(s, "strides", "a row stride is under its tensor's width");
    const Built *b = nullptr;
    void *workspace = nullptr;
    if (graph_for(s, &b) < 0 || workspace_for(ca, s, b->workspace_bytes, &workspace) < 0) return -1;
    const cudnnStatus_t st = fe::detail::set_stream(process->handle, (cudaStream_t)stream);
    if (st != CUDNN_STATUS_SUCCESS) return shape_error(s, "cudnnSetStream", fe::detail::get_error_string(st));
    FE_STEP(b->graph->execute(process->handle, pack, workspace), "execute");
    return 0;
}

} // namespace

// The frontend's dlsym handle (declared in cudnn_frontend_shim.h): set by cudnn_attention_load.
void *cudnn_frontend::cudnn_dlhandle = nullptr;

extern "C" int cudnn_attention_load(void) {
    // a library that was loaded but refused stays loaded (the frontend caches its symbols):
    // its refusal is repeated
    static std::string refused;
    if (!refused.empty()) return vrl_error("%s", refused.c_str());
    if (fe::cudnn_dlhandle) return 0;
    // the library CMake found, then the loader's search (LD_LIBRARY_PATH, ld.so.cache)
    const std::string names[] = {VRL_CUDNN_LIBRARY, "libcudnn.so." + std::to_string(CUDNN_MAJOR)};
    std::string why;
    void *handle = nullptr;
    for (const std::string &name : names) {
        if (name.empty()) continue;
        if ((handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
        const char *e = dlerror();
        why += (why.empty() ? "" : "; ") + (e ? std::string(e) : name);
    }
    if (!handle) return vrl_error("--attention cudnn: cuDNN cannot be loaded: %s", one_line(why).c_str());
    fe::cudnn_dlhandle = handle;
    try { // built against cuDNN CUDNN_MAJOR's headers: another major's ABI differs
        const size_t version = fe::detail::get_backend_version();
        if (version / 10000 != CUDNN_MAJOR)
            refused = "--attention cudnn: the cuDNN loaded is version " + std::to_string(version) +
                      "; this vrl was built for cuDNN " + std::to_string(CUDNN_MAJOR);
    } catch (const std::exception &ex) {
        refused = "--attention cudnn: cudnnGetVersion: " + one_line(ex.what());
    }
    return refused.empty() ? 0 : vrl_error("%s", refused.c_str());
}

extern "C" CudnnAttention *cudnn_attention_create(void) {
    if (cudnn_attention_load() < 0) return nullptr;
    try {
        if (!process) {
            auto *p = new Process();
            const cudnnStatus_t st = fe::detail::create_handle(&p->handle);
            if (st != CUDNN_STATUS_SUCCESS) {
                vrl_error("fast: cuDNN attention: cudnnCreate: %s (cuDNN library %zu)",
                          fe::detail::get_error_string(st), fe::detail::get_backend_version());
                delete p;
                return nullptr;
            }
            process = p;
        }
        return new CudnnAttention();
    } catch (const std::exception &ex) {
        vrl_error("fast: cuDNN attention: cudnnCreate: %s", one_line(ex.what()).c_str());
        return nullptr;
    }
}

extern "C" void cudnn_attention_destroy(CudnnAttention *ca) {
    if (!ca) return;
    for (auto &w : ca->workspaces)
        if (w.second) (void)cudaFree(w.second);
    delete ca;
}

extern "C" int cudnn_attention_forward(CudnnAttention *ca, void *stream, void *out, float *lse, const void *q,
                                       int ld_q, const void *k, int ld_k, const void *v, int ld_v, int B, int T,
                                       int NH, int NKV, int hd) {
    const Shape s{B, T, NH, NKV, hd, ld_q, ld_k, ld_v, 0};
    try {
        std::unordered_map<int64_t, void *> pack = {
            {UID_Q, (void *)q}, {UID_K, (void *)k}, {UID_V, (void *)v}, {UID_O, out}, {UID_STATS, lse}};
        return run(ca, s, stream, pack);
    } catch (const std::exception &ex) { // the frontend's C++ never crosses into C
        return shape_error(s, "exception", ex.what());
    }
}

extern "C" int cudnn_attention_backward(CudnnAttention *ca, void *stream, void *dq, int ld_q, void *dk, int ld_k,
                                        void *dv, const void *dout, const void *out, const void *q, const void *k,
                                        const void *v, int ld_v, const float *lse, int B, int T, int NH, int NKV,
                                        int hd) {
    const Shape s{B, T, NH, NKV, hd, ld_q, ld_k, ld_v, 1};
    try {
        std::unordered_map<int64_t, void *> pack = {
            {UID_Q, (void *)q},     {UID_K, (void *)k},          {UID_V, (void *)v},
            {UID_O, (void *)out},   {UID_DO, (void *)dout},      {UID_STATS, (void *)lse},
            {UID_DQ, dq},           {UID_DK, dk},                {UID_DV, dv}};
        return run(ca, s, stream, pack);
    } catch (const std::exception &ex) {
        return shape_error(s, "exception", ex.what());
    }
}
