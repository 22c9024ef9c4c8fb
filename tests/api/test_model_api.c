/* test_model_api.c - the model's public API around loading: file errors, mmap and read paths agree,
 * info, *_free(NULL), loading from a buffer, and allocation-failure injection on load and on session
 * creation (every allocation made to fail in turn, each failure reported cleanly, nothing leaked). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fwm_alloc.h"
#include "test_util.h"

static const char *const vocabulary[] = {"<pad>", "<eos>", "a", "b", "?", ".", NULL};

static void *read_whole(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(*size + 1);
    if (buf && fread(buf, 1, *size, f) != *size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static void test_file_errors(void) {
    fwm_model *model = (fwm_model *)&model; /* must be reset to NULL on failure */
    fwm_error err;
    CHECK_INT(fwm_model_load("/nonexistent/model.gguf", NULL, &model, &err), FWM_ERR_IO);
    CHECK(model == NULL);
    CHECK_CONTAINS(err.message, "/nonexistent/model.gguf");
    CHECK_INT(fwm_model_load("/tmp", NULL, &model, &err), FWM_ERR_IO);
    CHECK_CONTAINS(err.message, "not a regular file");
    CHECK_INT(fwm_model_load(NULL, NULL, &model, &err), FWM_ERR_INVALID_ARGUMENT);
    CHECK_INT(fwm_model_load("/tmp", NULL, NULL, NULL), FWM_ERR_INVALID_ARGUMENT);
    /* an empty file is malformed, not an I/O error */
    char path[] = "/tmp/fwm-empty-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_ERR_FORMAT);
    CHECK(err.message[0] != '\0');
    unlink(path);
}

static void test_load_paths_agree(const char *path) {
    fwm_model_params mapped = fwm_model_default_params(), read = mapped;
    read.use_mmap = false;
    fwm_model *a = NULL, *b = NULL, *c = NULL;
    fwm_error err;
    CHECK_INT(fwm_model_load(path, &mapped, &a, &err), FWM_OK);
    CHECK_INT(fwm_model_load(path, &read, &b, &err), FWM_OK);
    size_t size = 0;
    unsigned char *bytes = read_whole(path, &size);
    CHECK(bytes != NULL);
    /* an odd address: every tensor is misaligned and must be copied, not read in place */
    unsigned char *shifted = malloc(size + 1);
    memcpy(shifted + 1, bytes, size);
    CHECK_INT(fwm_model_load_from_buffer(shifted + 1, size, NULL, &c, &err), FWM_OK);
    if (a && b && c) {
        fwm_model_info ia, ib, ic;
        fwm_model_get_info(a, &ia);
        fwm_model_get_info(b, &ib);
        fwm_model_get_info(c, &ic);
        CHECK_INT(ia.vocab_size, 6);
        CHECK_INT(ia.hidden_size, 7);
        CHECK_INT(ia.read_count, 2);
        CHECK(ia.residual);
        CHECK_STR(ia.name, "api-test");
        CHECK(ia.has_checksum && ia.checksum_verified);
        CHECK(ia.fingerprint == ib.fingerprint && ia.fingerprint == ic.fingerprint);
        /* parameter count from docs/MODEL.md's shapes: V*E + 4H*E + 4H*H + 4H + (S+R+T+1)*(H+1)
         * + (S+Nr*R)*(H+1) + H*T + H + V*H with V=6 E=6 H=7 S=4 R=3 T=4 Nr=2 */
        CHECK_INT(ia.parameter_count, 6 * 6 + 28 * 6 + 28 * 7 + 28 + 12 * 8 + 10 * 8 + 7 * 4 + 7 + 6 * 7);
        CHECK_INT(ia.session_state_floats, 2 * 7 + 4 * 3 * 4);
        CHECK(ia.session_state_bytes >= ia.session_state_floats * sizeof(float));
        CHECK(ia.state_blob_bytes > ia.session_state_floats * sizeof(float));
        /* the three copies compute the same logits */
        float la[6], lb[6], lc[6];
        fwm_session *sa = NULL, *sb = NULL, *sc = NULL;
        CHECK_INT(fwm_session_create(a, &sa, &err), FWM_OK);
        CHECK_INT(fwm_session_create(b, &sb, &err), FWM_OK);
        CHECK_INT(fwm_session_create(c, &sc, &err), FWM_OK);
        for (uint32_t t = 0; t < 12 && sa && sb && sc; t++) {
            CHECK_INT(fwm_session_step(sa, t % 6, la, &err), FWM_OK);
            CHECK_INT(fwm_session_step(sb, t % 6, lb, &err), FWM_OK);
            CHECK_INT(fwm_session_step(sc, t % 6, lc, &err), FWM_OK);
            CHECK(memcmp(la, lb, sizeof la) == 0);
            CHECK(memcmp(la, lc, sizeof la) == 0);
        }
        fwm_session_free(sa);
        fwm_session_free(sb);
        fwm_session_free(sc);
    }
    fwm_model_free(a);
    fwm_model_free(b);
    fwm_model_free(c);
    /* without checksum verification the file still loads, marked unverified */
    fwm_model_params trusting = fwm_model_default_params();
    trusting.verify_checksum = false;
    CHECK_INT(fwm_model_load_from_buffer(bytes, size, &trusting, &a, &err), FWM_OK);
    if (a) {
        fwm_model_info ia;
        fwm_model_get_info(a, &ia);
        CHECK(ia.has_checksum && !ia.checksum_verified);
    }
    fwm_model_free(a);
    free(shifted);
    free(bytes);
}

