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
run: tests/data/engine-arg-spellings.vllm-0.32.0.json records what the real parser set for
every spelling in tests/data/engine-arg-spellings.yaml, plus its 430 option strings;
tools/vllm_parse_spellings.py made it, with vLLM's own virtualenv). Only 0.32.0 was run.
Older releases kept the parser in vllm/utils/__init__.py with the same rewriting; their
option tables differ, and the reserved set below is the union, so a release without
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
- `--no-flag` forms of booleans: `disable_log_stats` is store_true in 0.32; `--no-...`
  forms are refused too in case a release makes it a BooleanOptionalAction.
- `--config file.yaml` pulls any flag from a YAML file: it is reserved as a whole.
- A `--` separator does not stop vLLM's own rewriting (dotted args after it still merge),
  so every argument is read, whatever comes before it.
- `--model X` is moved to the positional model tag by `vllm serve`; `--uds` replaces host
  and port; `--headless` runs no API server (no /health, no /metrics).

Which field each reserved destination comes from is in `RESERVED`. Beyond the flags the
operator renders (and --disable-log-stats, both refused before by an exact-string check),
the set adds: `model` (the rendered positional), `uds` and `headless` (the probes, the
load pods and Prometheus reach the engine's HTTP port), `config` (a file can set anything
above), and the aliases `-sc`, `-tp`, `--device-memory-utilization`. Flags that change the
engine equally for all three Deployments (`--max-num-seqs`, `--enforce-eager`, ...) stay
the user's: they do not make the comparison unfair.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reserved:
    """One argparse destination the operator owns, and every option string that sets it."""

    dest: str  # vLLM's namespace field
    options: tuple[str, ...]  # long (`--x-y`) and short (`-xy`) option strings
    source: str  # what the operator sets it from, or why nobody may set it


RESERVED: tuple[Reserved, ...] = (
    Reserved("speculative_config", ("--speculative-config", "-sc"), "spec.speculative"),
    Reserved("model", ("--model",), "spec.model.name"),
    Reserved("served_model_name", ("--served-model-name",), "spec.model.servedModelName"),
    Reserved("revision", ("--revision",), "spec.model.revision"),
    Reserved("max_model_len", ("--max-model-len",), "spec.model.maxModelLen"),
    Reserved("dtype", ("--dtype",), "spec.model.dtype"),
    Reserved(
        "tensor_parallel_size",
        ("--tensor-parallel-size", "-tp"),
        "spec.gpuPool.tensorParallelSize",
    ),
    Reserved(
        "gpu_memory_utilization",
        ("--gpu-memory-utilization", "--device-memory-utilization"),
        "spec.engine.gpuMemoryUtilization",
    ),
    Reserved("host", ("--host",), "the operator (0.0.0.0)"),
    Reserved("port", ("--port",), "spec.engine.port"),
    Reserved("uds", ("--uds",), "the operator: a socket replaces host and port"),
    Reserved("headless", ("--headless", "--no-headless"), "the operator: no API server"),
    Reserved(
        "disable_log_stats",
        ("--disable-log-stats", "--no-disable-log-stats"),
        "the operator: every gate reads the engine's stats",
    ),
    Reserved("config", ("--config",), "the operator: a config file can set any flag"),
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
    """`args` with every argument that sets vLLM's speculative config removed, with its
    value when that is the next argument (`--speculative-config X`, `-sc X`)."""
    doomed: set[int] = set()
    for hit in reserved_hits(args):
        if hit.reserved.dest != "speculative_config":
            continue
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
