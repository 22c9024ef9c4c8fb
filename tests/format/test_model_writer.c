/* test_model_writer.c - fwm__model_write round trip (hyperparameters, vocabulary, tensors
 * bit-exact, extra keys, alignment, checksum, fingerprint), atomic replacement, refusals of bad
 * specs, allocation failures; the initialiser's distributions and determinism; the parameter count
 * and state size against formulas written out here. */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format_test_util.h"
#include "fwm_alloc.h"
#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gguf_reader.h"

static char dir[256];

static const char *path_in_dir(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Files in the test folder whose name contains ".tmp-": leftovers of a failed write. */
static int temporary_files_left(void) {
    DIR *d = opendir(dir);
    int count = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) count++;
    if (d) closedir(d);
    return count;
}

static const char *const vocabulary[] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,w"};

static fwm_hparams small_hparams(void) {
    return (fwm_hparams){.vocab_size = 7,
                         .embedding_length = 5,
                         .hidden_size = 6,
                         .memory_s = 3,
                         .memory_r = 2,
                         .memory_t = 3,
                         .read_count = 3,
                         .residual = false,
                         .read_policy = FWM_READ_ON_TOKEN,
                         .read_token_id = 3,
                         .forget_bias = 1.0f,
                         .beta_bias = 0.75f,
                         .write_scale = 1.0f / 3.0f,
                         .layer_norm_eps = 1e-5f,
                         .padding_token_id = 0,
                         .eos_token_id = 1};
}

/* Independent count: docs/MODEL.md's parameter table written out. */
static uint64_t formula_parameters(const fwm_hparams *hp) {
    uint64_t V = hp->vocab_size, E = hp->embedding_length, H = hp->hidden_size;
    uint64_t S = hp->memory_s, R = hp->memory_r, T = hp->memory_t, N = hp->read_count;
    return V * E + 4 * H * E + 4 * H * H + 4 * H + (S + R + T + 1) * (H + 1) +
           (S + N * R) * (H + 1) + H * T + H + V * H;
}

/* Field by field (the struct has padding bytes). */
static void check_same_hparams(const fwm_hparams *got, const fwm_hparams *want) {
    CHECK_U64(got->vocab_size, want->vocab_size);
    CHECK_U64(got->embedding_length, want->embedding_length);
    CHECK_U64(got->hidden_size, want->hidden_size);
    CHECK_U64(got->memory_s, want->memory_s);
    CHECK_U64(got->memory_r, want->memory_r);
    CHECK_U64(got->memory_t, want->memory_t);
    CHECK_U64(got->read_count, want->read_count);
    CHECK_U64(got->residual, want->residual);
    CHECK_U64(got->read_policy, want->read_policy);
    CHECK_U64(got->read_token_id, want->read_token_id);
    CHECK(memcmp(&got->forget_bias, &want->forget_bias, 4) == 0);
    CHECK(memcmp(&got->beta_bias, &want->beta_bias, 4) == 0);
    CHECK(memcmp(&got->write_scale, &want->write_scale, 4) == 0);
    CHECK(memcmp(&got->layer_norm_eps, &want->layer_norm_eps, 4) == 0);
    CHECK_U64(got->padding_token_id, want->padding_token_id);
    CHECK_U64(got->eos_token_id, want->eos_token_id);
}

typedef struct weights {
    float *flat;
    float *tensors[FWM_MAX_TENSORS];
} weights;

static int make_weights(const fwm_hparams *hp, uint64_t seed, weights *w) {
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(hp, offsets);
    w->flat = malloc(offsets[FWM_TENSOR_COUNT] * sizeof(float));
    if (!w->flat) return 0;
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) w->tensors[i] = w->flat + offsets[i];
    fwm__model_init_weights(hp, seed, w->tensors);
    return 1;
}

static fwm_write_spec make_spec(const fwm_hparams *hp, const weights *w) {
    fwm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.hp = *hp;
    spec.head.tokens = vocabulary;
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) spec.tensors[i] = w->tensors[i];
    return spec;
}

