#!/usr/bin/python3
"""check_xxhash.py TEST_XXHASH - compare fwm's XXH64 with python3-xxhash (an independent
implementation) on every prefix of xxHash's sanity buffer, three seeds, streaming in irregular
chunks. Exits 77 (skipped) when python3-xxhash is not installed (apt-get install python3-xxhash)."""
import subprocess
import sys

try:
    import xxhash
except ImportError:
    print("python3-xxhash is not installed: skipped")
    sys.exit(77)

PRIME32, PRIME64 = 2654435761, 11400714785074694797
LIMIT = 1100

sanity = bytearray()
g = PRIME32
for _ in range(LIMIT + 1):
    sanity.append(g >> 56)
    g = (g * PRIME64) & 0xFFFFFFFFFFFFFFFF

out = subprocess.run([sys.argv[1], "--print", str(LIMIT)], check=True, capture_output=True,
                     text=True).stdout.split("\n")
checked = failed = 0
for line in out:
    if not line:
        continue
    length, seed, got = line.split()
    want = xxhash.xxh64(bytes(sanity[:int(length)]), seed=int(seed)).hexdigest()
    checked += 1
    if got != want:
        failed += 1
        if failed <= 10:
            print(f"length {length} seed {seed}: fwm {got}, python3-xxhash {want}")
if checked != 3 * (LIMIT + 1):
    print(f"expected {3 * (LIMIT + 1)} lines, got {checked}")
    failed += 1
print(f"check_xxhash: {checked - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
