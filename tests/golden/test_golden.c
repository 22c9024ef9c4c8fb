/* test_golden.c - the runtime against golden logits from the independent numpy reference.
 *
 * For every model of tests/golden/data/manifest.txt (written by tests/reference/make_golden.py),
 * load it through the public API and compare every logit after every token with the expected
 * value, stepping in every way the API offers: token by token, one whole sequence, a sequence in
 * pieces (the first piece without logits, which skips the read but must not change the state), a
 * fork in the middle, batches of sessions at different positions, and loads without mmap and from
 * a misaligned buffer. Also checks the checksum reporting (present and verified, or absent) and
 * that a damaged tensor byte is caught by the checksum (or the stored fingerprint). Lines with the
 * optional fields (the lstm, mnm, gfw and stm models' lines) also check the architecture, the
 * fingerprint the loader computes and the logits from the session start (fwm_session_prime,
 * fwm_model_start_logits).
 *
 * Tolerance (the same rule as make_golden.py and check_live.py): a relative error of 1e-5 of the
 * row's scale, |got - want| <= 1e-5 * max(max_j |want_j|, 1e-3). A logit near zero is a sum of
 * terms of the row's size and carries rounding errors of that size; make_golden.py accepts only
 * data on which float32 rounding uses at most a quarter of this tolerance.
 *
 * Usage: test_golden DATA_DIR
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm/fwm.h"

#define RTOL 1e-5
#define SCALE_FLOOR 1e-3
#define MAX_REPORTS 8 /* mismatching logits printed per model and stepping mode */

static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            failures++;                                                       \
        }                                                                     \
    } while (0)

#define CHECK_STATUS(got, want, err)                                                       \
    do {                                                                                   \
        fwm_status got_ = (got), want_ = (want);                                           \
        if (got_ != want_) {                                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s); message: %s\n", \
                    __FILE__, __LINE__, #got, (int)got_, fwm_status_str(got_), (int)want_,  \
                    fwm_status_str(want_), (err).message);                                 \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

typedef struct entry {
    char model[256], expected[256];
    int checksum_present;
    uint32_t *tokens;
    size_t n_tokens;
    /* optional fields (the lstm lines have them) */
    char arch[32];          /* arch=NAME */
    int has_fingerprint;    /* fingerprint=0x...: the value the loader must compute */
    uint64_t fingerprint;
    int fingerprint_key;    /* fingerprint_key=present: the file stores fwm.fingerprint */
    char primed[256];       /* primed=FILE: logits from the session start, prime rows first */
} entry;

/* ---- reading the manifest and the expected logits ---- */

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            char *grown = realloc(buf, cap + 1);
            if (!grown) break;
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int ok = !ferror(f) && buf;
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

static int parse_tokens(const char *text, entry *e) {
    size_t n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    e->tokens = malloc(n * sizeof *e->tokens);
    if (!e->tokens) return -1;
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno || v > UINT32_MAX || (*end != ',' && *end != '\0')) return -1;
        e->tokens[i] = (uint32_t)v;
        p = end + 1;
    }
    e->n_tokens = n;
    return 0;
}

/* One line: MODEL EXPECTED checksum=present|absent tokens=a,b,c, then optional fields arch=NAME,
 * fingerprint=0xHEX, fingerprint_key=present|absent, primed=FILE in any order. */
static int parse_line(char *line, entry *e) {
    memset(e, 0, sizeof *e);
    char checksum[32];
    static char field[65536];
    int used = 0;
    if (sscanf(line, "%255s %255s %31s%n", e->model, e->expected, checksum, &used) != 3) return -1;
    if (!strcmp(checksum, "checksum=present")) e->checksum_present = 1;
    else if (strcmp(checksum, "checksum=absent")) return -1;
    int have_tokens = 0;
    for (const char *p = line + used; sscanf(p, "%65535s%n", field, &used) == 1; p += used) {
        if (!strncmp(field, "tokens=", 7)) {
            if (have_tokens++ || parse_tokens(field + 7, e)) return -1;
        } else if (!strncmp(field, "arch=", 5) && strlen(field + 5) < sizeof e->arch) {
            strcpy(e->arch, field + 5);
        } else if (!strncmp(field, "fingerprint=0x", 14)) {
            char *end;
            errno = 0;
            e->fingerprint = strtoull(field + 14, &end, 16);
            if (errno || *end != '\0' || end == field + 14) return -1;
            e->has_fingerprint = 1;
        } else if (!strcmp(field, "fingerprint_key=present")) {
            e->fingerprint_key = 1;
        } else if (!strcmp(field, "fingerprint_key=absent")) {
            e->fingerprint_key = 0;
        } else if (!strncmp(field, "primed=", 7) && strlen(field + 7) < sizeof e->primed) {
            strcpy(e->primed, field + 7);
        } else {
            return -1;
        }
    }
    return have_tokens ? 0 : -1;
}