static void round_trip(void) {
    fwm_hparams hp = small_hparams();
    weights w;
    if (!make_weights(&hp, 42, &w)) return;
    fwm_write_kv extra[] = {
        {.key = "fwm.training.mode", .kind = FWM_WRITE_KV_STRING, .value.string = "qm"},
        {.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U64, .value.u64 = 7200},
        {.key = "fwm.training.batch", .kind = FWM_WRITE_KV_U32, .value.u32 = 32},
        {.key = "fwm.training.accuracy", .kind = FWM_WRITE_KV_F32, .value.f32 = 0.9675f},
        {.key = "fwm.training.residual_was_tried", .kind = FWM_WRITE_KV_BOOL, .value.boolean = true},
    };
    fwm_write_spec spec = make_spec(&hp, &w);
    spec.head.name = "round trip";
    spec.head.extra = extra;
    spec.head.extra_count = 5;
    fwm_error err = {0};
    const char *path = path_in_dir("round_trip.gguf");
    CHECK_OK(fwm__model_write(path, &spec, &err), err);
    size_t size = 0;
    uint8_t *file = read_whole_file(path, &size);
    CHECK(file != NULL);
    if (!file) goto done;

    fwm_schema s;
    CHECK_OK(fwm__schema_parse(file, size, &s, &err), err);
    if (err.status) goto done_file;
    check_same_hparams(&s.hp, &hp);
    CHECK_STR(s.head.name, "round trip");
    for (uint32_t i = 0; i < hp.vocab_size; i++) {
        CHECK_STR(s.head.tokens[i], vocabulary[i]);
        CHECK_U64(s.head.token_lengths[i], strlen(vocabulary[i]));
    }
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) {
        uint64_t rows, cols;
        fwm__tensor_shape(&hp, i, &rows, &cols, NULL);
        CHECK_U64(s.tensors[i].type, FWM_GGML_TYPE_F32);
        CHECK_U64(s.tensors[i].rows, rows);
        CHECK_U64(s.tensors[i].cols, cols);
        CHECK_U64(s.tensors[i].n_bytes, rows * cols * 4);
        CHECK_U64(s.tensors[i].file_offset % 64, 0);
        CHECK(memcmp(s.tensors[i].data, w.tensors[i], (size_t)s.tensors[i].n_bytes) == 0);
        if (i > 0) CHECK(s.tensors[i].file_offset > s.tensors[i - 1].file_offset); /* list order */
    }
    CHECK(s.head.has_checksum);
    CHECK_U64(s.head.checksum, fwm__schema_checksum(&s));
    CHECK(s.head.has_fingerprint);
    CHECK_U64(s.head.fingerprint, fwm__schema_fingerprint(&s.hp, (const char *const *)s.head.tokens,
                                                    s.head.token_lengths, s.head.checksum));
    fwm__schema_release(&s);

    /* extra keys, alignment, architecture through the container reader */
    fwm_gguf_file f;
    CHECK_OK(fwm__gguf_parse(file, size, &f, &err), err);
    if (!err.status) {
        CHECK_U64(f.alignment, 64);
        CHECK_U64(f.data_offset % 64, 0);
        const fwm_gguf_kv *kv = fwm__gguf_find_key(&f, "fwm.training.mode");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_STRING && fwm__gguf_read_string(kv->value).length == 2);
        kv = fwm__gguf_find_key(&f, "fwm.training.steps");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_UINT64 && fwm__gguf_read_u64(kv->value) == 7200);
        kv = fwm__gguf_find_key(&f, "fwm.training.batch");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_UINT32 && fwm__gguf_read_u32(kv->value) == 32);
        kv = fwm__gguf_find_key(&f, "fwm.training.accuracy");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_FLOAT32 && fwm__gguf_read_f32(kv->value) == 0.9675f);
        kv = fwm__gguf_find_key(&f, "fwm.training.residual_was_tried");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_BOOL && kv->value[0] == 1);
        kv = fwm__gguf_find_key(&f, "general.alignment");
        CHECK(kv && kv->type == FWM_GGUF_TYPE_UINT32 && fwm__gguf_read_u32(kv->value) == 64);
        kv = fwm__gguf_find_key(&f, "fwm.read_policy");
        CHECK(kv && fwm__gguf_read_string(kv->value).length == 5); /* "token" */
        fwm__gguf_release(&f);
    }
    CHECK_U64(temporary_files_left(), 0);
