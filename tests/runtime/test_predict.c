/* test_predict.c - fwm_session_predict, the next-token scores of a session's state without a step:
 * for the FWM (models built in memory, read policies "always" and "token", residual or not, one
 * read or chained reads, T a multiple of the kernels' 8 lanes or not) the scores after every step
 * of a random text equal the step's own logits bit for bit (and within 1e-6 as numbers), a new
 * session's scores equal W_s b_o (or W_s (b_o + 0)) computed here in double, the session is not
 * changed, a fork predicts as its parent, an imported session within float rounding; a primed
 * session (a file with three prime tokens) gives fwm_model_start_logits exactly; and NULL
 * arguments are refused. The LSTM's checks are in test_lstm_runtime.c, the other architectures'
 * refusal in their own tests (rt_check_no_predict). */
#include <math.h>
#include <stdlib.h>

#include "fwm_rng.h"
#include "fwm_schema.h"
#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "runtime_test_util.h"
#include "session_internal.h"

/* Largest |a - b| over n floats. */
static double max_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= worst)) worst = d; /* NaN counts as the worst */
    }
    return worst;
}

/* One configuration: step `steps` random tokens; after each, predict and compare with the step. */
static void check_model(const char *what, const fwm_hparams *hp, uint64_t seed, bool prepare) {
    struct fwm_model *model = rt_model_create(hp, seed, prepare);
    CHECK(model != NULL);
    if (!model) return;
    const size_t V = hp->vocab_size, H = hp->hidden_size, T = hp->memory_t;
    fwm_session *s = NULL, *t = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    float *stepped = malloc(V * sizeof(float)), *predicted = malloc(V * sizeof(float));
    float *again = malloc(V * sizeof(float));

    /* a new session: h = 0 and F = 0, so each read retrieves LN(0) = 0, m = b_o, y = m (+ h = 0) */
    CHECK_OK(fwm_session_predict(s, predicted, &err), err);
    double worst = 0;
    for (size_t v = 0; v < V; v++) {
        double want = 0;
        bool reads = hp->read_policy != FWM_READ_ON_TOKEN; /* nothing read: no trigger */
        if (reads)
            for (size_t i = 0; i < H; i++) want += (double)model->w.output_weight[v * H + i] * model->w.out_bias[i];
        double d = fabs(want - predicted[v]);
        if (!(d <= worst)) worst = d;
    }
    if (worst > 1e-5) fprintf(stderr, "%s: new session's scores off by %g\n", what, worst);
    CHECK_LE(worst, 1e-5);
    CHECK_INT(fwm_session_position(s), 0);

    uint32_t tokens[40];
    rt_random_tokens(tokens, 40, (uint32_t)V, seed + 1);
    if (hp->read_policy == FWM_READ_ON_TOKEN)
        for (size_t i = 0; i < 40; i += 3) tokens[i] = hp->read_token_id; /* trigger and not */
    size_t exact = 0;
    for (size_t i = 0; i < 40; i++) {
        CHECK_OK(fwm_session_step(s, tokens[i], stepped, &err), err);
        size_t blob_size = 0;
        unsigned char *before = rt_export(s, &blob_size);
        CHECK_OK(fwm_session_predict(s, predicted, &err), err);
        unsigned char *after = rt_export(s, &blob_size);
        if (before && after) CHECK_BYTES_EQUAL(after, before, blob_size, "state after predict");
        free(before), free(after);
        CHECK_INT(fwm_session_position(s), i + 1);
        double d = max_diff(predicted, stepped, V);
        if (d > 1e-6) fprintf(stderr, "%s: step %zu: predicted vs stepped differ by %g\n", what, i, d);
        CHECK_LE(d, 1e-6);
        exact += memcmp(predicted, stepped, V * sizeof(float)) == 0;
        /* predicting twice gives the same bits */
        CHECK_OK(fwm_session_predict(s, again, &err), err);
        CHECK(memcmp(again, predicted, V * sizeof(float)) == 0);
    }
    /* the read and output run the step's own code over the same state: the same bits */
    if (exact != 40) fprintf(stderr, "%s: %zu of 40 predictions are the step's bits\n", what, exact);
    CHECK_INT(exact, 40);

    /* a fork predicts as its parent, and a predicting session steps on as one that did not */
    fwm_session *child = NULL;
    CHECK_OK(fwm_session_fork(s, &child, &err), err);
    CHECK_OK(fwm_session_predict(child, again, &err), err);
    CHECK(memcmp(again, predicted, V * sizeof(float)) == 0);
    CHECK_OK(fwm_session_step(s, tokens[5], stepped, &err), err);
    CHECK_OK(fwm_session_step(child, tokens[5], again, &err), err);
    CHECK(memcmp(again, stepped, V * sizeof(float)) == 0);

    /* an imported session: the export applied the pending write, so within float rounding (under
     * read policy "token" it is taken as not having read the trigger: compare only where that holds) */
    CHECK_OK(fwm_session_predict(s, predicted, &err), err);
    size_t size = 0;
    unsigned char *blob = rt_export(s, &size);
    CHECK_OK(fwm_session_create(model, &t, &err), err);
    if (blob) CHECK_OK(fwm_session_import(t, blob, size, &err), err);
    CHECK_OK(fwm_session_predict(t, again, &err), err);
    if (hp->read_policy != FWM_READ_ON_TOKEN || tokens[5] != hp->read_token_id) {
        double d = max_diff(again, predicted, V);
        if (d > 1e-5) fprintf(stderr, "%s: imported session's scores differ by %g\n", what, d);
        CHECK_LE(d, 1e-5);
    }
    (void)T;
    free(blob);
    fwm_session_free(child);
    fwm_session_free(t);
    fwm_session_free(s);
    free(stepped), free(predicted), free(again);
    rt_model_free(model);
}