static float *read_expected(const char *path, size_t n_floats) {
    size_t size;
    unsigned char *bytes = read_file(path, &size);
    if (!bytes) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    if (size != n_floats * 4) {
        fprintf(stderr, "%s: %zu bytes, expected %zu (tokens x V x 4)\n", path, size, n_floats * 4);
        free(bytes);
        return NULL;
    }
    float *values = malloc(n_floats * sizeof *values);
    for (size_t i = 0; values && i < n_floats; i++) {
        uint32_t bits = (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                        (uint32_t)bytes[4 * i + 2] << 16 | (uint32_t)bytes[4 * i + 3] << 24;
        memcpy(&values[i], &bits, 4);
    }
    free(bytes);
    return values;
}

/* ---- comparing ---- */

typedef struct comparison {
    const char *model, *mode;
    int reported;
    double worst; /* largest |got - want| / tolerance seen */
} comparison;

/* Compare one row of V logits after the token at `position`. */
static void compare_row(comparison *c, size_t position, const float *got, const float *want,
                        uint32_t V) {
    if (isnan(want[0])) { /* a position that predicts nothing (stm sentence mode): a row of NaNs */
        for (uint32_t j = 0; j < V; j++) {
            if (isnan(got[j])) continue;
            failures++;
            if (c->reported++ < MAX_REPORTS)
                fprintf(stderr, "MISMATCH %s [%s] token position %zu predicts nothing, logit %u is %.9g\n",
                        c->model, c->mode, position, j, got[j]);
            break;
        }
        return;
    }
    double scale = SCALE_FLOOR;
    for (uint32_t j = 0; j < V; j++) scale = fmax(scale, fabs(want[j]));
    double tol = RTOL * scale;
    for (uint32_t j = 0; j < V; j++) {
        double diff = fabs((double)got[j] - (double)want[j]);
        if (!(diff <= tol)) { /* also catches NaN */
            failures++;
            if (c->reported++ < MAX_REPORTS)
                fprintf(stderr,
                        "MISMATCH %s [%s] token position %zu, logit %u: got %.9g, want %.9g "
                        "(|diff| %.3g > tolerance %.3g)\n",
                        c->model, c->mode, position, j, got[j], want[j], diff, tol);
        }
        if (diff / tol > c->worst || isnan(diff)) c->worst = isnan(diff) ? INFINITY : diff / tol;
    }
}

static void finish_mode(comparison *c) {
    if (c->reported > MAX_REPORTS)
        fprintf(stderr, "  ... %s [%s]: %d mismatching logits in all\n", c->model, c->mode,
                c->reported);
    printf("  %-26s %-28s worst |diff| / tolerance = %.4f\n", c->model, c->mode, c->worst);
}

/* ---- the stepping modes ---- */

static void run_single_steps(const fwm_model *model, const entry *e, const float *want, uint32_t V,
                             float *row) {
    comparison c = {e->model, "fwm_session_step", 0, 0};
    fwm_error err = {0};
    fwm_session *s = NULL;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, err);
    for (size_t t = 0; s && t < e->n_tokens; t++) {
        CHECK_STATUS(fwm_session_step(s, e->tokens[t], row, &err), FWM_OK, err);
        compare_row(&c, t, row, want + t * V, V);
    }
    if (s) CHECK(fwm_session_position(s) == e->n_tokens, "position %llu after %zu tokens",
                 (unsigned long long)fwm_session_position(s), e->n_tokens);
    fwm_session_free(s);
    finish_mode(&c);
}

static void run_sequence(const fwm_model *model, const entry *e, const float *want, uint32_t V,
                         float *all, const char *mode) {
    comparison c = {e->model, mode, 0, 0};
    fwm_error err = {0};
    fwm_session *s = NULL;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, err);
    if (s) {
        CHECK_STATUS(fwm_session_step_sequence(s, e->tokens, e->n_tokens, all, &err), FWM_OK, err);
        for (size_t t = 0; t < e->n_tokens; t++) compare_row(&c, t, all + t * V, want + t * V, V);
    }
    fwm_session_free(s);
    finish_mode(&c);
}

/* The first third without logits (reads skipped, state must still advance), then the rest in two
 * pieces; then a fork at two thirds whose copy must give the same rows as the original. */
