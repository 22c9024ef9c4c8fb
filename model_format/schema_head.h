/* schema_head.h - the head every architecture's schema embeds as its field `head`: what the keys
 * all architectures share hold once parsed (general.name, the vocabulary, the prime tokens, the
 * checksum and fingerprint keys). One function reads it (fwm__schema_read_common in
 * schema_common.h), one releases it. Internal to libfwm and its tools. */
#ifndef FWM_MODEL_FORMAT_SCHEMA_HEAD_H
#define FWM_MODEL_FORMAT_SCHEMA_HEAD_H

#include <stdint.h>

/* The most prime tokens a model may name (FWM_KEY_PRIME_TOKENS, fwm_schema.h). */
#define FWM_MAX_PRIME_TOKENS 64u

typedef struct fwm__schema_head {
    char *name;              /* owned; general.name or "" */
    char **tokens;           /* owned; V NUL-terminated token strings */
    uint32_t *token_lengths; /* owned; V byte lengths */
    int has_checksum;        /* FWM_KEY_CHECKSUM present */
    uint64_t checksum;       /* its stored value */
    int has_fingerprint;     /* FWM_KEY_FINGERPRINT present */
    uint64_t fingerprint;    /* its stored value */
    int has_prime_tokens;    /* FWM_KEY_PRIME_TOKENS present (else the default filled in) */
    uint32_t prime_count;    /* tokens a new session reads first, 0..FWM_MAX_PRIME_TOKENS */
    uint32_t prime_tokens[FWM_MAX_PRIME_TOKENS];
    int bf16_matmul;         /* FWM_KEY_MATMUL_TYPE is "bf16" */
} fwm__schema_head;

#endif