static void fwm_configurations(void) {
    /* V, E, H, S, R, T, N_r, residual, policy, trigger */
    fwm_hparams a = rt_hparams(23, 6, 10, 4, 3, 8, 1, true, FWM_READ_ALWAYS, 0);
    check_model("S4 R3 T8, one read, residual", &a, 1, true);
    fwm_hparams b = rt_hparams(19, 5, 9, 5, 4, 5, 3, false, FWM_READ_ALWAYS, 0);
    check_model("S=T=5, three reads, no residual, no gate table", &b, 2, false);
    fwm_hparams c = rt_hparams(17, 4, 12, 16, 2, 16, 2, true, FWM_READ_ON_TOKEN, 3);
    check_model("S=T=16, two reads, read policy token", &c, 3, true);
    fwm_hparams d = rt_hparams(15, 4, 7, 3, 5, 11, 1, false, FWM_READ_ON_TOKEN, 2);
    check_model("T11, read policy token, no residual", &d, 4, true);
    fwm_hparams e = rt_hparams(21, 5, 8, 4, 3, 4, 2, true, FWM_READ_ALWAYS, 0);
    e.block_count = 3; /* the stacked FWM: two LSTM layers below the memory's */
    check_model("stacked, three layers", &e, 5, true);
    e.block_count = 2;
    check_model("stacked, two layers, no gate table", &e, 6, false);
}

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "mary", "garden",
                                         "kitchen", "went", "to", "the", "where", "is"};
#define V_TEST 13u

/* A file whose sessions start primed with three tokens: the primed session predicts the start
 * scores exactly (the step over the last prime token wrote them). */
static void primed_start(void) {
    if (!rt_dir_make("test_predict")) return;
    fwm_hparams hp;
    fwm__hparams_defaults(&hp);
    hp.vocab_size = V_TEST, hp.embedding_length = 6, hp.hidden_size = 8;
    hp.memory_s = 4, hp.memory_r = 3, hp.memory_t = 4, hp.read_count = 2;
    hp.write_scale = 1.0f / 4;
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(&hp, offsets);
    float *data = malloc(offsets[FWM_TENSOR_COUNT] * sizeof(float));
    float *t[FWM_MAX_TENSORS];
    fwm_write_spec spec = {.hp = hp, .head.tokens = vocabulary};
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) t[i] = data + offsets[i], spec.tensors[i] = t[i];
    fwm__model_init_weights(&hp, 9, t);
    fwm__rng rng;
    fwm__rng_seed(&rng, 9, 7);
    for (uint64_t k = 0; k < offsets[FWM_TENSOR_COUNT]; k++) data[k] += (float)fwm__rng_uniform(&rng, -0.3, 0.3);
    const uint32_t prime[3] = {1, 11, 12};
    spec.head.has_prime_tokens = true, spec.head.prime_tokens = prime, spec.head.prime_count = 3;
    fwm_error err;
    CHECK_OK(fwm__model_write(rt_path("primed.gguf"), &spec, &err), err);
    free(data);
    fwm_model *model = NULL;
    CHECK_OK(fwm_model_load(rt_path("primed.gguf"), NULL, &model, &err), err);
    if (model) {
        fwm_session *s = NULL;
        CHECK_OK(fwm_session_create(model, &s, &err), err);
        fwm_session_prime(s);
        float got[V_TEST];
        CHECK_OK(fwm_session_predict(s, got, &err), err);
        const float *start = fwm_model_start_logits(model);
        CHECK(start && memcmp(got, start, sizeof got) == 0);
        /* and after a reset, the zero state's scores, not the start's */
        fwm_session_reset(s);
        CHECK_OK(fwm_session_predict(s, got, &err), err);
        CHECK(start && memcmp(got, start, sizeof got) != 0);
        fwm_session_free(s);
        fwm_model_free(model);
    }
    const char *names[] = {"primed.gguf"};
    rt_dir_remove(names, 1);
}

static void refusals(void) {
    fwm_hparams hp = rt_hparams(11, 4, 6, 3, 3, 3, 1, true, FWM_READ_ALWAYS, 0);
    struct fwm_model *model = rt_model_create(&hp, 5, true);
    if (!model) return;
    fwm_session *s = NULL;
    fwm_error err;
    CHECK_OK(fwm_session_create(model, &s, &err), err);
    float logits[11];
    CHECK_STATUS(fwm_session_predict(NULL, logits, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "session is NULL");
    CHECK_STATUS(fwm_session_predict(s, NULL, &err), FWM_ERR_INVALID_ARGUMENT, &err);
    CHECK_CONTAINS(err.message, "logits is NULL");
    CHECK_STATUS(fwm_session_predict(NULL, NULL, NULL), FWM_ERR_INVALID_ARGUMENT, NULL);
    fwm_session_free(s);
    rt_model_free(model);
}

int main(void) {
    fwm_configurations();
    primed_start();
    refusals();
    return check_finish("test_predict");
}
