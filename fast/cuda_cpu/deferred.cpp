/* deferred.cpp: the deferred stream mode of deferred.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <deque>
#include <map>
#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/deferred.h"
#include "fast/cuda_cpu/launch_state.h"

namespace cuda_cpu {
namespace deferred {
namespace {

struct Item {
    std::function<cudaError_t()> op; /* empty for a wait */
    cudaEvent_t wait_event;          /* a wait: runnable once the event reached wait_gen */
    unsigned long wait_gen;
};
struct Queue {
    cudaStream_t s;
    int nccl;
    std::deque<Item> items;
};
std::vector<Queue> queues; /* creation (first use) order */
struct EventState {
    unsigned long issued, done; /* records issued and completed */
};
std::map<cudaEvent_t, EventState> events;
int mode = -1;
int running; /* a queued operation runs: what it issues runs at once */

Queue &queue_of(cudaStream_t s) {
    for (Queue &q : queues)
        if (q.s == s) return q;
    queues.push_back(Queue{s, 0, {}});
    return queues.back();
}

/* Run one item of the most adversarial runnable queue: NCCL's first, then the latest
 * created. 1 if something ran, 0 if nothing could; *err keeps the first error. */
int step(cudaError_t *err) {
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = queues.size(); k-- > 0;) {
            Queue &q = queues[k];
            if (q.nccl != (pass == 0) || q.items.empty()) continue;
            Item &it = q.items.front();
            if (!it.op) {
                if (events[it.wait_event].done < it.wait_gen) continue;
                q.items.pop_front();
                return 1;
            }
            std::function<cudaError_t()> op = std::move(it.op);
            q.items.pop_front();
            running++;
            const cudaError_t e = op();
            running--;
            if (e != cudaSuccess && *err == cudaSuccess) *err = e;
            return 1;
        }
    return 0;
}

template <class Done> cudaError_t run_until(Done done) {
    cudaError_t err = cudaSuccess;
    while (!done())
        if (!step(&err)) {
            fprintf(stderr, "vrl cuda-cpu deferred: no queued operation can run (a wait on an event never reached)\n");
            return err == cudaSuccess ? cudaErrorLaunchFailure : err;
        }
    return err;
}

} // namespace

int on(void) {
    if (mode < 0) {
        mode = env_switch("VRL_CUDA_CPU_DEFERRED") && !check::enabled();
    }
    return mode;
}

int enqueue(cudaStream_t s, std::function<cudaError_t()> op) {
    if (!s || running || !on()) return 0;
    queue_of(s).items.push_back(Item{std::move(op), NULL, 0});
    return 1;
}

void record(cudaEvent_t e, cudaStream_t s) {
    EventState &st = events[e];
    const unsigned long gen = ++st.issued;
    if (enqueue(s, [e, gen]() {
            EventState &x = events[e];
            if (x.done < gen) x.done = gen;
            return cudaSuccess;
        }))
        return;
    st.done = gen; /* the legacy stream, or inside a queued operation: complete now */
}

void wait(cudaStream_t s, cudaEvent_t e) {
    if (!s || running || !on()) return; /* everything issued before has run */
    queue_of(s).items.push_back(Item{std::function<cudaError_t()>(), e, events[e].issued});
}

void nccl_stream(cudaStream_t s) {
    if (s && on()) queue_of(s).nccl = 1;
}

cudaError_t drain(cudaStream_t s) {
    if (!on() || running) return cudaSuccess;
    if (!s) return drain_all();
    Queue *q = &queue_of(s);
    const cudaStream_t key = q->s;
    return run_until([key]() { return queue_of(key).items.empty(); });
}

cudaError_t drain_all(void) {
    if (!on() || running) return cudaSuccess;
    return run_until([]() {
        for (const Queue &q : queues)
            if (!q.items.empty()) return false;
        return true;
    });
}

cudaError_t drain_event(cudaEvent_t e) {
    if (!on() || running) return cudaSuccess;
    return run_until([e]() { return events[e].done >= events[e].issued; });
}

void forget_stream(cudaStream_t s) {
    for (size_t k = 0; k < queues.size(); k++)
        if (queues[k].s == s) {
            queues.erase(queues.begin() + (long)k);
            return;
        }
}

} // namespace deferred
} // namespace cuda_cpu
