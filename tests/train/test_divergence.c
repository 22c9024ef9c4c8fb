/* test_divergence.c - the trainer's instability watcher (train/divergence.c) on made-up loss and
 * accuracy sequences. The expected steps follow from the moving average's closed form: after k
 * steps of a constant x from the average a, it is x - (x - a) * (31/32)^k. */
#include <math.h>

#include "check.h"
#include "divergence.h"

/* Feed `count` steps of (loss, meta) from step `*step` + 1 on; the step of the first report (0:
 * none), the number of reports in *reports, the first report's text in msg. */
static long feed(fwm__divergence *d, long *step, long count, double loss, double meta,
                 int *reports, char *msg, size_t size)
{
    long first = 0;
    char line[640];
    for (long i = 0; i < count; i++) {
        ++*step;
        if (fwm__divergence_step(d, *step, loss, meta, line, sizeof line)) {
            ++*reports;
            if (!first) {
                first = *step;
                snprintf(msg, size, "%s", line);
            }
        }
    }
    return first;
}

static void loss_climb(void)
{
    fwm__divergence d;
    fwm__divergence_init(&d);
    long step = 1000; /* a resumed run: steps need not start at 1 */
    int reports = 0;
    char msg[640] = "";
    CHECK_INT(feed(&d, &step, 200, 1.0, 0, &reports, msg, sizeof msg), 0);
    /* 3.0 from step 1201: the average passes 2 (twice the lowest, 1.0) when (31/32)^k < 1/2,
     * k = 22 */
    CHECK_INT(feed(&d, &step, 100, 3.0, 0, &reports, msg, sizeof msg), 1222);
    CHECK_INT(reports, 1); /* once, though it stays above */
    CHECK_CONTAINS(msg, "step 1222: the training loss's moving average");
    CHECK_CONTAINS(msg, "times its lowest (1 at step 1064)");
    /* back to 1.0: re-armed under 1.5 (after 43 steps); a new climb from 1.08 is reported when
     * (31/32)^k < 1/1.92, k = 21 */
    reports = 0;
    CHECK_INT(feed(&d, &step, 100, 1.0, 0, &reports, msg, sizeof msg), 0);
    CHECK_INT(feed(&d, &step, 100, 3.0, 0, &reports, msg, sizeof msg), 1421);
    CHECK_INT(reports, 1);
}

static void not_rearmed_above_middle(void)
{
    /* down from 3.0 to 1.6 only (above 1.5: not re-armed), then up again: no second report */
    fwm__divergence d;
    fwm__divergence_init(&d);
    long step = 0;
    int reports = 0;
    char msg[640];
    feed(&d, &step, 100, 1.0, 0, &reports, msg, sizeof msg);
    feed(&d, &step, 100, 3.0, 0, &reports, msg, sizeof msg);
    feed(&d, &step, 300, 1.6, 0, &reports, msg, sizeof msg);
    feed(&d, &step, 100, 3.0, 0, &reports, msg, sizeof msg);
    CHECK_INT(reports, 1);
}

static void small_losses_and_warmup(void)
{
    /* a loss near zero that quintuples rises by 0.04 (under the margin of 0.1): no report */
    fwm__divergence d;
    fwm__divergence_init(&d);
    long step = 0;
    int reports = 0;
    char msg[640];
    feed(&d, &step, 200, 0.01, 0, &reports, msg, sizeof msg);
    feed(&d, &step, 200, 0.05, 0, &reports, msg, sizeof msg);
    CHECK_INT(reports, 0);
    /* a climb inside the warm-up (64 steps) sets the lowest where it ends: 3.0 after it is not
     * twice that */
    fwm__divergence_init(&d);
    step = 0;
    feed(&d, &step, 10, 1.0, 0, &reports, msg, sizeof msg);
    feed(&d, &step, 300, 3.0, 0, &reports, msg, sizeof msg);
    CHECK_INT(reports, 0);
    /* a loss that falls never reports */
    fwm__divergence_init(&d);
    step = 0;
    for (int i = 0; i < 1000; i++)
        feed(&d, &step, 1, 5.0 * exp(-i / 100.0), 0, &reports, msg, sizeof msg);
    CHECK_INT(reports, 0);
}

