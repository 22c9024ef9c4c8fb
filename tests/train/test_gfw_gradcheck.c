/* test_gfw_gradcheck.c - the Gated Fast Weights model's analytic gradients against central finite
 * differences, every entry of every tensor, in double precision.
 *
 * A tiny model (V=7, E=3, m=4, N=5, P=6: F1 is 4 x 8, F2 4 x 5, the slow output 47), two lanes, a
 * window of 10 steps that starts from the non-zero state a first window left (so the carried h_F,
 * h_S, F1 and F2 all matter and nothing may flow into them), LM and QM mode, some padding targets;
 * the gradient goes through both layer norms, the fast matrices' blend over the whole window and
 * the slow recurrence. Also: the float instantiation computes the same loss and gradients as the
 * double one; a forward-only (evaluation) model, which updates the fast matrices in place, gives
 * the same loss and carried state as a training one; and two windows of 5 carry the state as one
 * window of 10 does.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arch_test_util.h"
#include "check.h"
#include "gfw_model.h"

enum { LANES = 2, LEN = 10, QMARK = 3 };

static void make_tokens(uint32_t *x, uint32_t *y, uint32_t V)
{
    for (int i = 0; i < LANES * LEN; i++) {
        x[i] = atu_uniform(0, 1) < 0.3 ? QMARK : 1 + (uint32_t)atu_uniform(0, V - 1);
        y[i] = atu_uniform(0, 1) < 0.1 ? 0 : 1 + (uint32_t)atu_uniform(0, V - 1); /* some pad */
    }
}

typedef struct probe {
    fwm__gfw_tm_f64 *tm;
    const double *saved;
    const uint32_t *x, *y;
} probe;

static double loss_of(void *ctx)
{
    probe *p = ctx;
    memcpy(p->tm->shell.state, p->saved, LANES * p->tm->shell.state_size * sizeof *p->saved);
    return fwm__gfw_tm_forward_f64(p->tm, p->x, p->y, LEN);
}

static void tiny(fwm__gfw_config *config, int qm)
{
    memset(config, 0, sizeof *config);
    fwm_gfw_hparams *hp = &config->hp;
    hp->vocab_size = 7;
    hp->embedding_length = 3;
    hp->fast_hidden = 4;
    hp->slow_hidden = 5;
    hp->slow_inner = 6;
    hp->layer_norm_epsilon = 1e-5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config->lanes = LANES;
    config->window = LEN;
    config->loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config->loss_token_id = QMARK;
}

