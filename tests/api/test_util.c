/* test_util.c - shared helper of the API tests: a tiny random model on disk. */
#include "test_util.h"

#include <stdlib.h>
#include <unistd.h>

#include "fwm_schema.h"

static char model_path[64];

static float next_uniform(uint64_t *state) { /* splitmix64 -> [-0.5, 0.5) */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((z >> 40) * (1.0 / 16777216.0)) - 0.5f;
}

const char *test_write_model(const char *const *vocabulary, uint64_t seed) {
    return test_write_model_extra(vocabulary, seed, NULL, 0);
}

const char *test_write_model_extra(const char *const *vocabulary, uint64_t seed,
                                   const fwm_write_kv *extra, size_t extra_count) {
    uint32_t v = 0;
    while (vocabulary[v]) v++;
    fwm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    fwm_hparams *hp = &spec.hp;
    hp->vocab_size = v;
    hp->embedding_length = 6;
    hp->hidden_size = 7;
    hp->memory_s = 4;
    hp->memory_r = 3;
    hp->memory_t = 4;
    hp->read_count = 2;
    hp->residual = true;
    hp->read_policy = 0;
    hp->read_token_id = 0;
    hp->forget_bias = 1.0f;
    hp->beta_bias = 1.0f;
    hp->write_scale = 0.25f;
    hp->layer_norm_eps = 1e-5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    spec.head.name = "api-test";
    spec.head.tokens = vocabulary;
    spec.head.extra = extra;
    spec.head.extra_count = extra_count;
    float *storage[FWM_TENSOR_COUNT] = {0};
    const char *result = NULL;
#define FWM_FILL_(field, name, rows, cols)                                          \
    {                                                                               \
        size_t n = (size_t)(rows) * (size_t)(cols);                                 \
        storage[FWM_TENSOR_##field] = malloc(n * sizeof(float));                    \
        if (!storage[FWM_TENSOR_##field]) goto done;                                \
        for (size_t i = 0; i < n; i++) storage[FWM_TENSOR_##field][i] = next_uniform(&seed); \
        spec.tensors[FWM_TENSOR_##field] = storage[FWM_TENSOR_##field];             \
    }
    FWM_TENSOR_LIST(FWM_FILL_)
#undef FWM_FILL_
    snprintf(model_path, sizeof model_path, "/tmp/fwm-api-test-XXXXXX");
    int fd = mkstemp(model_path);
    if (fd < 0) goto done;
    close(fd);
    fwm_error err;
    if (fwm__model_write(model_path, &spec, &err) != FWM_OK) {
        fprintf(stderr, "test_write_model: %s\n", err.message);
        unlink(model_path);
        goto done;
    }
    result = model_path;
done:
    for (int i = 0; i < FWM_TENSOR_COUNT; i++) free(storage[i]);
    return result;
}

void test_remove_model(void) {
    if (model_path[0]) unlink(model_path);
}
