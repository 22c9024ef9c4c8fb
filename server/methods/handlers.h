/* handlers.h - one handler per protocol method, each checking its request's arguments and answering it
 * at once or turning it into a job: true when it answered or submitted, false with r->failure filled
 * (or with the connection parked until the store answers, lookup.h). methods.c's table names them.
 *
 * Loop thread only. Internal to methods/.
 */
#ifndef FWM_SERVER_METHODS_HANDLERS_H
#define FWM_SERVER_METHODS_HANDLERS_H

#include "request.h"

bool fwm__method_hello(fwm__request *r);
bool fwm__method_stats(fwm__request *r);
bool fwm__method_sessions(fwm__request *r);
bool fwm__method_open(fwm__request *r);
bool fwm__method_feed(fwm__request *r);
bool fwm__method_ask(fwm__request *r);
bool fwm__method_predict(fwm__request *r);
bool fwm__method_trace(fwm__request *r);
bool fwm__method_reset(fwm__request *r);
bool fwm__method_snapshot(fwm__request *r);
bool fwm__method_fork(fwm__request *r);
bool fwm__method_restore(fwm__request *r);
bool fwm__method_close(fwm__request *r);

#endif