static void run_case(const char *name, int qm)
{
    fwm__gfw_config config;
    tiny(&config, qm);
    fwm__gfw_tm_f64 *tm = NULL, *te = NULL;
    fwm__gfw_tm_f32 *tmf = NULL;
    fwm_error err;
    CHECK_INT(fwm__gfw_tm_create_f64(&config, NULL, &tm, &err), FWM_OK);
    CHECK_INT(fwm__gfw_tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    config.forward_only = 1;
    CHECK_INT(fwm__gfw_tm_create_f64(&config, NULL, &te, &err), FWM_OK);
    if (!tm || !tmf || !te)
        return;
    CHECK_INT(tm->fast_size, 4 * 8 + 4 * 5);
    CHECK_INT(tm->shell.state_size, 4 + 5 + 4 * 8 + 4 * 5);
    CHECK_INT(tm->layout.parameter_count, 7 * 3 + 6 * 8 + 6 + 47 * 6 + 47 + 7 * 4 + 7);
    for (size_t k = 0; k < tm->layout.count; k++)
        for (size_t i = 0; i < tm->layout.size[k]; i++) {
            double w = atu_uniform(-0.8, 0.8);
            size_t at = tm->layout.offset[k] + i;
            tm->shell.params[at] = te->shell.params[at] = w;
            tmf->shell.params[at] = (float)w;
        }
    uint32_t x[LANES * LEN], y[LANES * LEN];
    make_tokens(x, y, tm->hp.vocab_size); /* a first window: every lane's state becomes non-zero */
    fwm__gfw_tm_forward_f64(tm, x, y, LEN);
    fwm__gfw_tm_forward_f32(tmf, x, y, LEN);
    make_tokens(x, y, tm->hp.vocab_size);
    size_t state_n = LANES * tm->shell.state_size;
    double *saved = malloc(state_n * sizeof *saved);
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);
    int nonzero_state = 0;
    for (size_t i = 0; i < state_n; i++)
        nonzero_state += saved[i] != 0;
    CHECK_GE(nonzero_state, (int)state_n * 9 / 10);

    fwm__tm_shell_zero_grads_f64(&tm->shell);
    probe p = {tm, saved, x, y};
    double loss = loss_of(&p);
    printf("%s: loss %.6f over %d loss rows\n", name, loss, tm->shell.n_loss_rows);
    CHECK_GE(tm->shell.n_loss_rows, 4);
    fwm__gfw_tm_backward_f64(tm);

    /* evaluation (in place) against training (kept matrices): the same loss and state */
    memcpy(te->shell.state, saved, state_n * sizeof *saved);
    double loss_e = fwm__gfw_tm_forward_f64(te, x, y, LEN);
    CHECK(fabs(loss_e - loss) <= 1e-13 * fabs(loss));
    double state_diff = 0;
    for (size_t i = 0; i < state_n; i++)
        state_diff = fmax(state_diff, fabs(te->shell.state[i] - tm->shell.state[i]));
    CHECK_LE(state_diff, 1e-13);
    /* two windows of 5 (the model's window is 10: shorter calls are allowed) */
    uint32_t xa[LANES * 5], ya[LANES * 5], xb[LANES * 5], yb[LANES * 5];
    for (int b = 0; b < LANES; b++)
        for (int t = 0; t < 5; t++) {
            xa[b * 5 + t] = x[b * LEN + t];
            ya[b * 5 + t] = y[b * LEN + t];
            xb[b * 5 + t] = x[b * LEN + 5 + t];
            yb[b * 5 + t] = y[b * LEN + 5 + t];
        }
    memcpy(te->shell.state, saved, state_n * sizeof *saved);
    double sum2 = 0;
    fwm__gfw_tm_forward_f64(te, xa, ya, 5);
    sum2 += te->shell.loss_sum;
    fwm__gfw_tm_forward_f64(te, xb, yb, 5);
    sum2 += te->shell.loss_sum;
    CHECK(fabs(sum2 - tm->shell.loss_sum) <= 1e-12 * fabs(tm->shell.loss_sum));
    state_diff = 0;
    for (size_t i = 0; i < state_n; i++)
        state_diff = fmax(state_diff, fabs(te->shell.state[i] - tm->shell.state[i]));
    CHECK_LE(state_diff, 1e-13);

    fwm__tm_shell_zero_grads_f32(&tmf->shell);
    double loss_f = fwm__gfw_tm_forward_f32(tmf, x, y, LEN);
    fwm__gfw_tm_backward_f32(tmf);
    CHECK_LE(fabs(loss_f - loss), 1e-4 * fabs(loss));
    double worst_float = atu_float_vs_double(tmf->shell.grads, tm->shell.grads, tm->layout.total);
    printf("%s: float vs double gradients: worst difference %.3g of the largest gradient\n", name,
           worst_float);
    CHECK_LE(worst_float, 1e-4);

    double *analytic = malloc(tm->layout.total * sizeof *analytic);
    memcpy(analytic, tm->shell.grads, tm->layout.total * sizeof *analytic);
    atu_gradcheck(name, &tm->layout, tm->shell.params, analytic, loss_of, &p, 1e-5, 1e-5, NULL);
    free(analytic);
    free(saved);
    fwm__gfw_tm_free_f64(tm);
    fwm__gfw_tm_free_f64(te);
    fwm__gfw_tm_free_f32(tmf);
}

int main(void)
{
    run_case("LM", 0);
    run_case("QM", 1);
    return check_finish("test_gfw_gradcheck");
}