static void run_pieces_and_fork(const fwm_model *model, const entry *e, const float *want,
                                uint32_t V, float *all) {
    comparison c = {e->model, "step_sequence in pieces", 0, 0};
    comparison cf = {e->model, "fwm_session_fork", 0, 0};
    fwm_error err = {0};
    fwm_session *s = NULL, *f = NULL;
    size_t a = e->n_tokens / 3, b = 2 * e->n_tokens / 3, n = e->n_tokens;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, err);
    if (s) {
        CHECK_STATUS(fwm_session_step_sequence(s, e->tokens, a, NULL, &err), FWM_OK, err);
        CHECK_STATUS(fwm_session_step_sequence(s, e->tokens + a, b - a, all + a * V, &err), FWM_OK,
                     err);
        CHECK_STATUS(fwm_session_fork(s, &f, &err), FWM_OK, err);
        CHECK_STATUS(fwm_session_step_sequence(s, e->tokens + b, n - b, all + b * V, &err), FWM_OK,
                     err);
        for (size_t t = a; t < n; t++) compare_row(&c, t, all + t * V, want + t * V, V);
    }
    if (f) {
        CHECK_STATUS(fwm_session_step_sequence(f, e->tokens + b, n - b, all + b * V, &err), FWM_OK,
                     err);
        for (size_t t = b; t < n; t++) compare_row(&cf, t, all + t * V, want + t * V, V);
    }
    fwm_session_free(f);
    fwm_session_free(s);
    finish_mode(&c);
    finish_mode(&cf);
}

/* Three sessions at different positions of the same sequence, stepped together by fwm_batch_step:
 * session k is first stepped alone over `offset[k]` tokens, then the batch round r gives it
 * token r + offset[k]; sessions drop out of the batch when their sequence ends. */
static void run_batch(const fwm_model *model, const entry *e, const float *want, uint32_t V) {
    enum { B = 3 };
    comparison c = {e->model, "fwm_batch_step", 0, 0};
    fwm_error err = {0};
    fwm_session *s[B] = {0};
    size_t offset[B] = {0, 1, e->n_tokens / 2};
    float *rows = malloc((size_t)B * V * sizeof *rows);
    int ok = rows != NULL;
    for (int k = 0; ok && k < B; k++) {
        fwm_status st = fwm_session_create(model, &s[k], &err);
        CHECK_STATUS(st, FWM_OK, err);
        if (st == FWM_OK) st = fwm_session_step_sequence(s[k], e->tokens, offset[k], NULL, &err);
        ok = st == FWM_OK;
    }
    for (size_t r = 0; ok && r < e->n_tokens; r++) {
        fwm_session *batch[B];
        uint32_t tokens[B];
        size_t position[B], count = 0;
        for (int k = 0; k < B; k++) {
            if (r + offset[k] >= e->n_tokens) continue;
            batch[count] = s[k];
            position[count] = r + offset[k];
            tokens[count] = e->tokens[position[count]];
            count++;
        }
        if (count == 0) break;
        fwm_status st = fwm_batch_step(batch, tokens, count, rows, &err);
        CHECK_STATUS(st, FWM_OK, err);
        if (st != FWM_OK) break;
        for (size_t i = 0; i < count; i++)
            compare_row(&c, position[i], rows + i * V, want + position[i] * V, V);
    }
    for (int k = 0; k < B; k++) fwm_session_free(s[k]);
    free(rows);
    finish_mode(&c);
}

/* From the session start: fwm_session_prime, then the tokens. The expected file holds one row per
 * prime token (the last one is fwm_model_start_logits) and then one per token. */
