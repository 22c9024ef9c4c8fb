#!/usr/bin/env bash
# test_install.sh - `meson install` makes a usable library and server (suite 'install').
#
#   test_install.sh SOURCE_ROOT BUILD_ROOT
#
# Installs the build into a temporary DESTDIR, then, using only what was installed:
#  - the shared libfwm and libfwm_client export only fwm_ functions (nm -D), and the pkg-config files,
#    headers, programs and bundled models are where they belong;
#  - the README's C example (app.c: the ```c block of README.md between its markers, as it is)
#    compiles with `pkg-config --cflags --libs fwm` alone, links the shared libfwm.so.2, and answers
#    "bathroom" with the installed bundled model, finding the library through LD_LIBRARY_PATH or
#    through -Wl,-rpath as the README says (and not at all without them, unless it is installed
#    system-wide); with an unknown word or a missing model it names the problem and exits 1;
#  - a program using fwm-client.pc compiles, links and names an error code;
#  - the installed fwm-serve, given no MODEL and no FWM_MODEL, finds the installed bundled model
#    (and not the source tree's), and the installed fwm-cli gets the answer from it;
#  - no installed program or .pc file contains the source or build folder's path.
set -euo pipefail
source_root=$(cd "$1" && pwd)
build_root=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

work=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

dest="$work/dest"
meson install -C "$build_root" --no-rebuild --quiet --destdir "$dest" > "$work/install.log" 2>&1 \
    || { cat "$work/install.log"; fail "meson install --destdir failed"; }

pc=$(find "$dest" -name fwm.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no fwm.pc installed under $dest"
[ -f "$(dirname "$pc")/fwm-client.pc" ] || fail "no fwm-client.pc beside $pc"
libdir=$(dirname "$(dirname "$pc")")
prefix=$(find "$dest" -path '*/bin/fwm-serve' | head -1)
[ -n "$prefix" ] || fail "no bin/fwm-serve installed"
prefix=$(dirname "$(dirname "$prefix")")
echo "installed prefix: ${prefix#"$dest"}, libdir: ${libdir#"$dest"}"

for f in include/fwm/fwm.h include/fwm/fwm_client.h include/fwm/fwm_protocol.h include/fwm/fwm_export.h \
         include/fwm/fwm_version.h \
         share/fwm/models/fwm-babi-lm.gguf share/fwm/models/fwm-babi-qm.gguf share/fwm/models/gfw-ar.gguf \
         share/fwm/models/stm-babi.gguf share/fwm/models/lstm-small-babi-qm.gguf \
         share/fwm/models/mnm-babi-qm.gguf share/fwm/models/gfw-babi-qm.gguf share/fwm/models/stm-word-babi-qm.gguf \
         share/fwm/models/mnm-babi-lm.gguf share/fwm/models/lstm-small-babi-lm.gguf \
         share/fwm/models/fwm-austen.gguf share/fwm/models/lstm-austen.gguf \
         share/fwm/www/index.html share/fwm/www/app.js share/fwm/www/client/browser.js \
         bin/fwm-serve bin/fwm-cli bin/fwm-run bin/fwm-inspect bin/fwm-init bin/fwm-train bin/fwm-eval; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for lib in libfwm libfwm_client; do
    [ -e "$libdir/$lib.a" ] || fail "no static $lib.a"
    [ -e "$libdir/$lib.so" ] || fail "no shared $lib.so"
    exported=$(nm -D --defined-only "$libdir/$lib.so" | awk '{print $3}')
    [ -n "$exported" ] || fail "$lib.so exports nothing"
    stray=$(echo "$exported" | grep -v '^fwm_' || true)
    [ -z "$stray" ] || fail "$lib.so exports symbols outside the API: $(echo $stray)"
    internal=$(echo "$exported" | grep '^fwm__' || true)
    [ -z "$internal" ] || fail "$lib.so exports internal symbols: $(echo $internal)"
    echo "$lib.so exports $(echo "$exported" | wc -l) functions, all fwm_"
done
nm -D --defined-only "$libdir/libfwm.so" | grep -q ' fwm_model_load$' || fail "libfwm.so lacks fwm_model_load"
nm -D --defined-only "$libdir/libfwm_client.so" | grep -q ' fwm_rpc_code_name$' \
    || fail "libfwm_client.so lacks fwm_rpc_code_name"

# Libraries are named (-lname), never by this machine's file path.
if grep -E '^Libs' "$libdir"/pkgconfig/fwm.pc "$libdir"/pkgconfig/fwm-client.pc | grep -q '/[^ ]*\.so'; then
    fail "a .pc file links a library by its path: $(grep -h '^Libs' "$libdir"/pkgconfig/*.pc)"
fi

# pkg-config sees the DESTDIR tree through the sysroot variable (the .pc files name the real prefix).
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs fwm) || fail "pkg-config --cflags --libs fwm failed"
echo "pkg-config fwm: $flags"

