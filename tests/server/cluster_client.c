/* cluster_client.c - drives the C client against a cluster of fwm-serve nodes, for
 * test_cluster.py (case c_client): asks node ADDRESS for SESSION (owned by another
 * node: the client must follow `moved`), feeds it TEXT, then opens OPENS sessions (spread over the
 * live nodes). Prints one line per step: "predict NODE POS TOPWORD", "feed NODE POS",
 * "open NODE SESSION".
 * Usage: cluster_client ADDRESS SESSION TEXT OPENS */
#include <stdio.h>
#include <stdlib.h>

#include "fwm/fwm_client.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: cluster_client ADDRESS SESSION TEXT OPENS\n");
        return 2;
    }
    fwm_client *c;
    fwm_client_error err;
    if (fwm_client_connect(argv[1], NULL, &c, &err) != FWM_RPC_OK) {
        fprintf(stderr, "connect: %s\n", err.message);
        return 1;
    }
    fwm_client_answer a;
    if (fwm_client_predict(c, argv[2], 3, &a, &err) != FWM_RPC_OK) {
        fprintf(stderr, "predict: %s: %s\n", err.name, err.message);
        return 1;
    }
    printf("predict %s %llu %s\n", fwm_client_node(c), (unsigned long long)a.pos, a.answer);
    uint64_t pos = 0;
    if (fwm_client_feed(c, argv[2], argv[3], 0, NULL, NULL, &pos, NULL, &err) != FWM_RPC_OK) {
        fprintf(stderr, "feed: %s: %s\n", err.name, err.message);
        return 1;
    }
    printf("feed %s %llu\n", fwm_client_node(c), (unsigned long long)pos);
    for (int i = 0; i < atoi(argv[4]); i++) {
        char session[FWM_CLIENT_SESSION_ID_SIZE];
        if (fwm_client_open(c, NULL, -1, session, &err) != FWM_RPC_OK) {
            fprintf(stderr, "open: %s: %s\n", err.name, err.message);
            return 1;
        }
        printf("open %s %s\n", fwm_client_node(c), session);
    }
    fwm_client_free(c);
    return 0;
}
