/* alloc_faults.h - allocation-failure injection in a running fwm-serve, for tests: armed from the
 * environment (FWM_ALLOC_FAIL_AT, FWM_ALLOC_SITES, FWM_ALLOC_REPORT; alloc_faults.c) once the server
 * is ready, reported when it stops. No-ops without those variables. */
#ifndef FWM_SERVER_ALLOC_FAULTS_H
#define FWM_SERVER_ALLOC_FAULTS_H

#include <stdbool.h>

void fwm__alloc_faults_arm(void);
void fwm__alloc_faults_report(void);

#endif
