#!/usr/bin/env bash
# fetch_babi.sh - download the official bAbI v1.2 archive (tasks_1-20_v1-2.tar.gz, Facebook AI
# Research, CC BY 3.0), check it, and unpack the two folders catbAbI uses (en-valid-10k and
# en-valid) into DEST (default: ../shared/data/babi-v1.2 beside the source tree).
#
#   scripts/fetch_babi.sh [DEST]
#
# Needs curl or wget, tar and gzip. Every failure says what failed and what to do. The archive
# is kept in DEST/tasks_1-20_v1-2.tar.gz so a second run does not download it again.
set -euo pipefail

URL="${BABI_URL:-http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz}"
# Alternative location used by the bAbI project page (the fb.ai mirror); tried second.
URL2="${BABI_URL2:-https://dl.fbaipublicfiles.com/babi/tasks_1-20_v1-2.tar.gz}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$here/../shared/data/babi-v1.2}"
archive="$dest/tasks_1-20_v1-2.tar.gz"

die() { echo "fetch_babi.sh: error: $*" >&2; exit 1; }

mkdir -p "$dest" || die "cannot create $dest"
command -v tar >/dev/null || die "tar is not installed"
command -v gzip >/dev/null || die "gzip is not installed"

download() { # url file
    if command -v curl >/dev/null; then
        curl -fL --retry 3 --connect-timeout 20 -o "$2" "$1"
    elif command -v wget >/dev/null; then
        wget -t 3 -T 20 -O "$2" "$1"
    else
        die "neither curl nor wget is installed"
    fi
}

if [ ! -s "$archive" ]; then
    echo "downloading $URL"
    if ! download "$URL" "$archive.part"; then
        echo "first location failed; trying $URL2" >&2
        download "$URL2" "$archive.part" ||
            die "could not download the archive (no internet access?). Download
  tasks_1-20_v1-2.tar.gz by hand from the bAbI project page and put it at $archive, then run
  this script again."
    fi
    mv "$archive.part" "$archive"
fi

# Verify: a gzip'd tar that holds the 60 files of each folder we need.
gzip -t "$archive" 2>/dev/null || die "$archive is not a valid gzip file (truncated download?); delete it and run again"
listing="$(tar -tzf "$archive")" || die "$archive is not a valid tar archive; delete it and run again"
for folder in en-valid-10k en-valid; do
    for split in train valid test; do
        for task in $(seq 1 20); do
            name="tasks_1-20_v1-2/$folder/qa${task}_${split}.txt"
            grep -qx "$name" <<<"$listing" || die "$archive lacks $name: not the bAbI v1.2 archive?"
        done
    done
done

tmp="$(mktemp -d "$dest/.unpack.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$archive" -C "$tmp" tasks_1-20_v1-2/en-valid-10k tasks_1-20_v1-2/en-valid \
    tasks_1-20_v1-2/LICENSE tasks_1-20_v1-2/README 2>/dev/null ||
    tar -xzf "$archive" -C "$tmp" tasks_1-20_v1-2/en-valid-10k tasks_1-20_v1-2/en-valid ||
    die "cannot unpack $archive"

# Check the format of every file: "ID text" lines, questions with three tab-separated fields.
for f in "$tmp"/tasks_1-20_v1-2/en-valid*/qa*_*.txt; do
    awk -v file="${f#$tmp/tasks_1-20_v1-2/}" '
        !/^[0-9]+ / { printf "%s:%d: expected \"ID text\", found \"%s\"\n", file, NR, $0; bad = 1; exit }
        /\t/ { if (split($0, parts, "\t") != 3) { printf "%s:%d: a question needs 3 tab-separated fields\n", file, NR; bad = 1; exit } }
        END { exit bad }' "$f" || die "malformed file in the archive (see above)"
done

for folder in en-valid-10k en-valid; do
    rm -rf "${dest:?}/$folder"
    mv "$tmp/tasks_1-20_v1-2/$folder" "$dest/$folder"
done
for extra in LICENSE README; do
    [ -f "$tmp/tasks_1-20_v1-2/$extra" ] && cp "$tmp/tasks_1-20_v1-2/$extra" "$dest/$extra.txt"
done
echo "bAbI v1.2 en-valid-10k and en-valid are in $dest ($(ls "$dest"/en-valid-10k | wc -l) + $(ls "$dest"/en-valid | wc -l) files)"
echo "train with: build/train/fwm-train --data $dest"
