"""Each option declared once: a field of a frozen options dataclass, from which the command line, ``--help``, the
Python API's keywords, ``build_config.yaml`` and ``--config`` all come.

    @dataclass(frozen=True, kw_only=True)
    class Options(BuildOptions):
        GROUP: ClassVar[str] = "WiCkeD"

        variants: int = option(5, type=whole_number(1, 1000), help="independent variants (configs variant_0...)")
        sba_batch_size: int = option(32, type=positive_int, runtime=True, help="sequences per forward pass")

A field's name is its option's argparse dest and its key in ``build_config.yaml``; its flag is the name with dashes
(``--sba-batch-size``), unless ``flag`` names another. The value type comes from the annotation (``int``, ``float``,
``str``, ``Path``, ``bool``: a switch, ``tuple[X, ...]``: one or more values), unless ``type`` (a parser of
:mod:`.argtypes`), ``choices`` or ``action`` say otherwise. An option's group in ``--help`` is the ``GROUP`` of the
class that declares it, so that a mixin shared by several builders keeps its own. Options about where and how fast a
build runs (caches, workers, batch sizes, the LLM endpoint) are runtime options: ``runtime=True`` on the field, or
``RUNTIME = True`` on the class that declares it; they are never recorded. A field declared without :func:`option` is
no option: the options compute it (:meth:`derived`) and nothing records it.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar, Union

METADATA_KEY = "mcqforge.option"
RUNTIME_NOTE = "runtime: not recorded in build_config.yaml"
Options = TypeVar("Options")


@dataclass(frozen=True)
class OptionSpec:
    """How a field is offered on the command line (see :func:`option`)."""

    help: str
    parse: Callable[[str], Any] | None = None  # argparse's type
    choices: Sequence[Any] | None = None
    metavar: str | None = None
    nargs: str | int | None = None
    action: str | type[argparse.Action] | None = None
    flag: str | None = None
    runtime: bool | None = None  # None: the declaring class's RUNTIME
    group: str | None = None  # None: the declaring class's GROUP
    recorded: bool = True  # False: recorded elsewhere than in the params (the source)


def option(default: Any, *, help: str = "", type: Callable[[str], Any] | None = None,
           choices: Sequence[Any] | None = None, metavar: str | None = None, nargs: str | int | None = None,
           action: str | type[argparse.Action] | None = None, flag: str | None = None, runtime: bool | None = None,
           group: str | None = None, recorded: bool = True) -> Any:
    """A field that is an option: its default, its ``--help`` text, and what argparse needs beyond the annotation.
    ``default`` is immutable (a tuple for several values). ``group`` puts the option in another group than its
    class's (a runtime option beside the builder's own); ``recorded=False`` keeps an option out of the params
    (``--benchmark`` and ``--source``, which the build config records as the source)."""
    spec = OptionSpec(help, type, tuple(choices) if choices is not None else None, metavar, nargs, action, flag,
                      runtime, group, recorded)
    return dataclasses.field(default=default, metadata={METADATA_KEY: spec})


def with_default(options: type, name: str, default: Any, *, help: str | None = None,
                 choices: Sequence[Any] | None = None) -> Any:
    """The option ``name`` of ``options`` (a base class) with another default (and, for a builder whose values
    differ, other choices and help), for a subclass that redeclares the field: GSM-MC builds only ``test`` unless
    told, its answers are numbers and allow the balanced draw. Its group and the rest stay the base's."""
    found = {f.name: f for f in dataclasses.fields(options)}[name]
    spec = found.metadata[METADATA_KEY]
    owner = _declaring_class(options, name)
    spec = dataclasses.replace(spec, group=spec.group or _class_group(owner),
                               runtime=spec.runtime if spec.runtime is not None else _class_runtime(owner),
                               help=spec.help if help is None else help,
                               choices=spec.choices if choices is None else tuple(choices))
    return dataclasses.field(default=default, metadata={METADATA_KEY: spec})


