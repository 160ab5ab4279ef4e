"""The program of :meth:`builders.core.sandbox.Sandbox.evaluate_call`'s sandbox run.

It reads {"program": str, "call": str} on stdin, execs the program, evaluates the expression ``call`` in its
namespace and writes only ``repr`` of the value to stdout; prints of the program itself go to stderr. Runs
inside the sandbox: the standard library only.
"""

import builtins
import json
import sys


def main() -> None:
    job = json.loads(sys.stdin.read())
    stdout, sys.stdout = sys.stdout, sys.stderr
    namespace = {"__name__": "__sandbox_program__", "__builtins__": builtins}
    exec(compile(job["program"], "<program>", "exec"), namespace)
    text = repr(eval(compile(job["call"], "<call>", "eval"), namespace))
    sys.stdout = stdout
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