done_file:
    free(file);
done:
    free(w.flat);
    unlink(path);
}

/* The fingerprint changes with anything that identifies the model. */
static void fingerprint_sensitivity(void) {
    fwm_hparams hp = small_hparams();
    uint32_t lengths[7];
    for (int i = 0; i < 7; i++) lengths[i] = (uint32_t)strlen(vocabulary[i]);
    uint64_t base = fwm__schema_fingerprint(&hp, vocabulary, lengths, 1234);
    CHECK_U64(fwm__schema_fingerprint(&hp, vocabulary, lengths, 1234), base);
    CHECK(fwm__schema_fingerprint(&hp, vocabulary, lengths, 1235) != base);
    fwm_hparams changed = hp;
    changed.residual = true;
    CHECK(fwm__schema_fingerprint(&changed, vocabulary, lengths, 1234) != base);
    changed = hp;
    changed.layer_norm_eps = 2e-5f;
    CHECK(fwm__schema_fingerprint(&changed, vocabulary, lengths, 1234) != base);
    changed = hp;
    changed.eos_token_id = 2;
    CHECK(fwm__schema_fingerprint(&changed, vocabulary, lengths, 1234) != base);
    const char *other[7] = {"<pad>", "<eos>", ".", "?", "john", "garden", "n,e"};
    CHECK(fwm__schema_fingerprint(&hp, other, lengths, 1234) != base);
    /* lengths are part of it: "ab"+"c" differs from "a"+"bc" */
    const char *split_a[7] = {"<pad>", "<eos>", ".", "?", "ab", "c", "n,w"};
    const char *split_b[7] = {"<pad>", "<eos>", ".", "?", "a", "bc", "n,w"};
    uint32_t la[7] = {5, 5, 1, 1, 2, 1, 3}, lb[7] = {5, 5, 1, 1, 1, 2, 3};
    CHECK(fwm__schema_fingerprint(&hp, split_a, la, 1) != fwm__schema_fingerprint(&hp, split_b, lb, 1));
}

static void replaces_existing_file_atomically(void) {
    fwm_hparams hp = small_hparams();
    weights a, b;
    if (!make_weights(&hp, 1, &a) || !make_weights(&hp, 2, &b)) return;
    const char *path = path_in_dir("replace.gguf");
    fwm_error err = {0};
    fwm_write_spec spec = make_spec(&hp, &a);
    CHECK_OK(fwm__model_write(path, &spec, &err), err);
    size_t size_a = 0, size_b = 0, size_c = 0;
    uint8_t *file_a = read_whole_file(path, &size_a);
    spec = make_spec(&hp, &b);
    CHECK_OK(fwm__model_write(path, &spec, &err), err);
    uint8_t *file_b = read_whole_file(path, &size_b);
    CHECK(file_a && file_b && size_a == size_b && memcmp(file_a, file_b, size_a) != 0);
    /* a refused write leaves the existing file as it was */
    spec.hp.hidden_size = 0;
    CHECK_REFUSED(fwm__model_write(path, &spec, &err), err, FWM_ERR_INVALID_ARGUMENT,
                  "key 'fwm.hidden_size': expected 1 to 65536, found 0");
    uint8_t *file_c = read_whole_file(path, &size_c);
    CHECK(file_c && size_c == size_b && memcmp(file_b, file_c, size_b) == 0);
    CHECK_U64(temporary_files_left(), 0);
    free(file_a);
    free(file_b);
    free(file_c);
    free(a.flat);
    free(b.flat);
    unlink(path);
}

