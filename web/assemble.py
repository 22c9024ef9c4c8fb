#!/usr/bin/python3
"""assemble.py OUT_DIR [STAMP] | --install RELDIR - put together the web page's folder that fwm-serve --http serves (--http-root)
and `meson install` installs into <datadir>/fwm/www:

  OUT_DIR/                  the page: web/index.html, app.js, memory_view.js, compare_view.js, style.css
  OUT_DIR/client/           the JavaScript client (clients/js/src), loaded by its browser entry
  OUT_DIR/vendor/msgpack/   @msgpack/msgpack's ES modules from clients/js/node_modules (npm ci),
                            mapped by the page's import map; with its LICENSE

Without clients/js/node_modules (npm missing) the page is assembled without the library and says so
in OUT_DIR/vendor/MISSING; the browser test then skips with that reason.
"""
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = ["index.html", "app.js", "memory_view.js", "compare_view.js", "style.css"]


def copy_tree(src, dst, suffixes):
    for folder, _, files in os.walk(src):
        for name in files:
            if name.endswith(suffixes):
                rel = os.path.relpath(os.path.join(folder, name), src)
                os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
                shutil.copyfile(os.path.join(folder, name), os.path.join(dst, rel))


def main(out, stamp=None):
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name in PAGE:
        shutil.copyfile(os.path.join(ROOT, "web", name), os.path.join(out, name))
    copy_tree(os.path.join(ROOT, "clients", "js", "src"), os.path.join(out, "client"), (".js",))
    msgpack = os.path.join(ROOT, "clients", "js", "node_modules", "@msgpack", "msgpack")
    vendor = os.path.join(out, "vendor")
    os.makedirs(vendor)
    if os.path.isdir(os.path.join(msgpack, "dist.esm")):
        copy_tree(os.path.join(msgpack, "dist.esm"), os.path.join(vendor, "msgpack"), (".mjs",))
        shutil.copyfile(os.path.join(msgpack, "LICENSE"), os.path.join(vendor, "msgpack", "LICENSE"))
    else:
        with open(os.path.join(vendor, "MISSING"), "w") as f:
            f.write("@msgpack/msgpack is not installed: run scripts/setup.sh (npm ci in clients/js)\n")
    if stamp:
        with open(stamp, "w") as f:
            f.write("assembled %s\n" % out)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--install":  # meson's install script: DESTDIR/prefix/RELDIR
        main(os.path.join(os.environ["MESON_INSTALL_DESTDIR_PREFIX"], sys.argv[2]))
    elif len(sys.argv) in (2, 3):
        main(*sys.argv[1:])
    else:
        sys.exit(__doc__)
