/* stats_reply.h - the body of the `stats` method's response (docs/PROTOCOL.md, `stats`): the lists
 * of metric_list.h as a msgpack map, with its "memory", "durability" and "cluster" sections.
 * Loop thread only.
 */
#ifndef FWM_SERVER_STATS_STATS_REPLY_H
#define FWM_SERVER_STATS_STATS_REPLY_H

#include <msgpack.h>
#include <stddef.h>

#include "server.h"
#include "tiering/lookup.h"

/* Pack the response body; `nodes`: the cluster's live nodes (tiering/lookup.h). */
void fwm__stats_pack(msgpack_packer *pk, fwm__server *server, const fwm__lookup_node *nodes, size_t node_count);

#endif
