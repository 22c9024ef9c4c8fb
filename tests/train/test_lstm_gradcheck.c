/* test_lstm_gradcheck.c - the LSTM baseline's analytic gradients against central finite
 * differences, every entry of every tensor, in double precision.
 *
 * A tiny model (V=9, E=5, H=6), two lanes, a window of 12 steps that starts from a non-zero carried
 * state, over one and three layers, with and without the residual, LM and QM mode, without dropout
 * and with every dropout on (masks drawn once and kept fixed for all the forward calls: the
 * embedding-element mask takes layer 0 off the input table, so both of its paths are checked; the
 * token mask alone keeps the table). Also: the float instantiation computes the same loss and
 * gradients as the double one, and the masks drop about the fraction asked for.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arch_test_util.h"
#include "check.h"
#include "lstm_model.h"

enum { LANES = 2, LEN = 12, QMARK = 3 };

typedef struct probe {
    fwm__lstm_tm_f64 *tm;
    const double *saved;
    const uint32_t *x, *y;
} probe;

static double loss_of(void *ctx)
{
    probe *p = ctx;
    memcpy(p->tm->shell.state, p->saved, LANES * p->tm->shell.state_size * sizeof *p->saved);
    return fwm__lstm_tm_forward_f64(p->tm, p->x, p->y, LEN);
}

static void make_tokens(uint32_t *x, uint32_t *y, uint32_t V)
{
    for (int i = 0; i < LANES * LEN; i++) {
        x[i] = atu_uniform(0, 1) < 0.3 ? QMARK : 1 + (uint32_t)atu_uniform(0, V - 1);
        y[i] = atu_uniform(0, 1) < 0.1 ? 0 : 1 + (uint32_t)atu_uniform(0, V - 1); /* some <pad> */
    }
}

static int zeros(const double *m, size_t n)
{
    int z = 0;
    for (size_t i = 0; i < n; i++)
        z += m[i] == 0;
    return z;
}

