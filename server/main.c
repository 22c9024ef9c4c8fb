/* main.c - fwm-serve's entry point: configuration, then the server's loop until shutdown. */
#include <signal.h>
#include <stdio.h>

#include "alloc_faults.h"
#include "config.h"
#include "server.h"

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN); /* a peer that vanished shows up as a write error, not a signal */
    fwm__config config;
    fwm__config_defaults(&config);
    int rc = fwm__config_parse(&config, argc, argv, stdout, stderr);
    if (rc != 0) {
        fwm__config_release(&config);
        return rc == 2 ? 0 : 2;
    }
    fwm__server server;
    if (fwm__server_init(&server, &config) != 0) {
        fwm__config_release(&config);
        return 1;
    }
    fwm__alloc_faults_arm(); /* tests only: FWM_ALLOC_FAIL_AT and friends */
    rc = fwm__server_run(&server);
    fwm__alloc_faults_report();
    fwm__config_release(&config);
    return rc;
}
