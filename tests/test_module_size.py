"""The package's modules stay of a readable size, and its Python lives in modules, never in string constants:
a program in a string is seen by no linter and no type checker."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("builders", "classifiers")
MAX_LINES = 500
# A string is a program when it has at least this many lines, parses as Python and defines or imports something.
MIN_PROGRAM_LINES = 5


def package_modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py"))


def string_value(node: ast.expr) -> str | None:
    """The text of a string constant: a literal, or a sum with a literal in it (each name in the sum read as a
    name). f-strings are templates of files a release carries, not constants, and are left out."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = string_value(node.left), string_value(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "_value") + (right if right is not None else "_value")
    return None


def is_program(text: str) -> bool:
    if len(text.splitlines()) < MIN_PROGRAM_LINES:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    defines = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return any(isinstance(node, defines) for node in ast.walk(tree))


def program_strings(source: str) -> list[str]:
    """The names (or, for an unnamed string, ``line N``) of the string constants in ``source`` that are Python
    programs; a sum of strings counts once, as a whole."""
    tree = ast.parse(source)
    found: list[str] = []
    seen: set[int] = set()  # the parts of a sum already judged as a whole
    for node in ast.walk(tree):  # an assignment comes before its value, a sum before its parts
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            text = string_value(node.value)
            if text is not None and is_program(text):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [target.id if isinstance(target, ast.Name) else f"line {node.lineno}" for target in targets]
                seen.update(id(part) for part in ast.walk(node.value))
        elif isinstance(node, ast.JoinedStr):  # the literal parts of an f-string are not constants of their own
            seen.update(id(part) for part in ast.walk(node))
        elif isinstance(node, ast.expr) and id(node) not in seen and string_value(node) is not None:
            seen.update(id(part) for part in ast.walk(node))
            if is_program(string_value(node) or ""):
                found.append(f"line {node.lineno}")
    return found


def test_no_module_exceeds_the_size_limit() -> None:
    sizes = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
             for path in package_modules()}
    assert {name for name, lines in sizes.items() if lines > MAX_LINES} == set()
    assert len(sizes) > 100  # the walk saw the packages


def test_no_python_program_lives_in_a_string_constant() -> None:
    offenders = {(str(path.relative_to(REPO)), name) for path in package_modules()
                 for name in program_strings(path.read_text(encoding="utf-8"))}
    assert offenders == set()


def test_the_program_check_finds_programs_in_all_their_forms() -> None:
    # The forms the sandbox's programs had before they became modules: a constant, and a sum of constants; a
    # string that is no assignment's value is named by its line.
    source = '''
HELPER = """
CPU_POLL = 0.02
"""
SCRIPT = r"""
import os, sys
""" + HELPER + r"""
def main():
    os.write(1, b"ok")
main()
"""
def run(sandbox):
    return sandbox.run(
        "import sys as _sys\\n"
        "_value = 1\\n"
        "_sys.stdout.write(repr(_value))\\n"
        "_sys.stdout.flush()\\n"
        "_sys.exit(0)\\n"
    )
TEMPLATE = f"""
import sys
def main():
    print({value!r})
main()
"""
DOC = """A description
of five lines
that is prose:
not a program at all,
though it says import."""
'''
    assert program_strings(source) == ["SCRIPT", "line 14"]


def test_the_sandbox_programs_are_modules_of_the_package() -> None:
    from builders.core.sandbox.programs import TRUSTED_FILES, program_text

    programs = REPO / "builders" / "core" / "sandbox" / "programs"
    for name in (*TRUSTED_FILES, "evaluator.py", "call.py"):
        assert program_text(name) == (programs / name).read_text(encoding="utf-8")
        assert 'if __name__ == "__main__":' in program_text(name) or name == "unit.py"


# "issue 23", "Issue 22.5", "issues 22.3 and 23.3", "(stop 38)": numbers of a tracker the repository does not hold,
# which tell a reader nothing; a comment says why in its own words.
TRACKER_NUMBER = re.compile(r"\b(?:issues?|stop)\s+#?\d+(?:\.\d+)?\b", re.IGNORECASE)


def tracked_text_files() -> list[Path]:
    suffixes = {".py", ".md", ".yaml", ".yml", ".j2", ".toml", ".txt", ".cfg"}
    return sorted(path for folder in (*PACKAGES, "tests", "scripts", "benchmarks", "cards", "docs", ".ci")
                  if (REPO / folder).is_dir() for path in (REPO / folder).rglob("*")
                  if path.suffix in suffixes and "__pycache__" not in path.parts)


def test_no_comment_or_document_names_a_tracker_number() -> None:
    files = [*tracked_text_files(), REPO / "README.md", REPO / "CONTRIBUTING.md"]
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()[:80]}" for path in files if path.is_file()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if TRACKER_NUMBER.search(line) and path.name != "test_module_size.py"]
    assert found == []
    assert TRACKER_NUMBER.search("(issue 23: with these") and TRACKER_NUMBER.search("Issue 22.5: the card's")
    assert not TRACKER_NUMBER.search("an issue of the source") and len(files) > 150