static void refuses_bad_specs(void) {
    fwm_hparams hp = small_hparams();
    weights w;
    if (!make_weights(&hp, 3, &w)) return;
    const char *path = path_in_dir("refused.gguf");
    fwm_error err = {0};
    fwm_write_spec spec;
#define REFUSED(setup, needle)                                                                  \
    do {                                                                                        \
        spec = make_spec(&hp, &w);                                                              \
        setup;                                                                                  \
        CHECK_REFUSED(fwm__model_write(path, &spec, &err), err, FWM_ERR_INVALID_ARGUMENT, needle); \
    } while (0)
    REFUSED(spec.hp.memory_t = 2, "3 chained reads require fwm.memory.s == fwm.memory.t, found 3 and 2");
    REFUSED((spec.hp.read_count = 1, spec.hp.memory_t = 1, spec.hp.memory_t = 0),
            "key 'fwm.memory.t': expected 1 to 65536, found 0");
    REFUSED(spec.hp.eos_token_id = 7, "key 'tokenizer.ggml.eos_token_id': expected a token id below");
    REFUSED(spec.hp.write_scale = NAN, "key 'fwm.write_scale': expected a finite number");
    static const char *const duplicate[] = {"<pad>", "<eos>", ".", "?", "john", "john", "x"};
    REFUSED(spec.head.tokens = duplicate, "duplicate token 'john' (ids 4 and 5)");
    static const char *const empty[] = {"<pad>", "", ".", "?", "john", "garden", "x"};
    REFUSED(spec.head.tokens = empty, "token 1 is empty");
    static const char *const missing[] = {"<pad>", "<eos>", ".", NULL, "john", "garden", "x"};
    REFUSED(spec.head.tokens = missing, "token 3 is NULL");
    REFUSED(spec.head.tokens = NULL, "the vocabulary (tokens) is NULL");
    REFUSED(spec.tensors[FWM_TENSOR_out_bias] = NULL, "tensor 'fwm.out.bias' has no data");
    fwm_write_kv reserved = {.key = "fwm.hidden_size", .kind = FWM_WRITE_KV_U32, .value.u32 = 1};
    REFUSED((spec.head.extra = &reserved, spec.head.extra_count = 1),
            "extra key 'fwm.hidden_size' is written by fwm__model_write itself");
    fwm_write_kv twice[2] = {{.key = "a.b", .kind = FWM_WRITE_KV_U32},
                             {.key = "a.b", .kind = FWM_WRITE_KV_F32}};
    REFUSED((spec.head.extra = twice, spec.head.extra_count = 2), "extra key 'a.b' given twice (#0 and #1)");
    fwm_write_kv null_string = {.key = "a.c", .kind = FWM_WRITE_KV_STRING};
    REFUSED((spec.head.extra = &null_string, spec.head.extra_count = 1), "extra key 'a.c': string value is NULL");
    REFUSED(spec.head.extra_count = 1, "extra_count is 1 but extra is NULL");
#undef REFUSED
    spec = make_spec(&hp, &w);
    CHECK_REFUSED(fwm__model_write(NULL, &spec, &err), err, FWM_ERR_INVALID_ARGUMENT, "path");
    CHECK_REFUSED(fwm__model_write(path, NULL, &err), err, FWM_ERR_INVALID_ARGUMENT, "spec");
    CHECK_REFUSED(fwm__model_write("/nonexistent-fwm-dir/x.gguf", &spec, &err), err, FWM_ERR_IO,
                  "/nonexistent-fwm-dir/x.gguf");
    CHECK(access(path, F_OK) != 0);
    CHECK_U64(temporary_files_left(), 0);
    free(w.flat);
}