static void run_primed(const char *dir, const fwm_model *model, const entry *e, uint32_t V,
                       float *all) {
    comparison c = {e->model, "primed, then step_sequence", 0, 0};
    comparison cs = {e->model, "fwm_model_start_logits", 0, 0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->primed);
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    size_t P = info.prime_token_count;
    float *want = read_expected(path, (P + e->n_tokens) * (size_t)V);
    CHECK(want, "%s: %s unreadable, or not (%zu prime tokens + %zu tokens) rows of V", e->model,
          e->primed, P, e->n_tokens);
    if (!want) return;
    const float *start = fwm_model_start_logits(model);
    if (P == 0) {
        CHECK(start == NULL, "%s: fwm_model_start_logits is not NULL without prime tokens",
              e->model);
    } else if (isnan(want[(P - 1) * V])) { /* the last prime token predicts nothing */
        CHECK(start == NULL, "%s: fwm_model_start_logits is not NULL where the start predicts nothing",
              e->model);
    } else {
        CHECK(start != NULL, "%s: fwm_model_start_logits is NULL with %zu prime tokens", e->model,
              P);
        if (start) compare_row(&cs, P - 1, start, want + (P - 1) * V, V);
    }
    fwm_error err = {0};
    fwm_session *s = NULL;
    CHECK_STATUS(fwm_session_create(model, &s, &err), FWM_OK, err);
    if (s) {
        fwm_session_prime(s);
        CHECK(fwm_session_position(s) == P, "%s: position %llu after priming, expected %zu",
              e->model, (unsigned long long)fwm_session_position(s), P);
        CHECK_STATUS(fwm_session_step_sequence(s, e->tokens, e->n_tokens, all, &err), FWM_OK, err);
        for (size_t t = 0; t < e->n_tokens; t++)
            compare_row(&c, P + t, all + t * V, want + (P + t) * V, V);
    }
    fwm_session_free(s);
    free(want);
    finish_mode(&c);
    if (P) finish_mode(&cs);
}

/* ---- loading ---- */

static void check_info(const fwm_model *model, const entry *e, const fwm_model_params *params,
                       const char *how) {
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    if (e->checksum_present) {
        CHECK(info.has_checksum, "%s (%s): has_checksum is false, the file has fwm.checksum",
              e->model, how);
        if (params->verify_checksum)
            CHECK(info.checksum_verified, "%s (%s): checksum_verified is false", e->model, how);
        else
            CHECK(!info.checksum_verified, "%s (%s): checksum_verified without verification",
                  e->model, how);
    } else {
        CHECK(!info.has_checksum, "%s (%s): has_checksum is true, the file has no fwm.checksum",
              e->model, how);
        CHECK(!info.checksum_verified, "%s (%s): checksum_verified is true without a checksum",
              e->model, how);
    }
}

/* Flip a bit of the file's last byte (tensor data: the independent writer puts a tensor last) and
 * load it from a buffer: with a checksum, or a fingerprint (which covers the computed checksum),
 * the loader must refuse it. */
static void check_damaged(const unsigned char *file, size_t size, const entry *e) {
    unsigned char *copy = malloc(size);
    if (!copy) return;
    memcpy(copy, file, size);
    copy[size - 1] ^= 0x01;
    fwm_error err = {0};
    fwm_model *model = NULL;
    fwm_status st = fwm_model_load_from_buffer(copy, size, NULL, &model, &err);
    CHECK(st == FWM_ERR_CHECKSUM,
          "%s with a bit of its last tensor byte flipped: status %d (%s), expected %d (%s); "
          "message: %s", e->model, (int)st, fwm_status_str(st), (int)FWM_ERR_CHECKSUM,
          fwm_status_str(FWM_ERR_CHECKSUM), err.message);
    fwm_model_free(model);
    free(copy);
}

