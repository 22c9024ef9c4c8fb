/* input_gates.c - the table of input gates W_ih Emb[x] + b for every token x, derived when a model
 * is prepared, for the architectures whose first LSTM layer reads the token embedding (the FWM, the
 * LSTM, the MNM): a step then looks its token's row up instead of computing it, with the same kernel
 * and so the same bits as the step-time path that models without the table take. */
#include "bf16_kernels.h"
#include "fwm_alloc.h"
#include "fwm_error.h"
#include "kernels.h"
#include "model_internal.h"

/* Tokens computed together (the rows do not depend on it). */
#define CHUNK_TOKENS 32

/* Tables above this size are not built (W_ih e + b is computed at step time). */
#define INPUT_GATES_MAX_BYTES ((uint64_t)64 << 20)

fwm_status fwm__input_gate_table(const float *emb, const float *w_ih, const uint16_t *w_ih16,
                                 const float *bias, size_t V, size_t E, size_t H, float **out,
                                 fwm_error *err) {
    size_t gates = 4 * H;
    *out = NULL;
    uint64_t bytes = (uint64_t)V * gates * sizeof(float);
    if (bytes > INPUT_GATES_MAX_BYTES) return FWM_OK;
    float *table = fwm__aligned_alloc(64, (size_t)bytes);
    const float **px = fwm__calloc(CHUNK_TOKENS, sizeof *px);
    const float **pb = fwm__calloc(CHUNK_TOKENS, sizeof *pb);
    float **py = fwm__calloc(CHUNK_TOKENS, sizeof *py);
    if (!table || !px || !pb || !py) {
        fwm__free(table);
        fwm__free(px);
        fwm__free(pb);
        fwm__free(py);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                          "out of memory allocating the input-gate table (%zu bytes)", (size_t)bytes);
    }
    for (size_t x0 = 0; x0 < V; x0 += CHUNK_TOKENS) {
        size_t n = V - x0 < CHUNK_TOKENS ? V - x0 : CHUNK_TOKENS;
        for (size_t j = 0; j < n; j++) {
            px[j] = emb + (x0 + j) * E;
            pb[j] = bias;
            py[j] = table + (x0 + j) * gates;
        }
        fwm__matvec_any(w_ih, w_ih16, gates, E, n, px, pb, py);
    }
    fwm__free(px);
    fwm__free(pb);
    fwm__free(py);
    *out = table;
    return FWM_OK;
}
