"""The example Python node with one defect: it never records a completion (ok, fail or
info), only invokes and step-downs. node-check must name it."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "python-node"))
import node  # noqa: E402

record = node.Node.record


def invokes_only(self, **ev):
    if ev.get("type") == "invoke" or ev.get("kind") == "step-down":
        record(self, **ev)


node.Node.record = invokes_only
node.main()
