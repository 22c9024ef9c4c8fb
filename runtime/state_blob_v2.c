/* state_blob_v2.c - export and import of a version-2 session state blob, shared by the
 * architectures other than the FWM (state_blob_v2.h): the header, the dims, the trailer and every
 * check up to the architecture's own body. */
#include "state_blob_v2.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch_ops.h"
#include "fwm_error.h"
#include "state_blob_common.h"
#include "xxhash64.h"

static const fwm_blob_v2_layout *layout_of(const struct fwm_model *model) {
    return fwm__arch_ops(model->arch)->blob_v2;
}

static unsigned body_offset(const fwm_blob_v2_layout *layout) {
    return FWM_BLOB_V2_HEADER_BYTES + 4u * layout->dim_count;
}

/* "L=2 H=64": the named dims, for a message. */
static void format_dims(char *out, size_t capacity, const fwm_blob_v2_layout *layout, const uint32_t *dims) {
    size_t used = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < layout->named_dims && used < capacity; i++) {
        int n = snprintf(out + used, capacity - used, "%s%s=%" PRIu32, i ? " " : "", layout->dim_names[i],
                         dims[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

size_t fwm__blob_v2_size(const struct fwm_model *model) {
    const fwm_blob_v2_layout *layout = layout_of(model);
    return body_offset(layout) + layout->body_bytes(model) + FWM_BLOB_TRAILER_BYTES;
}

fwm_status fwm__blob_v2_export(const fwm_session *session, void *buffer, size_t capacity, size_t *written,
                               fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_export: session is NULL");
    const struct fwm_model *model = session->model;
    const fwm_blob_v2_layout *layout = layout_of(model);
    size_t need = fwm__blob_v2_size(model);
    if (written) *written = need;
    if (!buffer || capacity < need)
        return fwm__error(err, FWM_ERR_BUFFER_TOO_SMALL, "state blob needs %zu bytes, the buffer holds %zu",
                          need, buffer ? capacity : (size_t)0);
    unsigned char *p = buffer;
    fwm__blob_put_v2_header(p, model->fingerprint, fwm__arch_ops(model->arch)->name, session->position);
    uint32_t dims[FWM_BLOB_V2_MAX_DIMS];
    layout->model_dims(model, dims);
    for (unsigned i = 0; i < layout->dim_count; i++)
        fwm__put_u32(p + FWM_BLOB_V2_HEADER_BYTES + 4 * i, dims[i]);
    layout->put_body(session, p + body_offset(layout));
    fwm__put_u64(p + need - FWM_BLOB_TRAILER_BYTES, fwm__xxh64(p, need - FWM_BLOB_TRAILER_BYTES, 0));
    return FWM_OK;
}

fwm_status fwm__blob_v2_import(fwm_session *session, const void *blob, size_t size, fwm_error *err) {
    fwm__error_clear(err);
    if (!session) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: session is NULL");
    if (!blob) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_session_import: blob is NULL");
    const struct fwm_model *model = session->model;
    const fwm_blob_v2_layout *layout = layout_of(model);
    const char *arch_name = fwm__arch_ops(model->arch)->name;
    const unsigned char *p = blob;
    unsigned offset = body_offset(layout);
    if (size < offset + FWM_BLOB_TRAILER_BYTES)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, shorter than its %u-byte header and trailer", size,
                          offset + FWM_BLOB_TRAILER_BYTES);
    if (memcmp(p, fwm__blob_magic, 4) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob magic is %02x %02x %02x %02x, expected \"FWMS\"", p[0], p[1], p[2],
                          p[3]);
    uint32_t version = fwm__get_u32(p + 4);
    if (version != FWM_BLOB_V2)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob version is %" PRIu32 ", expected %u (%s '%s' session's state)", version,
                          FWM_BLOB_V2, layout->article, arch_name);
    unsigned char name[FWM_BLOB_ARCH_BYTES] = {0};
    size_t name_length = strlen(arch_name);
    memcpy(name, arch_name, name_length < FWM_BLOB_ARCH_BYTES ? name_length : FWM_BLOB_ARCH_BYTES);
    if (memcmp(p + 16, name, FWM_BLOB_ARCH_BYTES) != 0)
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob architecture is not \"%s\"", arch_name);
    uint32_t dims[FWM_BLOB_V2_MAX_DIMS];
    for (unsigned i = 0; i < layout->dim_count; i++)
        dims[i] = fwm__get_u32(p + FWM_BLOB_V2_HEADER_BYTES + 4 * i);
    char text[128];
    uint64_t body, fixed = (uint64_t)offset + FWM_BLOB_TRAILER_BYTES;
    bool implied = layout->implied_body_bytes(dims, &body) && body <= UINT64_MAX - fixed;
    uint64_t expected = implied ? fixed + body : 0; /* 0: out of range, which no size matches */
    if (expected != (uint64_t)size) {
        format_dims(text, sizeof text, layout, dims);
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob is %zu bytes, its header (%s) implies %" PRIu64 " bytes", size, text,
                          expected);
    }
    uint64_t stored, computed;
    if (!fwm__blob_checksum_ok(blob, size, &stored, &computed))
        return fwm__error(err, FWM_ERR_STATE_CORRUPT,
                          "state blob checksum mismatch: stored %016" PRIx64 ", computed %016" PRIx64,
                          stored, computed);
    uint64_t fingerprint = fwm__get_u64(p + 8);
    if (fingerprint != model->fingerprint)
        return fwm__error(err, FWM_ERR_STATE_MODEL_MISMATCH,
                          "state blob belongs to model %016" PRIx64 ", this session's model is %016" PRIx64,
                          fingerprint, model->fingerprint);
    uint32_t own[FWM_BLOB_V2_MAX_DIMS];
    layout->model_dims(model, own);
    if (memcmp(dims, own, layout->named_dims * sizeof *dims) != 0) {
        char model_text[128];
        format_dims(text, sizeof text, layout, dims);
        format_dims(model_text, sizeof model_text, layout, own);
        return fwm__error(err, FWM_ERR_STATE_CORRUPT, "state blob dims %s differ from the model's %s", text,
                          model_text);
    }
    fwm_status status = layout->read_body(session, p + offset, err);
    if (status != FWM_OK) return status;
    session->position = fwm__get_u64(p + 24);
    return FWM_OK;
}