# A sanitizer build's libraries need the sanitizer runtimes in the program too: programs built
# against them get the same -fsanitize flags (a plain build adds nothing to pkg-config's flags).
extra=()
if readelf -d "$libdir/libfwm.so" | grep -q 'NEEDED.*libasan'; then
    extra=(-fsanitize=address,undefined)
    echo "sanitizer build: programs linked with ${extra[*]} besides pkg-config's flags"
fi

# The README's example (app.c), exactly as README.md has it between its markers: a whole program.
awk '/^<!-- app\.c: / {marked = 1; next} marked && /^```c$/ {inside = 1; next}
     inside && /^```$/ {exit} inside' "$source_root/README.md" > "$work/app.c"
grep -q '^<!-- end of app\.c -->$' "$source_root/README.md" || fail "README.md lacks the end marker of app.c"
grep -q 'int main(' "$work/app.c" || fail "README.md has no whole C program between its app.c markers"
cc -std=c11 -Wall -Wextra -Werror "${extra[@]}" -o "$work/example" "$work/app.c" $flags \
    || { cat -n "$work/app.c"; fail "the README's example does not compile with pkg-config fwm"; }
readelf -d "$work/example" | grep -q 'NEEDED.*libfwm\.so\.2' \
    || fail "the example did not link the shared libfwm.so.2"
model="$prefix/share/fwm/models/fwm-babi-lm.gguf"
check_answers() { # the output of one run: five predictions, "bathroom" first
    echo "README example ($1):" $2
    [ "$(echo "$2" | wc -l)" -eq 5 ] || fail "the README's example printed $(echo "$2" | wc -l) lines, not 5 ($1)"
    case "$(echo "$2" | head -1)" in
        "bathroom "*) ;;
        *) fail "the README's example answered '$(echo "$2" | head -1)', expected 'bathroom P' ($1)" ;;
    esac
}
# The library's folder as the README finds it (pkg-config adds the DESTDIR through its sysroot).
pc_libdir=$(pkg-config --variable=libdir fwm)
[ "$pc_libdir" = "$libdir" ] || fail "pkg-config --variable=libdir fwm is $pc_libdir, not $libdir"
# Found through LD_LIBRARY_PATH (the README's first way) ...
out=$(LD_LIBRARY_PATH=$(pkg-config --variable=libdir fwm) "$work/example" "$model") || fail "the README's example failed: $out"
check_answers "LD_LIBRARY_PATH" "$out"
# ... and errors reported, with a failing exit status: an unknown word, a missing model.
rc=0
err=$(LD_LIBRARY_PATH="$libdir" "$work/example" "$model" "Mary flew to the moon. Where is Mary?" 2>&1) || rc=$?
[ "$rc" -eq 1 ] && echo "$err" | grep -q "unknown word 'flew'" \
    || fail "the example with an unknown word: exit $rc, '$err' (expected 1 and the word named)"
rc=0
err=$(LD_LIBRARY_PATH="$libdir" "$work/example" "$work/no-such.gguf" 2>&1) || rc=$?
[ "$rc" -eq 1 ] && echo "$err" | grep -q "no-such.gguf" || fail "the example without a model: exit $rc, '$err'"
# Without a path, unless this machine has libfwm.so.2 installed system-wide: the loader's error.
if ! ldconfig -p 2>/dev/null | grep -q 'libfwm\.so\.2 '; then
    rc=0
    err=$(env -u LD_LIBRARY_PATH "$work/example" "$model" 2>&1) || rc=$?
    [ "$rc" -ne 0 ] && echo "$err" | grep -q 'libfwm.so.2: cannot open shared object file' \
        || fail "without LD_LIBRARY_PATH the example should not find libfwm.so.2: exit $rc, '$err'"
fi
# The README's second way: the library's folder recorded in the program (-Wl,-rpath), no
# LD_LIBRARY_PATH.
cc -std=c11 -Wall -Wextra -Werror "${extra[@]}" -o "$work/example-rpath" "$work/app.c" $flags \
    -Wl,-rpath,$(pkg-config --variable=libdir fwm) || fail "the README's example does not build with -Wl,-rpath"
ldd_out=$(env -u LD_LIBRARY_PATH ldd "$work/example-rpath")
echo "$ldd_out" | grep -qF "libfwm.so.2 => $libdir/libfwm.so.2" \
    || fail "-Wl,-rpath did not find the installed libfwm: $ldd_out"
out=$(env -u LD_LIBRARY_PATH "$work/example-rpath" "$model") || fail "the README's example (rpath) failed: $out"
check_answers "-Wl,-rpath" "$out"

cat > "$work/client.c" <<'EOF'
#include <fwm/fwm_client.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    fwm_client_params p = fwm_client_default_params();
    if (strcmp(fwm_rpc_code_name(FWM_RPC_UNKNOWN_SESSION), "unknown_session") != 0) return 1;
    printf("%s %d %d\n", fwm_rpc_code_name(FWM_RPC_STORAGE), FWM_PROTOCOL_VERSION, p.timeout_ms >= 0);
    return 0;
}
EOF
cflags=$(pkg-config --cflags --libs fwm-client) || fail "pkg-config fwm-client failed"
cc -std=c11 -Wall -Werror "${extra[@]}" -o "$work/client" "$work/client.c" $cflags || fail "fwm-client.pc program does not build"
out=$(LD_LIBRARY_PATH="$libdir" "$work/client") || fail "fwm-client.pc program failed"
[ "$out" = "storage 1 1" ] || fail "fwm-client program printed '$out'"

# The installed server with no model argument and no FWM_MODEL.
unset FWM_MODEL
(cd "$work" && exec "$prefix/bin/fwm-serve" --listen "unix:$work/s.sock" --http tcp://127.0.0.1:0 \
    --port-file "$work/port" > "$work/serve.log" 2>&1) &
server_pid=$!
for _ in $(seq 1 200); do
    [ -s "$work/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log"; fail "installed fwm-serve exited"; }
    sleep 0.05
done
[ -s "$work/port" ] || { cat "$work/serve.log"; fail "installed fwm-serve did not start"; }
hello=$("$prefix/bin/fwm-cli" --connect "unix:$work/s.sock" hello) || fail "fwm-cli hello failed"
[ "$(echo "$hello" | grep -c '^model ')" -eq 1 ] || fail "installed fwm-serve does not serve one model: $hello"
grep -q "$source_root" "$work/serve.log" && fail "the installed server used the source tree: $(cat "$work/serve.log")"
answer=$(printf 'Mary moved to the bathroom.\nWhere is Mary?\n' \
    | "$prefix/bin/fwm-cli" --connect "unix:$work/s.sock" --topk 1 | grep 'answer:' || true)
echo "installed fwm-cli: $answer"
case "$answer" in *"answer: bathroom"*) ;; *) fail "installed server answered '$answer'" ;; esac
# ... and the web page from its installed folder, with no --http-root
http=$(grep '^http://' "$work/port") || fail "no http:// line in the port file"
page=$(/usr/bin/python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + "/", timeout=10).read().decode())' "$http") \
    || fail "the installed server did not serve its web page"
case "$page" in *"fwm's web page"*) ;; *) fail "the installed server's / is not the web page: $page" ;; esac
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=

# Without the installed model it refuses to start, naming the installed path it looked in.
mv "$model" "$work/moved.gguf"
rc=0
(cd "$work" && exec "$prefix/bin/fwm-serve" --listen "unix:$work/s2.sock") > "$work/serve2.log" 2>&1 || rc=$?
mv "$work/moved.gguf" "$model"
[ "$rc" -eq 1 ] || fail "fwm-serve without its bundled model exited with $rc, not 1: $(cat "$work/serve2.log")"
grep -qF "$prefix/bin/../share/fwm/models/fwm-babi-lm.gguf" "$work/serve2.log" \
    || fail "fwm-serve's message does not name the installed model path: $(cat "$work/serve2.log")"

# No machine path of this build in what was installed (debug info aside: it is stripped first).
for f in "$prefix"/bin/* "$libdir"/libfwm.so "$libdir"/libfwm_client.so "$libdir"/pkgconfig/*.pc; do
    objcopy --strip-debug "$f" "$work/stripped" 2>/dev/null || cp "$f" "$work/stripped"
    for path in "$source_root" "$build_root"; do
        if grep -qF "$path" "$work/stripped"; then fail "$f contains the path $path"; fi
    done
done
echo "OK"
