"""cli_checks.py - what the trainer's Python tests share: a check that counts failures instead of
stopping at the first, running a program and insisting on its exit status (printing its output
when it differs), and the closing line with the count.

    from cli_checks import check, run, finish
    check(x == 1, "x is one")
    p = run([program, "--flag"], expect_rc=2)
    sys.exit(finish("what passed"))
"""
import os
import subprocess

failures = 0


def check(cond, what):
    """Count and print a failed condition; returns cond."""
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)
    return cond


def run(args, expect_rc=0, **kwargs):
    """Run a program (output captured as text); its exit status must be expect_rc."""
    p = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if p.returncode != expect_rc:
        print("command:", " ".join(args))
        print("stdout:", p.stdout[-2000:])
        print("stderr:", p.stderr[-2000:])
    check(p.returncode == expect_rc, "exit status %d (expected %d) of %s" % (
        p.returncode, expect_rc, " ".join(os.path.basename(a) for a in args[:6])))
    return p


def finish(passed):
    """The exit status of the test: 1 with the count of failed checks, else 0 and `passed`."""
    if failures:
        print("%d check(s) failed" % failures)
        return 1
    print(passed)
    return 0