static void allocation_failures(void) {
    fwm_hparams hp = small_hparams();
    weights w;
    if (!make_weights(&hp, 4, &w)) return;
    fwm_write_spec spec = make_spec(&hp, &w);
    const char *path = path_in_dir("oom.gguf");
    int failures = 0;
    for (long n = 1; n < 500; n++) {
        fwm_error err = {0};
        fwm__alloc_fail_after(n);
        fwm_status st = fwm__model_write(path, &spec, &err);
        fwm__alloc_fail_reset();
        if (st == FWM_OK) break;
        failures++;
        CHECK_REFUSED(st, err, FWM_ERR_OUT_OF_MEMORY, "out of memory");
        CHECK(access(path, F_OK) != 0);
    }
    CHECK(failures >= 5);
    CHECK(access(path, F_OK) == 0);
    CHECK_U64(temporary_files_left(), 0);
    unlink(path);
    free(w.flat);
}

/* ---- initialisation --------------------------------------------------------------------------- */

static void moments(const float *x, uint64_t n, double *mean, double *std, double *max_abs) {
    double s = 0, s2 = 0, m = 0;
    for (uint64_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
        if (fabs(x[i]) > m) m = fabs(x[i]);
    }
    *mean = s / (double)n;
    *std = sqrt(s2 / (double)n - *mean * *mean);
    *max_abs = m;
}

static void initialisation_distributions(void) {
    fwm_hparams hp = small_hparams();
    hp.vocab_size = 300, hp.embedding_length = 64, hp.hidden_size = 96;
    hp.memory_s = hp.memory_t = 16, hp.memory_r = 8;
    weights w;
    if (!make_weights(&hp, 99, &w)) return;
    double H = 96, S = 16, T = 16, V = 300;
    struct {
        int index;
        int normal;
        double scale; /* bound of U(-scale, scale) or standard deviation */
    } const expected[FWM_TENSOR_COUNT] = {
        {FWM_TENSOR_token_embd, 1, 1.0},
        {FWM_TENSOR_lstm_weight_ih, 0, 1 / sqrt(H)},
        {FWM_TENSOR_lstm_weight_hh, 0, 1 / sqrt(H)},
        {FWM_TENSOR_lstm_bias, 0, 0},
        {FWM_TENSOR_write_weight, 0, sqrt(6 / (H + S))},
        {FWM_TENSOR_write_bias, 0, 1 / sqrt(H)},
        {FWM_TENSOR_read_weight, 0, sqrt(6 / (H + S))},
        {FWM_TENSOR_read_bias, 0, 1 / sqrt(H)},
        {FWM_TENSOR_out_weight, 0, 1 / sqrt(T)},
        {FWM_TENSOR_out_bias, 0, 1 / sqrt(T)},
        {FWM_TENSOR_output_weight, 1, sqrt(2 / (V + H))},
    };
    for (int k = 0; k < FWM_TENSOR_COUNT; k++) {
        int i = expected[k].index;
        uint64_t rows, cols;
        fwm__tensor_shape(&hp, i, &rows, &cols, NULL);
        uint64_t n = rows * cols;
        double mean, std, max_abs, scale = expected[k].scale;
        moments(w.tensors[i], n, &mean, &std, &max_abs);
        double want_std = expected[k].normal ? scale : scale / sqrt(3.0);
        double tolerance = 5 * want_std / sqrt((double)n) + 1e-12; /* about 5 standard errors */
        if (fabs(mean) > tolerance || fabs(std - want_std) > 0.1 * want_std + 1e-12 ||
            (!expected[k].normal && (max_abs > scale || (n >= 96 && max_abs < 0.8 * scale)))) {
            fprintf(stderr,
                    "tensor '%s' (%" PRIu64 " values): mean %g std %g max |x| %g; expected mean 0, "
                    "std %g, %s %g\n",
                    fwm__tensor_name(i), n, mean, std, max_abs, want_std,
                    expected[k].normal ? "normal with std" : "uniform bound", scale);
            check_failures++;
        }
    }
    weights again, other;
    if (make_weights(&hp, 99, &again) && make_weights(&hp, 100, &other)) {
        uint64_t total = fwm__parameter_count(&hp);
        CHECK(memcmp(again.flat, w.flat, total * 4) == 0);
        CHECK(memcmp(other.flat, w.flat, total * 4) != 0);
    }
    /* each tensor has its own stream: changing V leaves the LSTM weights as they were */
    fwm_hparams bigger = hp;
    bigger.vocab_size = 301;
    weights wide;
    if (make_weights(&bigger, 99, &wide)) {
        CHECK(memcmp(wide.tensors[FWM_TENSOR_lstm_weight_hh], w.tensors[FWM_TENSOR_lstm_weight_hh],
                     4 * 384 * 96) == 0);
        free(wide.flat);
    }
    free(again.flat);
    free(other.flat);
    free(w.flat);
}

