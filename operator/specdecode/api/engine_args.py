"""`vllm serve` arguments read as vLLM reads them: which operator-owned field an argument sets.

Why: `spec.model.extraArgs` is appended to every engine's argv, and vLLM accepts many
spellings of one flag. A check that compares strings refuses `--speculative-config` and
lets `--speculative_config` through; the baseline then runs an ungated speculative config.
This module normalises each argument the way vLLM's CLI does and says which reserved
destination (argparse `dest`) it sets. The models refuse extraArgs with it, the CRD's CEL
rules are generated from the same table (`reserved_arg_regex`), the renderer checks the
whole argv with it (adapters/engine_argv_guard.py), and the tuning reads `--max-num-seqs` with it.
Pure and stdlib only: no vLLM import.

How vLLM 0.32.0 parses (read in vllm/utils/argparse_utils.py `FlexibleArgumentParser`, and
run: tests/data/engine-arg-spellings.vllm-<release>.json records what each supported
release's own parser set for every spelling in tests/data/engine-arg-spellings.yaml, plus
its option strings; tools/vllm_parse_spellings.py made them, 0.32.0 with the lane's
installed vLLM and the other releases from their wheels, tools/record_vllm_releases.sh).
Their option tables differ, and the reserved set below is the union, so a release without
`-sc` or `--device-memory-utilization` merely loses a spelling it would refuse anyway.

- `--a_b` is `--a-b`: underscores become dashes between `--` and the first `.`
  (`--speculative_config`, `--tensor_parallel_size=4`, `--disable_log_stats`).
- `--flag=value` and `--flag value` are one thing (argparse).
- Dotted JSON keys: `--json-arg.key value`, `--json-arg.key=value`, `--json-arg.k1.k2 v`
  and list appends `--json-arg.key+ v` are merged into `--json-arg '{"key": v}'`; the name
  is the part before the first `.` (`--speculative-config.method ngram` sets
  speculative_config; so does `-sc.method ngram`).
- JSON values: `--speculative-config '{...}'` (any value is accepted as the string it is).
- Short options: `-sc` is `--speculative-config`, `-tp` is `--tensor-parallel-size`
  (also `-tp=4`; `-O3` is `--optimization-level 3`, not reserved).
- Prefix abbreviations: `allow_abbrev` is left True, so argparse resolves any unique
  prefix: `--disable-log` sets disable_log_stats, `--speculative.method x` sets
  speculative_config, `--tensor-parallel 4` sets tensor_parallel_size; single-dash `-t 4`
  is `-tp 4` (no other option starts with `-t`). An ambiguous prefix is an error in vLLM;
  refusing it here costs nothing. No exact vLLM 0.32 option is a proper prefix of a reserved
  one (checked against its 430 option strings), so refusing every prefix refuses nothing
  vLLM would read as another flag (`--device` is a prefix of
  `--device-memory-utilization` in 0.32; releases with a `--device` flag lose it here).
- `--no-flag` forms of booleans are refused where the recorded parser has them (a
  BooleanOptionalAction such as `--no-tokens-only`); `disable_log_stats` and `headless`
  are store_true in 0.32, so only their plain forms exist.
- `--config file.yaml` pulls any flag from a YAML file: it is reserved as a whole.
- A `--` separator does not stop vLLM's own rewriting (dotted args after it still merge),
  so every argument is read, whatever comes before it.
- `--model X` is moved to the positional model tag by `vllm serve`; `--uds` replaces host
  and port; `--headless` runs no API server (no /health, no /metrics).

Which destinations are reserved, and why, is not decided here: `RESERVED` is every non-free
destination of the engine flag table (api/engine_flag_table.py), generated from each
recorded release's own parser and classified once (api/engine_flag_classes.py): the
speculative family (`--speculative-config`, `-sc`, and vLLM 0.32's `--spec-method`,
`--spec-model`, `--spec-tokens`), what the operator renders, what turns the gates' stats off
(`--disable-log-stats`, `--headless`) and what leaves the engines unjudgeable (`--uds`,
`--config`, `--api-key`, ...). Flags that change the engine equally for all three
Deployments (`--max-num-seqs`, `--enforce-eager`, ...) are free: they do not make the
comparison unfair.
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
