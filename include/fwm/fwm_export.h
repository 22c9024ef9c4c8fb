/* fwm_export.h - FWM_API, the mark on every public function of libfwm and libfwm_client.
 *
 * The libraries are compiled with -fvisibility=hidden, so only functions marked FWM_API are exported
 * from the shared libraries; internal functions (the fwm__ prefix) stay inside. Static linking is
 * unaffected.
 */
#ifndef FWM_FWM_EXPORT_H
#define FWM_FWM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define FWM_API __attribute__((visibility("default")))
#else
#define FWM_API
#endif

#endif /* FWM_FWM_EXPORT_H */
