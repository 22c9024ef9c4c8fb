#!/usr/bin/env python3
"""dialogue_agent.py - a tiny dialogue agent whose memory is an fwm-serve session.

Everything the user tells the agent is read by the session (the fast-weight memory stores it);
questions are answered closed-book from that memory, and the answer is committed so the dialogue
goes on as if the agent had said it. The agent can save its memory to a file and load it again
(snapshot/restore), and can "imagine" a what-if on a fork without touching its real memory.

    dialogue_agent.py [--connect ADDRESS] [--memory FILE] [--demo]

Interactive by default: statements end in ".", questions in "?"; "!save", "!whatif TEXT ? Q?",
"!quit". --demo runs a scripted bAbI-style dialogue and exits.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fwm_client import DEFAULT_ADDRESS, Client, FwmError  # noqa: E402


class Agent:
    def __init__(self, client, memory_file=None):
        self.client = client
        self.memory_file = memory_file
        if memory_file and os.path.exists(memory_file):
            with open(memory_file, "rb") as f:
                self.session = client.restore(f.read())
            print("(memory restored from %s)" % memory_file)
        else:
            self.session = client.open(topk=3)  # primed: it has read "<eos>", as a catbAbI story begins

    def hear(self, line):
        """A statement is remembered; a question is answered from memory."""
        line = line.strip()
        if not line:
            return None
        if line.endswith("?"):
            a = self.session.ask(line, commit=True)
            return "%s (confidence %.2f)" % (a["answer"], a["prob"])
        if not line.endswith("."):
            line += " ."
        self.session.feed(line)
        return "ok"

    def what_if(self, supposition, question):
        """Answer a question in an imagined world: a fork reads the supposition, the agent does not."""
        imagined = self.session.fork()
        try:
            imagined.feed(supposition)
            return imagined.ask(question)["answer"]
        finally:
            imagined.close()

    def save(self):
        if self.memory_file:
            with open(self.memory_file, "wb") as f:
                f.write(self.session.snapshot())
            return "(memory saved to %s)" % self.memory_file
        return "(no --memory file given)"


def parse_whatif(body):
    """`TEXT ? QUESTION?` -> ("TEXT .", "QUESTION?"): one final "." and one final "?", whatever the
    user typed around them (a supposition may end in "." already; the question may end in "?")."""
    supposition, _, question = body.partition("?")
    supposition = supposition.strip().rstrip(".").strip()
    question = question.strip().rstrip("?").strip()
    return supposition + " .", question + "?"


DEMO = [
    "Mary moved to the bathroom.",
    "John went to the hallway.",
    "Where is Mary?",
    "Daniel went back to the hallway.",
    "Sandra moved to the garden.",
    "Where is Daniel?",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connect", default=os.environ.get("FWM_ADDRESS", DEFAULT_ADDRESS))
    ap.add_argument("--memory", help="file to save/restore the agent's memory")
    ap.add_argument("--demo", action="store_true", help="run a scripted dialogue")
    args = ap.parse_args()
    with Client(args.connect) as client:
        agent = Agent(client, args.memory)
        if args.demo:
            for line in DEMO:
                print("user:  %s" % line)
                print("agent: %s" % agent.hear(line))
            print("what if Mary went to the kitchen? where is Mary -> %s"
                  % agent.what_if("Mary went to the kitchen.", "Where is Mary?"))
            print("agent (real memory): where is Mary -> %s" % agent.hear("Where is Mary?"))
            if args.memory:
                print(agent.save())
            return 0
        for line in sys.stdin:
            line = line.strip()
            if line == "!quit":
                break
            if line == "!save":
                print(agent.save())
            elif line.startswith("!whatif "):
                body = line[len("!whatif "):]
                print(agent.what_if(*parse_whatif(body)))
            else:
                try:
                    print(agent.hear(line))
                except FwmError as e:
                    print("(%s)" % e)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
