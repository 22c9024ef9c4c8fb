#!/usr/bin/env python3
"""test_text_recipe.py - the README's text recipe ("English prose, and your own text"), run as
written on a tiny corpus.

The commands between the README's text-recipe markers are run by bash from the source root with
three substitutions, and only these: TEXT points at a small generated folder, `--vocab-size
10000` becomes `--vocab-size 20` (the tiny corpus has fewer words), `--steps 2000` becomes
`--steps 5`; `build/` is the build folder under test and `runs/` a temporary folder. Every command
must succeed, fwm-eval must print valid and test perplexities, and fwm-run must read the recipe's
sentence (an unknown word included) and predict.

usage: test_text_recipe.py SOURCE_ROOT BUILD_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile


def main():
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    readme = open(os.path.join(source, "README.md")).read()
    m = re.search(r"<!-- text-recipe:begin -->\n```sh\n(.*?)```\n<!-- text-recipe:end -->",
                  readme, re.S)
    if not m:
        print("FAILED: README.md has no text-recipe block")
        return 1
    script = m.group(1)
    for old in ("TEXT=data/austen", "--vocab-size 10000", "--steps 2000"):
        if old not in script:
            print("FAILED: the recipe no longer says %r" % old)
            return 1
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        os.mkdir(corpus)
        words = ("elizabeth walked into the room . darcy did n't speak to her , and she "
                 "thought him proud . jane smiled at bingley .").split()
        for name, n in (("train", 40), ("valid", 6), ("test", 6)):
            with open(os.path.join(corpus, name + ".txt"), "w") as f:
                for i in range(n):
                    f.write(" ".join(words[(i * 7) % len(words):] + words[:(i * 7) % len(words)]))
                    f.write("\n")
        script = (script.replace("TEXT=data/austen", "TEXT=" + corpus)
                  .replace("--vocab-size 10000", "--vocab-size 20")
                  .replace("--steps 2000", "--steps 5")
                  .replace("build/", build + "/")
                  .replace("runs/", tmp + "/runs/"))
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=source,
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("FAILED: the recipe exited %d\n%s\n%s" % (p.returncode, p.stdout[-3000:],
                                                          p.stderr[-3000:]))
            return 1
        failures = 0
        for pattern in (r"valid perplexity [0-9.]+ \(\d+ tokens", r"test perplexity [0-9.]+",
                        r"^0\telizabeth\t-> ", r"^2\tinto\t-> "):
            if not re.search(pattern, p.stdout, re.M):
                print("FAILED: the recipe's output lacks %r:\n%s" % (pattern, p.stdout[-3000:]))
                failures += 1
        if failures:
            return 1
    print("the README's text recipe ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
