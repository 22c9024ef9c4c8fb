#!/usr/bin/env python3
"""python_reference.py - the independent reference of the JavaScript client's tests: the Python client
(clients/python) reads bAbI stories on fwm-serve and prints every streamed prediction and every answer,
probabilities as the hex of their float32 bits, so that the JS client's results can be compared bit
for bit.

    python_reference.py ADDRESS TOPK < stories.json > results.json

stories.json: [[{"kind": "statement", "text": ...} | {"kind": "question", "text": ..., "answer": ...}]]
"""
import json
import struct
import sys

from fwm_client import Client


def f32hex(p):
    return struct.pack(">f", p).hex()


def predictions(topk):
    return [[w, f32hex(p)] for w, p in topk]


def main():
    address, topk = sys.argv[1], int(sys.argv[2])
    stories = json.load(sys.stdin)
    out = []
    with Client(address, timeout=60) as client:
        for story in stories:
            s = client.open(topk=topk)  # primed: it has read "<eos>"
            tokens, answers = [], []
            for item in story:
                if item["kind"] == "statement":
                    for e in s.stream(item["text"]):
                        tokens.append([e["pos"], e["word"], predictions(e["topk"])])
                else:
                    a = s.ask(item["text"])
                    answers.append([a["answer"], f32hex(a["prob"]), predictions(a["topk"])])
                    s.feed(item["answer"])
            s.close()
            out.append({"tokens": tokens, "answers": answers})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
