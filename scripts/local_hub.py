"""A local, in-memory stand-in for the Hugging Face Hub, to try publishing without an account or a network.

    python scripts/local_hub.py                 # prints the variables to export, serves until Ctrl-C
    python scripts/local_hub.py --port 8800 --token hf_local

It is the server the tests publish to (``tests/hub_server.py``): real HTTP on 127.0.0.1, answering the Hub
routes that ``huggingface_hub`` and ``datasets`` use to create a repo, upload a folder (through the git-LFS
API), tag it and load it back. It has no Xet storage, so the client must be told to upload through LFS
(``HF_HUB_DISABLE_XET=1``; without it the upload fails with one line that says so). Repos live in memory and
are gone when it stops. In another shell::

    export HF_ENDPOINT=http://127.0.0.1:8800 HF_TOKEN=hf_local HF_HUB_DISABLE_XET=1
    python -m builders.wicked --source sample --sba-classifier none --push you/wicked-sample --version 1.0.0
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hub_server import LocalHub  # noqa: E402  (tests/ is not a package)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--port", type=int, default=8800, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--token", default="hf_local", help="the one write token the local Hub accepts")
    args = parser.parse_args(argv)
    try:
        hub = LocalHub(port=args.port, token=args.token).start()
    except OSError as error:
        print(f"error: cannot listen on 127.0.0.1:{args.port} ({error.strerror or error})", file=sys.stderr)
        return 2
    print(f"local Hub at {hub.url} (in memory; Ctrl-C stops it). In the shell that publishes:", flush=True)
    print(f"export HF_ENDPOINT={hub.url} HF_TOKEN={hub.token} HF_HUB_DISABLE_XET=1", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