static void meta_term(void)
{
    fwm__divergence d;
    fwm__divergence_init(&d);
    long step = 0;
    int reports = 0;
    char msg[640] = "";
    /* a lowest of 0.02: ten times it (0.2) is the threshold, not lowest + margin (0.07) */
    CHECK_INT(feed(&d, &step, 200, 1.0, 0.02, &reports, msg, sizeof msg), 0);
    CHECK_INT(feed(&d, &step, 300, 1.0, 0.19, &reports, msg, sizeof msg), 0); /* 9.5 times */
    /* 0.25 from step 501: the average passes 0.2 when (31/32)^k < 0.05 / 0.06, k = 6 */
    CHECK_INT(feed(&d, &step, 100, 1.0, 0.25, &reports, msg, sizeof msg), 506);
    CHECK_CONTAINS(msg, "step 506: the training meta term's moving average");
    CHECK_INT(reports, 1);
    /* back under 0.11 (halfway from the lowest to the threshold), then 0.5 again: a new report */
    reports = 0;
    feed(&d, &step, 300, 1.0, 0.02, &reports, msg, sizeof msg);
    CHECK(feed(&d, &step, 100, 1.0, 0.5, &reports, msg, sizeof msg) > 0);
    CHECK_INT(reports, 1);
    /* a model without a meta term passes NaN: never a report */
    fwm__divergence_init(&d);
    reports = 0;
    feed(&d, &step, 400, 1.0, NAN, &reports, msg, sizeof msg);
    CHECK_INT(reports, 0);
}

static void margin_rearm_and_both(void)
{
    /* a lowest loss of 0.01: the threshold is lowest + margin (0.11), the re-arm point halfway
     * (0.06); 0.5 from step 201 passes 0.11 at k = 8, a level of 0.05 re-arms it, and 0.5 again
     * passes 0.11 after 5 more */
    fwm__divergence d;
    fwm__divergence_init(&d);
    long step = 0;
    int reports = 0;
    char msg[640] = "";
    feed(&d, &step, 200, 0.01, NAN, &reports, msg, sizeof msg);
    CHECK_INT(feed(&d, &step, 100, 0.5, NAN, &reports, msg, sizeof msg), 208);
    CHECK_INT(feed(&d, &step, 200, 0.05, NAN, &reports, msg, sizeof msg), 0);
    CHECK_INT(feed(&d, &step, 100, 0.5, NAN, &reports, msg, sizeof msg), 505);
    CHECK_INT(reports, 2);
    /* windows without a loss (NaN) leave the average: 3.0 after 50 of them still takes 22 steps */
    fwm__divergence_init(&d);
    step = 0;
    reports = 0;
    feed(&d, &step, 200, 1.0, NAN, &reports, msg, sizeof msg);
    feed(&d, &step, 50, NAN, NAN, &reports, msg, sizeof msg);
    CHECK_INT(feed(&d, &step, 100, 3.0, NAN, &reports, msg, sizeof msg), 272);
    /* the loss (22 steps to cross) and the meta term (0.02 to 0.5: 15 steps) crossing at the same
     * step are both in its report */
    fwm__divergence_init(&d);
    step = 0;
    reports = 0;
    feed(&d, &step, 200, 1.0, 0.02, &reports, msg, sizeof msg);
    feed(&d, &step, 7, 3.0, 0.02, &reports, msg, sizeof msg);
    CHECK_INT(feed(&d, &step, 100, 3.0, 0.5, &reports, msg, sizeof msg), 222);
    CHECK_INT(reports, 1);
    CHECK_CONTAINS(msg, "step 222: the training loss's moving average");
    CHECK_CONTAINS(msg, "; step 222: the training meta term's moving average");
}

static void validation(void)
{
    fwm__divergence d;
    fwm__divergence_init(&d);
    char msg[640] = "";
    static const double acc[] = {0.50, 0.60, 0.56, 0.54, 0.53, 0.58, 0.50, 0.61, 0.57};
    static const int report[] = {0, 0, 0, 1, 0, 0, 1, 0, 0};
    for (int i = 0; i < 9; i++) {
        int got = fwm__divergence_valid(&d, 250 * (i + 1), acc[i], msg, sizeof msg);
        CHECK_INT(got, report[i]);
        if (i == 3) {
            CHECK_CONTAINS(msg, "step 1000: validation accuracy 54.00% is 6.00 points below its "
                                "best (60.00% at step 500)");
        }
    }
}

int main(void)
{
    loss_climb();
    not_rearmed_above_middle();
    small_losses_and_warmup();
    meta_term();
    margin_rearm_and_both();
    validation();
    return check_finish("test_divergence");
}