/* Make allocation number n fail for n = 1, 2, ... until the operation succeeds without a failure;
 * every failing run must return FWM_ERR_OUT_OF_MEMORY with a message and leave *out NULL. */
static void test_allocation_failures(const char *path) {
    fwm_model_params read = fwm_model_default_params();
    for (int use_mmap = 0; use_mmap <= 1; use_mmap++) {
        read.use_mmap = use_mmap;
        int failures_seen = 0;
        for (long n = 1; n < 10000; n++) {
            fwm_model *model = (fwm_model *)&read;
            fwm_error err;
            fwm__alloc_fail_after(n);
            fwm_status s = fwm_model_load(path, &read, &model, &err);
            long calls = fwm__alloc_calls();
            fwm__alloc_fail_reset();
            if (s == FWM_OK) {
                CHECK(calls < n); /* succeeded only because no allocation reached number n */
                fwm_model_free(model);
                break;
            }
            failures_seen++;
            CHECK_INT(s, FWM_ERR_OUT_OF_MEMORY);
            CHECK(model == NULL);
            CHECK(err.message[0] != '\0');
        }
        CHECK(failures_seen >= 3);
    }
    fwm_model *model = NULL;
    fwm_error err;
    CHECK_INT(fwm_model_load(path, NULL, &model, &err), FWM_OK);
    if (!model) return;
    for (long n = 1; n < 100; n++) {
        fwm_session *session = (fwm_session *)&n, *fork = (fwm_session *)&n;
        fwm__alloc_fail_after(n);
        fwm_status s = fwm_session_create(model, &session, &err);
        fwm_status f = s == FWM_OK ? fwm_session_fork(session, &fork, &err) : FWM_ERR_OUT_OF_MEMORY;
        fwm__alloc_fail_reset();
        if (s != FWM_OK) {
            CHECK_INT(s, FWM_ERR_OUT_OF_MEMORY);
            CHECK(session == NULL);
            continue;
        }
        if (f != FWM_OK) {
            CHECK_INT(f, FWM_ERR_OUT_OF_MEMORY);
            CHECK(fork == NULL);
            fwm_session_free(session);
            continue;
        }
        fwm_session_free(fork);
        fwm_session_free(session);
        break;
    }
    fwm_model_free(model);
}

int main(void) {
    fwm_model_free(NULL);
    fwm_session_free(NULL);
    fwm_model_info info;
    fwm_model_get_info(NULL, &info);
    CHECK_INT(info.vocab_size, 0);

    test_file_errors();
    const char *path = test_write_model(vocabulary, 3);
    CHECK(path != NULL);
    if (path) {
        test_load_paths_agree(path);
        test_allocation_failures(path);
        test_remove_model();
    }
    return check_finish("test_model_api");
}