@dataclass(frozen=True)
class Declared:
    """One option as a class declares it: its field, what argparse needs, its group and whether it is recorded."""

    name: str
    default: Any
    spec: OptionSpec
    annotation: Any
    group: str
    runtime: bool

    @property
    def flag(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    @property
    def recorded(self) -> bool:
        return self.spec.recorded and not self.runtime

    @property
    def many(self) -> bool:
        """Whether the option takes several values (a tuple field)."""
        return typing.get_origin(_without_none(self.annotation)) is tuple


def declared_options(options: type) -> list[Declared]:
    """The options of an options class (a dataclass), in field order; its other fields are no options."""
    hints = typing.get_type_hints(options)
    found = []
    for field in dataclasses.fields(options):
        spec = field.metadata.get(METADATA_KEY)
        if spec is None:
            continue
        owner = _declaring_class(options, field.name)
        runtime = spec.runtime if spec.runtime is not None else _class_runtime(owner)
        found.append(Declared(field.name, field.default, spec, hints[field.name], spec.group or _class_group(owner),
                              bool(runtime)))
    return found


def _declaring_class(options: type, name: str) -> type:
    """The class of ``options``' hierarchy that declares the field ``name`` first (a base before a subclass that
    only changes its default)."""
    for klass in reversed(options.__mro__):
        if name in klass.__dict__.get("__annotations__", {}):
            return klass
    raise KeyError(name)


def _class_group(klass: type) -> str:
    group = klass.__dict__.get("GROUP")
    if not group:
        raise TypeError(f"{klass.__qualname__} declares options but no GROUP: the --help title of its options")
    return group


def _class_runtime(klass: type) -> bool:
    return bool(klass.__dict__.get("RUNTIME", False))


def _without_none(annotation: Any) -> Any:
    """``X`` of ``X | None``."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


# ---- the command line ------------------------------------------------------------------------------------------


def add_option_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, options: type,
                         choices: Mapping[str, Sequence[Any]] | None = None,
                         defaults: Mapping[str, Any] | None = None, first: type | None = None) -> None:
    """Every option of ``options`` as an argument, each in its group (``parser`` itself when it is a group); a
    runtime group's title says that its options are not recorded. ``--help`` shows the group of ``first`` (the
    options every build shares), then the class's own, then its mixins', the runtime groups last. ``choices`` and
    ``defaults`` replace an option's own (the benchmarks of a builder)."""
    mro = [klass for klass in options.__mro__ if dataclasses.is_dataclass(klass)]
    order = [*([first] if first in mro else []), mro[0], *(klass for klass in mro[1:] if klass is not first)]
    declared = declared_options(options)
    ranked = sorted(range(len(declared)), key=lambda i: (declared[i].runtime,
                                                         order.index(_declaring_class(options, declared[i].name)), i))
    groups: dict[tuple[str, bool], Any] = {}
    for declared_option in (declared[i] for i in ranked):
        target = parser
        if isinstance(parser, argparse.ArgumentParser):
            key = (declared_option.group, declared_option.runtime)
            if key not in groups:
                title = f"{key[0]} ({RUNTIME_NOTE})" if key[1] else key[0]
                groups[key] = next((g for g in parser._action_groups if g.title == title), None) \
                    or parser.add_argument_group(title)
            target = groups[key]
        target.add_argument(declared_option.flag, dest=declared_option.name,
                            **_argparse_keywords(declared_option, choices, defaults))


def _argparse_keywords(declared: Declared, choices: Mapping[str, Sequence[Any]] | None,
                       defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    spec = declared.spec
    default = (defaults or {}).get(declared.name, declared.default)
    keywords: dict[str, Any] = {"help": spec.help, "default": list(default) if isinstance(default, tuple) else default}
    value_type = _without_none(declared.annotation)
    if spec.action is not None:
        keywords["action"] = spec.action
    elif value_type is bool:
        keywords["action"] = argparse.BooleanOptionalAction if declared.default else "store_true"
    if declared.many:
        value_type = typing.get_args(_without_none(declared.annotation))[0]
        keywords["nargs"] = spec.nargs or "+"
    elif spec.nargs is not None:
        keywords["nargs"] = spec.nargs
    if spec.parse is not None:
        keywords["type"] = spec.parse
    elif value_type in (int, float, Path) and "action" not in keywords:
        keywords["type"] = value_type
    option_choices = (choices or {}).get(declared.name, spec.choices)
    if option_choices is not None:
        keywords["choices"] = list(option_choices)
    if spec.metavar is not None:
        keywords["metavar"] = spec.metavar
    return keywords


def from_arguments(options: type[Options], args: argparse.Namespace, **others: Any) -> Options:
    """The options from parsed arguments: every option field from the argument of its name (several values as a
    tuple), every other field from ``others`` or its default. Nothing is checked or derived here."""
    values = {}
    for declared in declared_options(options):
        value = getattr(args, declared.name)
        values[declared.name] = tuple(value) if declared.many and isinstance(value, list) else value
    return options(**values, **others)


def option_values(options: Any, only_recorded: bool = False) -> dict[str, Any]:
    """{option: value} of an options object, or of the options it records (no runtime option, not the source)."""
    return {d.name: getattr(options, d.name) for d in declared_options(type(options))
            if d.recorded or not only_recorded}


def unset(value: Any) -> bool:
    """An option left unset: None, or no values."""
    return value is None or (isinstance(value, (list, tuple)) and not value)


def changed_options(given: Any, derived: Any) -> list[str]:
    """The options set in ``given`` whose value ``derived`` changed: a derived default fills only unset ones."""
    before, after = option_values(given), option_values(derived)
    return [name for name, value in before.items() if not unset(value) and after[name] != value]


def each_class(options: Any, method: str) -> Iterable[Callable[..., Any]]:
    """The ``method`` of each class of ``options``' hierarchy that defines one itself, base classes first: every
    mixin's rules run, none needs to call another's."""
    for klass in reversed(type(options).__mro__):
        if method in klass.__dict__:
            yield klass.__dict__[method]
