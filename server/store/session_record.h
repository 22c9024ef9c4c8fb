/* session_record.h - the bytes a durable session is stored as: its meta record, its snapshot and its
 * log records, each versioned and ending in an XXH64 checksum of everything before it, so damage is
 * detected on read and never replayed. Little-endian, fixed layouts (docs/DURABILITY.md).
 *
 * Backend-independent: the store keeps these as opaque values.
 */
#ifndef FWM_SERVER_SESSION_RECORD_H
#define FWM_SERVER_SESSION_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FWM_RECORD_MODEL_NAME_MAX 127

typedef struct fwm__session_meta {
    uint64_t fingerprint;   /* the model's fingerprint: a session is served only by that model */
    char model_name[FWM_RECORD_MODEL_NAME_MAX + 1]; /* as it was named when last written (informative) */
    uint32_t topk;          /* the session's default top-k */
    uint64_t pos;           /* tokens read, as of the last write */
    uint64_t created_ms;    /* wall clock, milliseconds since 1970 */
    uint64_t last_used_ms;
    uint64_t log_base;      /* the first log seq not covered by the snapshot */
    bool has_snapshot;      /* false: the state at log_base is a fresh session's */
} fwm__session_meta;

typedef enum fwm__log_op {
    FWM_LOG_STEP = 1,  /* tokens were read, in order */
    FWM_LOG_RESET = 2, /* the state was reset to zero */
    FWM_LOG_RESET_PRIMED = 3, /* the state was reset to the model's start state (fwm_session_prime) */
} fwm__log_op;

/* Meta record: encode into `out` (FWM_META_RECORD_BYTES). */
#define FWM_META_RECORD_BYTES (8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 1 + FWM_RECORD_MODEL_NAME_MAX + 1 + 8)
void fwm__meta_encode(const fwm__session_meta *meta, uint8_t out[FWM_META_RECORD_BYTES]);
/* False when the bytes are not an intact meta record of this version. */
bool fwm__meta_decode(const void *bytes, size_t length, fwm__session_meta *meta);

/* Log record: op, tokens. Size of the encoding, then encode. */
size_t fwm__log_record_bytes(size_t token_count);
void fwm__log_record_encode(fwm__log_op op, const uint32_t *tokens, size_t count, uint8_t *out);
/* Decode in place: *tokens points into `bytes` (may be unaligned: read with fwm__log_token). False
 * when damaged. */
bool fwm__log_record_decode(const void *bytes, size_t length, fwm__log_op *op, const uint8_t **tokens,
                            size_t *count);
uint32_t fwm__log_token(const uint8_t *tokens, size_t index);

/* Snapshot: the runtime's state blob and, when has_logits, the last prediction's `vocab` logits. */
size_t fwm__snapshot_record_bytes(size_t blob_bytes, uint32_t vocab, bool has_logits);
/* Encode the header and logits; the caller writes the blob at *blob_at, then calls _seal. */
void fwm__snapshot_record_begin(uint8_t *out, size_t blob_bytes, uint32_t vocab, bool has_logits,
                                const float *logits, uint8_t **blob_at);
void fwm__snapshot_record_seal(uint8_t *out, size_t total);
typedef struct fwm__snapshot_view {
    const uint8_t *blob;
    size_t blob_bytes;
    bool has_logits;
    uint32_t vocab;
    const uint8_t *logits; /* vocab little-endian floats (may be unaligned) */
} fwm__snapshot_view;
bool fwm__snapshot_record_decode(const void *bytes, size_t length, fwm__snapshot_view *view);

#endif
