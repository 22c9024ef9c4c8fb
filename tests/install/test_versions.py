#!/usr/bin/env python3
"""test_versions.py - every place that states fwm's version states the same one (suite 'install').

  test_versions.py SOURCE_ROOT BUILD_ROOT FWM_SERVE FWM_CLI

The one version is meson.build's project version (as `meson introspect` wrote it into the build
folder). Checked against it: include/fwm/fwm_version.h, `fwm-serve --version`, `fwm-cli --version`,
the pkg-config files fwm.pc and fwm-client.pc, the Python client (fwm_client.__version__, which its
pyproject.toml reads), the JavaScript client's package.json and package-lock.json, and the web
page's; and the shared libraries' file names against their SONAMEs (libfwm.so.S.MINOR.PATCH with
SONAME libfwm.so.S). Exit 0 pass, 1 fail.
"""
import ast
import glob
import json
import os
import re
import subprocess
import sys

failures = []


def check_eq(got, want, what):
    if got != want:
        failures.append("%s: %r, expected %r" % (what, got, want))
    else:
        print("ok  %-46s %s" % (what, got))


def main():
    source, build, serve, cli = sys.argv[1:5]
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        version = json.load(f)["version"]
    print("meson.build's project version:", version)
    major, minor, patch = version.split(".")

    with open(os.path.join(source, "include", "fwm", "fwm_version.h")) as f:
        header = dict(re.findall(r"#define (FWM_VERSION_\w+) (\S+)", f.read()))
    check_eq(header.get("FWM_VERSION_STRING"), '"%s"' % version, "fwm_version.h FWM_VERSION_STRING")
    check_eq(tuple(header.get("FWM_VERSION_" + k) for k in ("MAJOR", "MINOR", "PATCH")), (major, minor, patch),
             "fwm_version.h MAJOR, MINOR, PATCH")

    for program, name in ((serve, "fwm-serve"), (cli, "fwm-cli")):
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30).stdout
        check_eq(out.split()[:2], [name, version], name + " --version")

    for pc in ("fwm.pc", "fwm-client.pc"):
        with open(os.path.join(build, "meson-private", pc)) as f:
            found = re.search(r"^Version: (\S+)$", f.read(), re.M)
        check_eq(found.group(1) if found else None, version, pc + " Version")

    with open(os.path.join(source, "clients", "python", "fwm_client", "__init__.py")) as f:
        tree = ast.parse(f.read())
    python_version = next((node.value.value for node in tree.body if isinstance(node, ast.Assign) and
                           [getattr(t, "id", None) for t in node.targets] == ["__version__"]), None)
    check_eq(python_version, version, "Python fwm_client.__version__")
    with open(os.path.join(source, "clients", "python", "pyproject.toml")) as f:
        pyproject = f.read()
    check_eq('version = {attr = "fwm_client.__version__"}' in pyproject and 'dynamic = ["version"]' in pyproject,
             True, "pyproject.toml takes fwm_client.__version__")

    for folder in ("clients/js", "web"):
        with open(os.path.join(source, folder, "package.json")) as f:
            check_eq(json.load(f)["version"], version, folder + "/package.json")
        with open(os.path.join(source, folder, "package-lock.json")) as f:
            lock = json.load(f)
        check_eq((lock["version"], lock["packages"][""]["version"]), (version, version), folder + "/package-lock.json")

    for lib in ("libfwm", "libfwm_client"):
        files = [p for p in glob.glob(os.path.join(build, "**", lib + ".so.*"), recursive=True)
                 if re.fullmatch(re.escape(lib) + r"\.so\.\d+\.\d+\.\d+", os.path.basename(p))
                 and not os.path.islink(p)]
        if len(files) != 1:
            failures.append("%s: expected one %s.so.S.MINOR.PATCH in the build, found %s" % (lib, lib, files))
            continue
        dynamic = subprocess.run(["readelf", "-d", files[0]], capture_output=True, text=True).stdout
        soname = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
        soname = soname.group(1) if soname else ""
        s = soname[len(lib + ".so."):] if soname.startswith(lib + ".so.") else None
        check_eq(os.path.basename(files[0]), "%s.so.%s.%s.%s" % (lib, s, minor, patch),
                 "%s file (SONAME %s)" % (lib, soname))

    if failures:
        print("FAIL: the versions disagree:\n  " + "\n  ".join(failures))
        return 1
    print("OK: every version is", version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