static void parameter_count_and_state_size(void) {
    fwm_hparams paper = small_hparams();
    paper.vocab_size = 180, paper.embedding_length = paper.hidden_size = 256;
    paper.memory_s = paper.memory_r = paper.memory_t = 32;
    paper.read_count = 3;
    CHECK_U64(fwm__parameter_count(&paper), formula_parameters(&paper));
    CHECK_U64(formula_parameters(&paper), 683745); /* the issue's own figure for these sizes */
    CHECK_U64(fwm__session_state_floats(&paper), 2 * 256 + 32 * 32 * 32);
    fwm_hparams hp = small_hparams();
    for (uint32_t h = 1; h < 40; h += 7)
        for (uint32_t r = 1; r < 6; r += 2) {
            hp.hidden_size = h;
            hp.memory_r = r;
            CHECK_U64(fwm__parameter_count(&hp), formula_parameters(&hp));
            CHECK_U64(fwm__session_state_floats(&hp), 2 * h + 3 * r * 3);
        }
    /* matrices with a size of 1 are still two-dimensional; vectors are one-dimensional */
    hp.embedding_length = 1;
    uint64_t rows, cols;
    int is_matrix;
    fwm__tensor_shape(&hp, FWM_TENSOR_token_embd, &rows, &cols, &is_matrix);
    CHECK(is_matrix && rows == 7 && cols == 1);
    fwm__tensor_shape(&hp, FWM_TENSOR_out_bias, &rows, &cols, &is_matrix);
    CHECK(!is_matrix && cols == 1);
}

/* A model whose sizes are all 1 (E = H = S = R = T = N_r = 1) writes and loads. */
static void smallest_model(void) {
    fwm_hparams hp = small_hparams();
    hp.vocab_size = 2, hp.embedding_length = hp.hidden_size = 1;
    hp.memory_s = hp.memory_r = hp.memory_t = hp.read_count = 1;
    hp.read_token_id = 1;
    weights w;
    if (!make_weights(&hp, 5, &w)) return;
    fwm_write_spec spec = make_spec(&hp, &w);
    const char *path = path_in_dir("smallest.gguf");
    fwm_error err = {0};
    CHECK_OK(fwm__model_write(path, &spec, &err), err);
    size_t size;
    uint8_t *file = read_whole_file(path, &size);
    fwm_schema s;
    CHECK_OK(fwm__schema_parse(file, size, &s, &err), err);
    if (!err.status) {
        CHECK_U64(s.tensors[FWM_TENSOR_out_weight].rows, 1);
        CHECK(memcmp(s.tensors[FWM_TENSOR_output_weight].data, w.tensors[FWM_TENSOR_output_weight], 8) == 0);
        fwm__schema_release(&s);
    }
    free(file);
    free(w.flat);
    unlink(path);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fwm-test-writer-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    static const check_case cases[] = {
        {"round_trip", round_trip},
        {"fingerprint_sensitivity", fingerprint_sensitivity},
        {"replaces_existing_file_atomically", replaces_existing_file_atomically},
        {"refuses_bad_specs", refuses_bad_specs},
        {"allocation_failures", allocation_failures},
        {"initialisation_distributions", initialisation_distributions},
        {"parameter_count_and_state_size", parameter_count_and_state_size},
        {"smallest_model", smallest_model},
    };
    int status = check_run_cases("test_model_writer", cases, sizeof cases / sizeof cases[0]);
    rmdir(dir);
    return status;
}
