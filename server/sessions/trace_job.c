/* trace_job.c - the `trace` method's work on a worker (see trace_job.h; the message shape is
 * docs/PROTOCOL.md's). Vectors go out as msgpack bin of little-endian float32, so a browser reads
 * them with one Float32Array. */
#include "trace_job.h"

#include <string.h>

#include "fwm_alloc.h"
#include "rpc_codec.h"

/* The arrays one trace needs, allocated together. */
typedef struct trace_buffers {
    fwm_trace trace;
    float *logits;    /* [V] the step's own prediction */
    float *memory;    /* [S*R*T] or NULL */
    fwm_session *copy;
} trace_buffers;

static void buffers_free(trace_buffers *b) {
    fwm__free(b->trace.k1);
    fwm__free(b->logits);
    fwm__free(b->memory);
    fwm_session_free(b->copy);
}

static bool buffers_init(trace_buffers *b, const fwm_model_info *i, const fwm_session *session, bool memory) {
    memset(b, 0, sizeof *b);
    size_t S = i->memory_s, R = i->memory_r, T = i->memory_t, N = i->read_count, V = i->vocab_size;
    float *block = fwm__malloc((S + R + T + N * (S + R + T) + N * V) * sizeof(float));
    b->logits = fwm__malloc(V * sizeof(float));
    b->memory = memory ? fwm__malloc(S * R * T * sizeof(float)) : NULL;
    if (!block || !b->logits || (memory && !b->memory) || fwm_session_fork(session, &b->copy, NULL) != FWM_OK) {
        fwm__free(block);
        buffers_free(b);
        return false;
    }
    b->trace.k1 = block;
    b->trace.k2 = block + S;
    b->trace.v = b->trace.k2 + R;
    b->trace.read_queries = b->trace.v + T;
    b->trace.read_keys = b->trace.read_queries + N * S;
    b->trace.read_values = b->trace.read_keys + N * R;
    b->trace.read_logits = b->trace.read_values + N * T;
    return true;
}

/* n floats as a bin of little-endian float32. */
static void pack_floats(msgpack_packer *pk, const float *x, size_t n) {
    msgpack_pack_bin(pk, n * 4);
    unsigned char chunk[256];
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, &x[k], 4);
        for (int byte = 0; byte < 4; byte++) chunk[used++] = (unsigned char)(bits >> (8 * byte));
        if (used == sizeof chunk || k + 1 == n) {
            msgpack_pack_bin_body(pk, chunk, used);
            used = 0;
        }
    }
}

static void pack_top(msgpack_packer *pk, fwm__job_context *ctx, const fwm_model *model, const float *logits,
                     uint32_t V, uint32_t topk) {
    size_t n = topk ? fwm_top_k(logits, V, topk, ctx->predictions) : 0;
    msgpack_pack_array(pk, n);
    for (size_t k = 0; k < n; k++) {
        msgpack_pack_array(pk, 2);
        fwm__rpc_pack_cstr(pk, fwm_model_token_text(model, ctx->predictions[k].token));
        msgpack_pack_float(pk, ctx->predictions[k].probability);
    }
}

bool fwm__trace_pack(fwm__job_context *ctx, const fwm__session_entry *e, const fwm__job *job, msgpack_packer *pk) {
    const fwm_model *model = ctx->models[e->model_index];
    const fwm_model_info *i = &ctx->infos[e->model_index];
    trace_buffers b;
    if (!buffers_init(&b, i, e->session, job->trace_memory)) return false;
    size_t S = i->memory_s, R = i->memory_r, T = i->memory_t, N = i->read_count, V = i->vocab_size;

    msgpack_pack_map(pk, 6);
    fwm__rpc_pack_cstr(pk, "session");
    fwm__rpc_pack_cstr(pk, e->hex);
    fwm__rpc_pack_cstr(pk, "pos");
    msgpack_pack_uint64(pk, fwm_session_position(e->session));
    fwm__rpc_pack_cstr(pk, "shape"); /* [S, R, T, N_r]: how to read the vectors and the memory */
    msgpack_pack_array(pk, 4);
    msgpack_pack_uint64(pk, S);
    msgpack_pack_uint64(pk, R);
    msgpack_pack_uint64(pk, T);
    msgpack_pack_uint64(pk, N);
    fwm__rpc_pack_cstr(pk, "steps");
    msgpack_pack_array(pk, job->count);
    for (size_t k = 0; k < job->count; k++) {
        uint32_t token = job->tokens[k];
        /* tokens were checked against V when the request was read; the trace's inputs are all set */
        fwm_session_step(b.copy, token, b.logits, NULL);
        fwm_session_trace(b.copy, &b.trace, NULL);
        msgpack_pack_map(pk, 6);
        fwm__rpc_pack_cstr(pk, "token");
        msgpack_pack_uint32(pk, token);
        fwm__rpc_pack_cstr(pk, "word");
        fwm__rpc_pack_cstr(pk, fwm_model_token_text(model, token));
        fwm__rpc_pack_cstr(pk, "pos");
        msgpack_pack_uint64(pk, fwm_session_position(b.copy));
        fwm__rpc_pack_cstr(pk, "topk");
        pack_top(pk, ctx, model, b.logits, (uint32_t)V, job->topk);
        fwm__rpc_pack_cstr(pk, "write");
        msgpack_pack_map(pk, 4);
        fwm__rpc_pack_cstr(pk, "k1");
        pack_floats(pk, b.trace.k1, S);
        fwm__rpc_pack_cstr(pk, "k2");
        pack_floats(pk, b.trace.k2, R);
        fwm__rpc_pack_cstr(pk, "v");
        pack_floats(pk, b.trace.v, T);
        fwm__rpc_pack_cstr(pk, "beta");
        msgpack_pack_float(pk, b.trace.beta);
        fwm__rpc_pack_cstr(pk, "reads");
        msgpack_pack_array(pk, N);
        for (size_t r = 0; r < N; r++) {
            msgpack_pack_map(pk, 4);
            fwm__rpc_pack_cstr(pk, "query");
            pack_floats(pk, b.trace.read_queries + r * S, S);
            fwm__rpc_pack_cstr(pk, "key");
            pack_floats(pk, b.trace.read_keys + r * R, R);
            fwm__rpc_pack_cstr(pk, "value");
            pack_floats(pk, b.trace.read_values + r * T, T);
            fwm__rpc_pack_cstr(pk, "topk");
            pack_top(pk, ctx, model, b.trace.read_logits + r * V, (uint32_t)V, job->topk);
        }
    }
    fwm__rpc_pack_cstr(pk, "memory");
    if (b.memory) {
        fwm_session_memory(b.copy, b.memory, S * R * T, NULL);
        pack_floats(pk, b.memory, S * R * T);
    } else {
        msgpack_pack_nil(pk);
    }
    fwm__rpc_pack_cstr(pk, "unknown"); /* the byte spans of the text's words read as <unk> */
    msgpack_pack_array(pk, job->unknown_count);
    for (size_t k = 0; k < job->unknown_count; k++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint64(pk, job->unknown[k].start);
        msgpack_pack_uint64(pk, job->unknown[k].length);
    }
    buffers_free(&b);
    return true;
}
