/* hello.c - the methods that say what the server is and how it is doing: hello (who it is, its models
 * and limits, and authentication) and stats (handlers.h). */
#include "handlers.h"

#include <string.h>

#include "stats/stats_reply.h"
#include "tiering/cluster_node.h"
#include "tiering/lookup.h"

static void pack_model(msgpack_packer *pk, const fwm__served_model *m, bool is_default) {
    const fwm_model_info *i = &m->info;
    bool stm = strcmp(i->architecture, "stm") == 0;
    msgpack_pack_map(pk, stm ? 25 : 20); /* count the keys below when adding one */
    key_str(pk, "name", m->name);
    key_str(pk, "architecture", i->architecture); /* "fwm", "lstm", "mnm", "gfw" or "stm" */
    key_u64(pk, "layers", i->layer_count);
    key_str(pk, "fingerprint", m->fingerprint);
    key_u64(pk, "vocab_size", i->vocab_size);
    key_u64(pk, "embedding", i->embedding_length);
    key_u64(pk, "hidden", i->hidden_size);
    key(pk, "memory");
    msgpack_pack_array(pk, 3);
    msgpack_pack_uint32(pk, i->memory_s);
    msgpack_pack_uint32(pk, i->memory_r);
    msgpack_pack_uint32(pk, i->memory_t);
    key_u64(pk, "reads", i->read_count);
    key_bool(pk, "residual", i->residual);
    key_str(pk, "read_policy", i->read_policy == FWM_READ_ON_TOKEN ? "token" : "always");
    key_str(pk, "tokenizer", i->tokenizer); /* "word" or "text" */
    key_bool(pk, "has_unknown_token", m->has_unknown); /* words outside the vocabulary read as <unk> */
    key_bool(pk, "logprobs", m->predicts_from_state); /* feed takes logprobs */
    key_u64(pk, "parameters", i->parameter_count);
    key_u64(pk, "session_bytes", m->session_bytes);
    key_u64(pk, "state_blob_bytes", i->state_blob_bytes);
    key_bool(pk, "checksum_verified", i->checksum_verified);
    key_bool(pk, "default", is_default);
    key(pk, "prime"); /* the words a new session has read (open, reset) */
    msgpack_pack_array(pk, i->prime_token_count);
    for (uint32_t t = 0; t < i->prime_token_count; t++)
        fwm__rpc_pack_cstr(pk, fwm_model_token_text(m->model, i->prime_tokens[t]));
    if (!stm) return;
    /* how an STM reads tokens: in sentence mode it predicts only after a question's end */
    key_str(pk, "input", i->sentence_input ? "sentence" : "word");
    key_str(pk, "statement_end", fwm_model_token_text(m->model, i->statement_end_token_id));
    key_str(pk, "question_end", fwm_model_token_text(m->model, i->question_end_token_id));
    key_u64(pk, "max_sentence_words", i->max_sentence_words);
    key_bool(pk, "reset_on_eos", i->reset_on_eos);
}

#define MAX_WRONG_TOKENS 3 /* per connection, then it is closed */

/* hello {token}: authenticates the connection when the token is the server's. */
static bool authenticate(fwm__request *r) {
    const char *token;
    size_t length;
    int has = fwm__rpc_arg_string(&r->call, "token", false, &token, &length, &r->failure);
    if (has <= 0 || !r->s->auth_token) return has >= 0;
    if (fwm__server_token_matches(r->s, token, length)) {
        r->c->authenticated = true;
        return true;
    }
    r->s->metrics.auth_failures++;
    if (++r->c->wrong_tokens >= MAX_WRONG_TOKENS)
        fwm__connection_fail(r->c, FWM_RPC_UNAUTHORIZED, "too many wrong tokens; the connection is closed");
    return fwm__rpc_fail(&r->failure, FWM_RPC_UNAUTHORIZED, "wrong token (attempt %u of %d on this connection)",
                         r->c->wrong_tokens, MAX_WRONG_TOKENS);
}

/* Cluster: the live nodes for hello and stats, read off the loop (the request parks meanwhile);
 * false when parked. When the store did not answer in time, the last list read. */