static void run_case(const char *name, unsigned layers, int residual, int qm, int dropout,
                     int token_only, int tie)
{
    fwm__lstm_config config;
    memset(&config, 0, sizeof config);
    fwm_lstm_hparams *hp = &config.hp;
    hp->vocab_size = 9;
    hp->embedding_length = tie ? 6 : 5; /* tied: E == H */
    hp->hidden_size = 6;
    hp->layer_count = layers;
    hp->residual = residual;
    hp->forget_bias = 1;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config.lanes = LANES;
    config.window = LEN;
    config.loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = QMARK;
    config.tie_embeddings = tie;
    if (dropout) {
        config.dropout.token = 0.3f;
        config.dropout.embedding = token_only ? 0 : 0.3f;
        config.dropout.recurrent = 0.4f;
        config.dropout.layer = 0.3f;
    }
    fwm__lstm_tm_f64 *tm = NULL;
    fwm__lstm_tm_f32 *tmf = NULL;
    fwm_error err;
    CHECK_INT(fwm__lstm_tm_create_f64(&config, NULL, &tm, &err), FWM_OK);
    CHECK_INT(fwm__lstm_tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    if (!tm || !tmf)
        return;
    CHECK_INT(tm->use_table, !dropout || token_only);
    for (size_t k = 0; k < tm->layout.count; k++)
        for (size_t i = 0; i < tm->layout.size[k]; i++) {
            double w = atu_uniform(-0.8, 0.8);
            tm->shell.params[tm->layout.offset[k] + i] = w;
            tmf->shell.params[tm->layout.offset[k] + i] = (float)w;
        }
    uint32_t x[LANES * LEN], y[LANES * LEN];
    make_tokens(x, y, hp->vocab_size); /* a first window: every lane's state becomes non-zero */
    fwm__lstm_tm_set_dropout_f64(tm, 5, 0, 0);
    fwm__lstm_tm_set_dropout_f32(tmf, 5, 0, 0);
    fwm__lstm_tm_forward_f64(tm, x, y, LEN);
    fwm__lstm_tm_forward_f32(tmf, x, y, LEN);
    make_tokens(x, y, hp->vocab_size);
    fwm__lstm_tm_set_dropout_f64(tm, 5, 1, 0); /* the masks of the checked window, kept */
    fwm__lstm_tm_set_dropout_f32(tmf, 5, 1, 0);
    if (dropout) {
        size_t H = hp->hidden_size, E = hp->embedding_length, V = hp->vocab_size;
        int zh = zeros(tm->mask_hh, layers * 4 * H * H);
        double frac = (double)zh / (double)(layers * 4 * H * H);
        printf("%s: dropped %d of %zu W_hh entries (%.2f, asked 0.40), %d of %zu words\n", name,
               zh, (size_t)(layers * 4 * H * H), frac, zeros(tm->mask_token, V), V);
        CHECK(frac > 0.3 && frac < 0.5);
        CHECK_GE(zeros(tm->mask_token, V), 1);
        if (!token_only)
            CHECK_GE(zeros(tm->mask_embedding, LANES * E), 1);
        if (layers > 1)
            CHECK_GE(zeros(tm->mask_layer, (layers - 1) * LANES * H), 1);
        for (size_t i = 0; i < layers * 4 * H * H; i++) /* float and double draw the same masks */
            if ((tm->mask_hh[i] == 0) != (tmf->mask_hh[i] == 0)) {
                CHECK(0);
                break;
            }
    }
    size_t state_n = LANES * tm->shell.state_size;
    double *saved = malloc(state_n * sizeof *saved);
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);
    int nonzero_state = 0;
    for (size_t i = 0; i < state_n; i++)
        nonzero_state += saved[i] != 0;
    CHECK_GE(nonzero_state, (int)state_n / 2);

    fwm__tm_shell_zero_grads_f64(&tm->shell);
    double loss = fwm__lstm_tm_forward_f64(tm, x, y, LEN);
    printf("%s: loss %.6f over %d loss rows\n", name, loss, tm->shell.n_loss_rows);
    CHECK_GE(tm->shell.n_loss_rows, 4);
    fwm__lstm_tm_backward_f64(tm);

    fwm__tm_shell_zero_grads_f32(&tmf->shell);
    double loss_f = fwm__lstm_tm_forward_f32(tmf, x, y, LEN);
    fwm__lstm_tm_backward_f32(tmf);
    CHECK_LE(fabs(loss_f - loss), 1e-4 * fabs(loss));
    double worst_float = atu_float_vs_double(tmf->shell.grads, tm->shell.grads, tm->layout.total);
    printf("%s: float vs double gradients: worst difference %.3g of the largest gradient\n", name,
           worst_float);
    CHECK_LE(worst_float, 1e-4);

    double *analytic = malloc(tm->layout.total * sizeof *analytic);
    memcpy(analytic, tm->shell.grads, tm->layout.total * sizeof *analytic);
    probe p = {tm, saved, x, y};
    int trained[FWM__MAX_TENSORS];
    for (size_t k = 0; k < tm->layout.count; k++) /* tied: output.weight is not used */
        trained[k] = !(tie && strcmp(tm->layout.names[k], "output.weight") == 0);
    atu_gradcheck(name, &tm->layout, tm->shell.params, analytic, loss_of, &p, 1e-5, 1e-5, trained);
    free(analytic);
    free(saved);
    fwm__lstm_tm_free_f64(tm);
    fwm__lstm_tm_free_f32(tmf);
}

int main(void)
{
    run_case("L=1 LM", 1, 0, 0, 0, 0, 0);
    run_case("L=1 QM residual", 1, 1, 1, 0, 0, 0); /* the residual has no effect on one layer */
    run_case("L=3 LM", 3, 0, 0, 0, 0, 0);
    run_case("L=3 QM residual", 3, 1, 1, 0, 0, 0);
    run_case("L=3 LM residual, all dropout", 3, 1, 0, 1, 0, 0);
    run_case("L=3 QM, token/recurrent/layer dropout", 3, 0, 1, 1, 1, 0);
    run_case("L=1 LM, all dropout", 1, 0, 0, 1, 0, 0);
    run_case("L=3 QM residual, tied embeddings, all dropout", 3, 1, 1, 1, 0, 1);
    run_case("L=1 LM, tied embeddings", 1, 0, 0, 0, 0, 1);
    return check_finish("test_lstm_gradcheck");
}
