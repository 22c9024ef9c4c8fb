/* test_mnm_gradcheck.c - the MNM baseline's analytic gradients against central finite differences,
 * every entry of every trained tensor, in double precision.
 *
 * A tiny model (V=9, E=5, H=6, 2 heads, d_k=3, d_v=4, D=5, d_o=7), two lanes, a window of 12 steps
 * with the memory stored every 5 steps (three segments, the last one short), starting from the
 * non-zero state a first window left (so the carried h, c, r and M all matter and nothing may flow
 * into them); one, two and three memory layers, LM and QM mode, meta weight 0, 1 and 2, some
 * padding inputs (no meta term there). The objective checked is the trainer's: mean cross entropy
 * plus the meta weight times the mean meta term. The initial memory is not trained: its gradient
 * must be zero (and the window, starting from a carried state, does not depend on it). Also: the
 * float instantiation computes the same objective and gradients as the double one, a segment of
 * one step and of the whole window give the same gradients, and the meta term is the mean of
 * (1/(Nh d_v)) |f_M(kw_i) - vw_i|^2 (positive, zero weight leaves the task gradient alone).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arch_test_util.h"
#include "check.h"
#include "mnm_model.h"

enum { LANES = 2, LEN = 12, QMARK = 3 };

static void make_tokens(uint32_t *x, uint32_t *y, uint32_t V)
{
    for (int i = 0; i < LANES * LEN; i++) {
        double p = atu_uniform(0, 1);
        x[i] = p < 0.3 ? QMARK : p < 0.38 ? 0 : 1 + (uint32_t)atu_uniform(0, V - 1);
        y[i] = atu_uniform(0, 1) < 0.1 ? 0 : 1 + (uint32_t)atu_uniform(0, V - 1); /* some <pad> */
    }
}

static void tiny(fwm__mnm_config *config, unsigned layers, int qm, double meta_weight, int segment)
{
    memset(config, 0, sizeof *config);
    fwm_mnm_hparams *hp = &config->hp;
    hp->vocab_size = 9;
    hp->embedding_length = 5;
    hp->hidden_size = 6;
    hp->head_count = 2;
    hp->key_length = 3;
    hp->value_length = 4;
    hp->memory_hidden = 5;
    hp->memory_layers = layers;
    hp->output_length = 7;
    hp->forget_bias = 0.5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    config->lanes = LANES;
    config->window = LEN;
    config->segment = segment;
    config->loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config->loss_token_id = QMARK;
    config->meta_weight = meta_weight;
}

static double objective_f64(fwm__mnm_tm_f64 *tm, const double *saved, const uint32_t *x,
                            const uint32_t *y)
{
    memcpy(tm->shell.state, saved, LANES * tm->shell.state_size * sizeof *saved);
    fwm__mnm_tm_forward_f64(tm, x, y, LEN);
    return tm->objective;
}

typedef struct probe {
    fwm__mnm_tm_f64 *tm;
    const double *saved;
    const uint32_t *x, *y;
} probe;

static double objective_of(void *ctx)
{
    probe *p = ctx;
    return objective_f64(p->tm, p->saved, p->x, p->y);
}