static bool live_nodes(fwm__request *r, const fwm__lookup_node **nodes, size_t *count) {
    *nodes = NULL;
    *count = 0;
    if (!r->s->cluster || !fwm__lookup_remote(r->s)) return true;
    const fwm__lookup *answer = fwm__lookup_ready(r->c, FWM_LOOKUP_NODES, NULL);
    if (!answer) {
        if (fwm__lookup_park(r->c, FWM_LOOKUP_NODES, NULL)) return false;
        fwm__lookup_last_nodes(r->s, nodes, count); /* out of memory: what is known */
        return true;
    }
    if (!answer->timed_out && answer->nodes_ok) {
        *nodes = answer->nodes;
        *count = answer->node_count;
    } else {
        fwm__lookup_last_nodes(r->s, nodes, count);
    }
    return true;
}

bool fwm__method_hello(fwm__request *r) {
    const fwm__lookup_node *nodes;
    size_t node_count;
    if (!live_nodes(r, &nodes, &node_count)) return false; /* parked */
    if (!authenticate(r)) return false;
    msgpack_packer pk;
    if (!fwm__request_begin_response(r, &pk)) return true;
    const fwm__server *s = r->s;
    const fwm__config *cfg = s->config;
    bool authenticated = r->c->authenticated;
    msgpack_pack_map(&pk, authenticated ? 11 : 5);
    key_str(&pk, "server", "fwm-serve");
    key_str(&pk, "version", FWM_VERSION_STRING);
    key_u64(&pk, "protocol", FWM_PROTOCOL_VERSION);
    key_bool(&pk, "auth_required", !authenticated || s->auth_token != NULL);
    key_bool(&pk, "authenticated", authenticated);
    if (!authenticated) return true; /* who it is, and that it wants a token: nothing more */
    key(&pk, "models");
    msgpack_pack_array(&pk, s->model_count);
    for (size_t m = 0; m < s->model_count; m++) pack_model(&pk, &s->models[m], m == 0);
    key(&pk, "limits");
    msgpack_pack_map(&pk, 15);
    key_u64(&pk, "max_sessions", cfg->max_sessions);
    key_u64(&pk, "max_sessions_per_connection", cfg->max_sessions_per_connection);
    key_u64(&pk, "max_memory_bytes", cfg->max_memory_bytes);
    key_double(&pk, "idle_timeout_s", cfg->idle_timeout_s);
    key_u64(&pk, "max_message_bytes", cfg->limits.max_message_bytes);
    key_u64(&pk, "max_depth", cfg->limits.max_depth);
    key_u64(&pk, "max_string_bytes", cfg->limits.max_string_bytes);
    key_u64(&pk, "max_binary_bytes", cfg->limits.max_binary_bytes);
    key_u64(&pk, "max_objects", cfg->limits.max_objects);
    key_u64(&pk, "max_feed_tokens", cfg->max_feed_tokens);
    key_u64(&pk, "max_queued_tokens", cfg->max_queued_tokens);
    key_u64(&pk, "max_output_bytes", cfg->max_output_bytes);
    key_u64(&pk, "max_inflight", cfg->max_inflight);
    key_double(&pk, "message_timeout_s", cfg->message_timeout_s);
    key_double(&pk, "connection_idle_timeout_s", cfg->connection_idle_timeout_s);
    key_u64(&pk, "workers", s->workers);
    key_u64(&pk, "max_batch", cfg->max_batch);
    key(&pk, "durability"); /* nil: sessions live in memory only */
    if (s->store) {
        msgpack_pack_map(&pk, 4);
        key_str(&pk, "fsync", fwm__fsync_mode_name((fwm__fsync_mode)cfg->fsync_mode));
        key_u64(&pk, "max_resident", cfg->max_resident);
        key_u64(&pk, "snapshot_tokens", cfg->snapshot_tokens);
        key_double(&pk, "session_ttl_s", cfg->session_ttl_s);
    } else {
        msgpack_pack_nil(&pk);
    }
    fwm__cluster_node_pack_hello(&pk, (fwm__server *)s, nodes, node_count);
    return true;
}

bool fwm__method_stats(fwm__request *r) {
    const fwm__lookup_node *nodes;
    size_t node_count;
    if (!live_nodes(r, &nodes, &node_count)) return false; /* parked */
    msgpack_packer pk;
    if (!fwm__request_begin_response(r, &pk)) return true;
    fwm__stats_pack(&pk, r->s, nodes, node_count);
    return true;
}
