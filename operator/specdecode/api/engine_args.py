"""`vllm serve` arguments read as vLLM reads them: which operator-owned field an argument sets.

Why: vLLM accepts many spellings of one flag, so a string compare would let
`--speculative_config` through and the baseline would speculate ungated. Normalises as
vLLM's CLI does (recorded per release in tests/data/engine-arg-spellings.*); used by the
models, the CRD's CEL, the renderer's argv check and the tuning. Pure, stdlib only.
The spellings handled and why each is reserved: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from specdecode.api.engine_flag_classes import CLASSIFIED, FlagClass
from specdecode.api.engine_flag_table import non_free_options


@dataclass(frozen=True)
class Reserved:
    """One argparse destination the operator owns, and every option string that sets it."""

    dest: str  # vLLM's namespace field
    options: tuple[str, ...]  # long (`--x-y`) and short (`-xy`) option strings
    flag_class: FlagClass  # what setting it does (never FREE)
    source: str  # what the operator sets it from, or why nobody may set it


RESERVED: tuple[Reserved, ...] = tuple(
    Reserved(dest, options, CLASSIFIED[dest].flag_class, CLASSIFIED[dest].source)
    for dest, options in non_free_options().items()
)
BY_DEST = {reserved.dest: reserved for reserved in RESERVED}


def option_name(arg: str) -> str | None:
    """The option an argument names, normalised as vLLM does; None for a value/positional.

    `--speculative_config.method=x` -> `--speculative-config`; `-tp=4` -> `-tp`.
    """
    if len(arg) < 2 or not arg.startswith("-"):
        return None
    name = arg.split("=", 1)[0].split(".", 1)[0]
    if name in ("-", "--"):
        return None
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def _option_sets(name: str, option: str) -> bool:
    """Whether an argument named `name` can set `option` (exactly, by prefix, or for a
    short option with a value attached)."""
    if option.startswith("--"):
        return name.startswith("--") and len(name) > 2 and option.startswith(name)
    if name.startswith("--"):
        return False
    return option.startswith(name) or name.startswith(option)


def reserved_set_by(arg: str) -> tuple[Reserved, ...]:
    """Every reserved destination `arg` can set (an ambiguous prefix can name several)."""
    name = option_name(arg)
    if name is None:
        return ()
    return tuple(r for r in RESERVED if any(_option_sets(name, option) for option in r.options))


def reserved_for(arg: str) -> Reserved | None:
    """The first reserved destination `arg` can set, if any."""
    found = reserved_set_by(arg)
    return found[0] if found else None


@dataclass(frozen=True)
class Hit:
    """An argument that sets a reserved destination."""

    index: int
    arg: str
    reserved: Reserved

    def message(self, where: str = "model.extraArgs") -> str:
        """What the models say: the argument, the destination and where it comes from."""
        return (
            f"{where}[{self.index}] {self.arg[:80]!r} sets vLLM's {self.reserved.dest} "
            f"({', '.join(self.reserved.options)} in any spelling vLLM reads), which the "
            f"operator owns: {self.reserved.source}"
        )


def reserved_hits(args: Sequence[str]) -> list[Hit]:
    """Every argument of `args` that sets a reserved destination, in order."""
    hits = []
    for index, arg in enumerate(args):
        reserved = reserved_for(arg)
        if reserved is not None:
            hits.append(Hit(index, arg, reserved))
    return hits


def hits_of(args: Sequence[str], *classes: FlagClass) -> list[Hit]:
    """Every argument of `args` that can set a destination of one of `classes`, in order
    (an ambiguous prefix counts if any destination it can set is of one)."""
    hits = []
    for index, arg in enumerate(args):
        matching = [found for found in reserved_set_by(arg) if found.flag_class in classes]
        if matching:
            hits.append(Hit(index, arg, matching[0]))
    return hits


def settings(args: Sequence[str], option: str) -> Iterator[tuple[int, str | None]]:
    """(index, value) of each argument that sets the long `option` exactly (any dash or
    underscore spelling, `=value` or the next argument, dotted keys give None: a merged
    JSON value). Abbreviations of a non-reserved option are not resolved here: that needs
    the release's whole option table."""
    for index, arg in enumerate(args):
        if option_name(arg) != option:
            continue
        head = arg.split("=", 1)[0]
        if "." in head:
            yield index, None
        elif "=" in arg:
            yield index, arg.split("=", 1)[1]
        else:
            nxt = args[index + 1] if index + 1 < len(args) else None
            yield index, None if nxt is None or option_name(nxt) is not None else nxt


def last_value(args: Sequence[str], option: str) -> str | None:
    """The value argparse keeps for `option`: the last one given."""
    values = [value for _, value in settings(args, option)]
    return values[-1] if values else None


def without_speculative(args: Sequence[str]) -> list[str]:
    """`args` with every argument that sets any part of vLLM's speculative config removed
    (the speculative class of the flag table: `--speculative-config`, `-sc`, `--spec-method`,
    ...), with its value when that is the next argument (`--speculative-config X`)."""
    doomed: set[int] = set()
    for hit in hits_of(args, FlagClass.SPECULATIVE):
        doomed.add(hit.index)
        if "=" not in hit.arg and hit.index + 1 < len(args):
            doomed.add(hit.index + 1)
    return [arg for index, arg in enumerate(args) if index not in doomed]


def _prefix_pattern(text: str) -> str:
    """RE2 for any non-empty prefix of `text`, a dash matching `-` or `_`:
    `abc` -> `a(b(c)?)?`."""
    pattern = ""
    for char in reversed(text):
        atom = "[-_]" if char == "-" else char
        pattern = f"{atom}({pattern})?" if pattern else atom
    return pattern


def _option_regex(option: str) -> str:
    """RE2 (no backslashes, so it goes into CEL unchanged) matching every argument that
    `_option_sets` says can set `option`."""
    end = "([.=]|$)"
    if option.startswith("--"):
        return f"^--{_prefix_pattern(option[2:])}{end}"
    # A short option `-ab`: any prefix `-a`, `-ab` ending there, or anything after `-ab`.
    letters = option[1:]
    pattern = letters[-1]
    for char in reversed(letters[:-1]):
        pattern = f"{char}({pattern}|[.=]|$)"
    return f"^-{pattern}"


def reserved_arg_regex(reserved: Reserved) -> str:
    """One RE2 for a reserved destination: any of its options, in any spelling."""
    return "|".join(f"({_option_regex(option)})" for option in reserved.options)
