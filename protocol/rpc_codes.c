/* rpc_codes.c - the wire names of the protocol's error codes (include/fwm/fwm_protocol.h). */
#include "fwm/fwm_protocol.h"

const char *fwm_rpc_code_name(int code) {
    switch (code) {
#define FWM_RPC_CODE_CASE_(name, value, wire, text) \
    case name:                                      \
        return wire;
        FWM_RPC_CODE_LIST(FWM_RPC_CODE_CASE_)
#undef FWM_RPC_CODE_CASE_
    }
    return "unknown";
}