static void run_case(const char *name, unsigned layers, int qm, double meta_weight)
{
    fwm__mnm_config config;
    tiny(&config, layers, qm, meta_weight, 5);
    fwm__mnm_tm_f64 *tm = NULL, *tm1 = NULL, *tmw = NULL;
    fwm__mnm_tm_f32 *tmf = NULL;
    fwm_error err;
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &tm, &err), FWM_OK);
    CHECK_INT(fwm__mnm_tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    config.segment = 1;
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &tm1, &err), FWM_OK);
    config.segment = LEN;
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &tmw, &err), FWM_OK);
    if (!tm || !tmf || !tm1 || !tmw)
        return;
    CHECK_INT(tm->n_segments, 3);
    for (size_t k = 0; k < tm->layout.count; k++)
        for (size_t i = 0; i < tm->layout.size[k]; i++) {
            double w = atu_uniform(-0.8, 0.8);
            size_t at = tm->layout.offset[k] + i;
            tm->shell.params[at] = tm1->shell.params[at] = tmw->shell.params[at] = w;
            tmf->shell.params[at] = (float)w;
        }
    fwm__mnm_tm_reset_state_f64(tm);
    fwm__mnm_tm_reset_state_f32(tmf);
    uint32_t x[LANES * LEN], y[LANES * LEN];
    make_tokens(x, y, tm->hp.vocab_size); /* a first window: every lane's state becomes non-zero */
    fwm__mnm_tm_forward_f64(tm, x, y, LEN);
    fwm__mnm_tm_forward_f32(tmf, x, y, LEN);
    make_tokens(x, y, tm->hp.vocab_size);
    size_t state_n = LANES * tm->shell.state_size;
    double *saved = malloc(state_n * sizeof *saved);
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);
    int nonzero_state = 0;
    for (size_t i = 0; i < state_n; i++)
        nonzero_state += saved[i] != 0;
    CHECK_GE(nonzero_state, (int)state_n / 2);
    /* the carried memory is not the initial one any more */
    size_t H = tm->hp.hidden_size, dv = tm->hp.value_length;
    double moved = 0;
    for (size_t i = 0; i < tm->memory_size; i++)
        moved += fabs(saved[2 * H + dv + i] - tm->shell.params[tm->layout.offset[10] + i]);
    CHECK(moved > 1e-3);

    fwm__tm_shell_zero_grads_f64(&tm->shell);
    double objective = objective_f64(tm, saved, x, y);
    printf("%s: task %.6f over %d loss rows, meta %.6f over %ld positions, objective %.6f\n", name,
           tm->shell.loss, tm->shell.n_loss_rows, tm->meta, tm->n_meta_rows, objective);
    CHECK_GE(tm->shell.n_loss_rows, 3);
    CHECK(tm->n_meta_rows < LANES * LEN && tm->n_meta_rows > LANES * LEN / 2);
    CHECK(tm->meta > 0);
    CHECK(fabs(objective - (tm->shell.loss + meta_weight * tm->meta)) < 1e-12);
    fwm__mnm_tm_backward_f64(tm);
    for (fwm__mnm_tm_f64 *other = tm1; other; other = other == tm1 ? tmw : NULL) {
        fwm__tm_shell_zero_grads_f64(&other->shell);
        memcpy(other->shell.state, saved, state_n * sizeof *saved);
        fwm__mnm_tm_forward_f64(other, x, y, LEN);
        CHECK(fabs(other->objective - objective) < 1e-12);
        fwm__mnm_tm_backward_f64(other);
        double worst_seg = 0;
        for (size_t i = 0; i < tm->layout.total; i++) {
            double e = fabs(other->shell.grads[i] - tm->shell.grads[i]);
            if (e > worst_seg)
                worst_seg = e;
        }
        printf("%s: segment %d against 5: worst gradient difference %.3g\n", name,
               other->config.segment, worst_seg);
        CHECK_LE(worst_seg, 1e-12);
    }

    fwm__tm_shell_zero_grads_f32(&tmf->shell);
    fwm__mnm_tm_forward_f32(tmf, x, y, LEN);
    fwm__mnm_tm_backward_f32(tmf);
    CHECK_LE(fabs(tmf->objective - objective), 1e-4 * fabs(objective));
    double worst_float = atu_float_vs_double(tmf->shell.grads, tm->shell.grads, tm->layout.total);
    printf("%s: float vs double gradients: worst difference %.3g of the largest gradient\n", name,
           worst_float);
    CHECK_LE(worst_float, 1e-4);

    double *analytic = malloc(tm->layout.total * sizeof *analytic);
    memcpy(analytic, tm->shell.grads, tm->layout.total * sizeof *analytic);
    int trained[FWM__MAX_TENSORS];
    for (size_t k = 0; k < tm->layout.count; k++)
        trained[k] = fwm__mnm_tensor_trained(&tm->hp, k);
    probe p = {tm, saved, x, y};
    atu_gradcheck(name, &tm->layout, tm->shell.params, analytic, objective_of, &p, 1e-5, 1e-5, trained);
    free(analytic);
    free(saved);
    fwm__mnm_tm_free_f64(tm);
    fwm__mnm_tm_free_f64(tm1);
    fwm__mnm_tm_free_f64(tmw);
    fwm__mnm_tm_free_f32(tmf);
}

/* The per-head scratch of the memory net's passes is sized by FWM_MNM_MAX_HEADS: a model with more
 * heads is refused at creation, in both precisions, with a message that names the limit. */
static void refuses_too_many_heads(void)
{
    fwm__mnm_config config;
    tiny(&config, 2, 0, 1.0, 0);
    config.hp.head_count = FWM_MNM_MAX_HEADS + 1;
    fwm_error err;
    fwm__mnm_tm_f64 *tm = NULL;
    fwm__mnm_tm_f32 *tmf = NULL;
    CHECK_INT(fwm__mnm_tm_create_f64(&config, NULL, &tm, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "heads at most 64") != NULL);
    CHECK_INT(fwm__mnm_tm_create_f32(&config, NULL, &tmf, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK(tm == NULL && tmf == NULL);
    config.hp.head_count = FWM_MNM_MAX_HEADS; /* the limit itself is accepted */
    CHECK_INT(fwm__mnm_tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    fwm__mnm_tm_free_f32(tmf);
}

int main(void)
{
    refuses_too_many_heads();
    run_case("Lm=3 LM meta 1", 3, 0, 1.0);
    run_case("Lm=3 QM meta 2", 3, 1, 2.0);
    run_case("Lm=1 LM meta 1", 1, 0, 1.0);
    run_case("Lm=2 QM meta 0", 2, 1, 0.0);
    run_case("Lm=2 LM meta 1", 2, 0, 1.0);
    return check_finish("test_mnm_gradcheck");
}
