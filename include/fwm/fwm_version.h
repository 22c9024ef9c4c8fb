/* fwm_version.h - the release of fwm these headers belong to (libfwm, libfwm_client, fwm-serve,
 * fwm-cli), as numbers and as a string.
 *
 * The one version is meson.build's project version; this header, the Python client's __version__
 * and the JavaScript client's package.json repeat it, and the `versions` test (tests/install)
 * fails when any of them, fwm-serve --version, fwm-cli --version or the pkg-config files disagree.
 * The shared libraries' SONAMEs follow their ABI, not this number (meson.build says how).
 */
#ifndef FWM_FWM_VERSION_H
#define FWM_FWM_VERSION_H

#define FWM_VERSION_MAJOR 0
#define FWM_VERSION_MINOR 3
#define FWM_VERSION_PATCH 0
#define FWM_VERSION_STRING "0.3.0"

#endif /* FWM_FWM_VERSION_H */
