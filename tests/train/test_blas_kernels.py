#!/usr/bin/env python3
"""test_blas_kernels.py - fwm-train and fwm-eval never run OpenBLAS's SSE3 kernels on an AVX2 CPU.

OpenBLAS (DYNAMIC_ARCH) picks its kernels by CPU model when it is loaded and falls back to its
"Prescott" (SSE3) kernels on a CPU it does not know; train/blas_kernels.c then restarts the
program with OPENBLAS_CORETYPE set. With OPENBLAS_VERBOSE=2 the library prints "Core: NAME" each
time it is loaded, so the last such line is the kernel set the program ran with:
  1. without OPENBLAS_CORETYPE, on a CPU with AVX2 and FMA, the last core is not Prescott, for
     both programs, and each still prints its usage once and exits 0;
  2. a user's OPENBLAS_CORETYPE wins: with OPENBLAS_CORETYPE=Haswell the library loads once, with
     Haswell, and no restart happens.

usage: test_blas_kernels.py FWM_TRAIN FWM_EVAL
Exit 77 (skipped) on a CPU without AVX2 and FMA, or where OpenBLAS does not print its core.
"""
import os
import subprocess
import sys


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cores_of(program, coretype=None):
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype is not None:
        env["OPENBLAS_CORETYPE"] = coretype
    run = subprocess.run([program, "--help"], env=env, capture_output=True, text=True, timeout=60)
    text = run.stdout + run.stderr
    cores = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Core:")]
    usages = sum(1 for line in run.stdout.splitlines() if line.startswith("usage:"))
    return run.returncode, cores, usages


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    flags = cpu_flags()
    if not {"avx2", "fma"} <= flags:
        print("skip: this CPU has no AVX2 with FMA; OpenBLAS's choice stands")
        return 77
    failures = []
    for program in sys.argv[1:3]:
        name = os.path.basename(program)
        code, cores, usages = cores_of(program)
        if not cores:
            print("skip: OpenBLAS printed no 'Core:' line with OPENBLAS_VERBOSE=2")
            return 77
        print(f"{name}: OpenBLAS cores loaded in order: {cores}")
        if cores[-1] == "Prescott":
            failures.append(f"{name} ran with OpenBLAS's Prescott (SSE3) kernels on an AVX2 CPU")
        if code != 0 or usages != 1:
            failures.append(f"{name} --help: exit {code}, {usages} usage lines (want 0 and 1)")
        code, cores, usages = cores_of(program, "Haswell")
        print(f"{name} with OPENBLAS_CORETYPE=Haswell: {cores}")
        if cores != ["Haswell"]:
            failures.append(f"{name}: OPENBLAS_CORETYPE=Haswell gave cores {cores}, want ['Haswell']")
        if code != 0 or usages != 1:
            failures.append(f"{name} --help (Haswell): exit {code}, {usages} usage lines")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("ok: no Prescott kernels on this AVX2 CPU, and OPENBLAS_CORETYPE is respected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