static void run_entry(const char *dir, const entry *e) {
    char path[1024], expected_path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->model);
    snprintf(expected_path, sizeof expected_path, "%s/%s", dir, e->expected);
    fwm_error err = {0};
    fwm_model *model = NULL;
    fwm_model_params params = fwm_model_default_params();
    fwm_status st = fwm_model_load(path, &params, &model, &err);
    CHECK_STATUS(st, FWM_OK, err);
    if (st != FWM_OK) return;
    check_info(model, e, &params, "mmap");
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    uint32_t V = info.vocab_size;
    float *want = read_expected(expected_path, e->n_tokens * (size_t)V);
    float *all = malloc(e->n_tokens * (size_t)V * sizeof *all);
    CHECK(want && all, "%s: expected logits unreadable or out of memory", e->model);
    if (want && all) {
        run_single_steps(model, e, want, V, all);
        run_sequence(model, e, want, V, all, "fwm_session_step_sequence");
        run_pieces_and_fork(model, e, want, V, all);
        run_batch(model, e, want, V);
        if (e->primed[0]) run_primed(dir, model, e, V, all);
    }
    const char *arch = e->arch[0] ? e->arch : "fwm";
    CHECK(info.architecture && !strcmp(info.architecture, arch),
          "%s: architecture \"%s\", expected \"%s\"", e->model,
          info.architecture ? info.architecture : "(null)", arch);
    if (!strcmp(arch, "lstm"))
        CHECK(info.session_state_floats == 2 * (size_t)info.layer_count * info.hidden_size,
              "%s: %zu state floats, expected 2 L H = 2 * %u * %u", e->model,
              info.session_state_floats, info.layer_count, info.hidden_size);
    if (!strcmp(arch, "mnm")) /* h, c, r and the memory; the version-2 blob's 56-byte header */
        CHECK(info.layer_count == 1 && info.session_state_floats > 2 * (size_t)info.hidden_size &&
                  info.state_blob_bytes == 64 + 4 * info.session_state_floats,
              "%s: %u layers, %zu state floats, %zu blob bytes", e->model, info.layer_count,
              info.session_state_floats, info.state_blob_bytes);
    if (!strcmp(arch, "gfw")) /* h_F (m = H), h_S, F1 [m, m+E+1], F2 [m, m+1]; 48-byte blob header */
        CHECK(info.layer_count == 1 &&
                  info.session_state_floats >
                      (size_t)info.hidden_size * (2 * (size_t)info.hidden_size + info.embedding_length + 3) &&
                  info.state_blob_bytes == 56 + 4 * info.session_state_floats,
              "%s: %u layers, %zu state floats, %zu blob bytes", e->model, info.layer_count,
              info.session_state_floats, info.state_blob_bytes);
    if (!strcmp(arch, "stm")) /* Mi and Mr (+ P + 2 words in sentence mode); the 56-byte header */
        CHECK(info.layer_count == 1 &&
                  info.state_blob_bytes == 64 + 4 * (info.session_state_floats +
                                                     (info.sentence_input ? info.max_sentence_words + 2 : 0)) &&
                  info.predicts_every_token == !info.sentence_input,
              "%s: %u layers, %zu state floats, %zu blob bytes", e->model, info.layer_count,
              info.session_state_floats, info.state_blob_bytes);
    if (e->has_fingerprint)
        CHECK(info.fingerprint == e->fingerprint,
              "%s: fingerprint %#018llx, the reference computes %#018llx", e->model,
              (unsigned long long)info.fingerprint, (unsigned long long)e->fingerprint);
    fwm_model_free(model);
    model = NULL;

    /* the same file read into memory instead of mapped, without checksum verification */
    params.use_mmap = false;
    params.verify_checksum = false;
    st = fwm_model_load(path, &params, &model, &err);
    CHECK_STATUS(st, FWM_OK, err);
    if (st == FWM_OK) {
        check_info(model, e, &params, "no mmap, no verification");
        if (want && all) run_sequence(model, e, want, V, all, "loaded without mmap");
    }
    fwm_model_free(model);
    model = NULL;

    /* from a buffer at an odd address (F32 tensors cannot be used in place there) */
    size_t size = 0;
    unsigned char *file = read_file(path, &size);
    unsigned char *odd = file ? malloc(size + 1) : NULL;
    if (odd) {
        memcpy(odd + 1, file, size);
        st = fwm_model_load_from_buffer(odd + 1, size, NULL, &model, &err);
        CHECK_STATUS(st, FWM_OK, err);
        if (st == FWM_OK) {
            check_info(model, e, &(fwm_model_params){.use_mmap = true, .verify_checksum = true},
                       "misaligned buffer");
            if (want && all) run_sequence(model, e, want, V, all, "from a misaligned buffer");
        }
        fwm_model_free(model);
        if (e->checksum_present || e->fingerprint_key) check_damaged(file, size, e);
    }
    free(odd);
    free(file);
    free(want);
    free(all);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_golden DATA_DIR\n");
        return 2;
    }
    char manifest_path[1024];
    snprintf(manifest_path, sizeof manifest_path, "%s/manifest.txt", argv[1]);
    size_t size;
    char *manifest = read_file(manifest_path, &size);
    if (!manifest) {
        fprintf(stderr, "cannot read %s\n", manifest_path);
        return 1;
    }
    int models = 0, with_checksum = 0, without_checksum = 0;
    for (char *line = strtok(manifest, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0') continue;
        entry e;
        if (parse_line(line, &e) != 0) {
            fprintf(stderr, "%s: malformed line: %s\n", manifest_path, line);
            failures++;
            free(e.tokens);
            continue;
        }
        run_entry(argv[1], &e);
        models++;
        with_checksum += e.checksum_present;
        without_checksum += !e.checksum_present;
        free(e.tokens);
    }
    free(manifest);
    CHECK(models >= 6, "only %d models in the manifest", models);
    CHECK(with_checksum > 0 && without_checksum > 0,
          "need models with (%d) and without (%d) a checksum", with_checksum, without_checksum);
    printf("test_golden: %d models, %s (%d failures)\n", models, failures ? "FAILED" : "passed",
           failures);
    return failures ? 1 : 0;
}
