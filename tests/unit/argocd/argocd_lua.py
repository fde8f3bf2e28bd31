"""Runs Argo CD's Lua customizations under the real `lua5.1` interpreter.

Argo CD evaluates health checks and actions with gopher-lua (Lua 5.1 semantics), handing
the live object to the script as the global `obj`. These helpers do the same: the object
becomes a Lua table literal, the script runs via `loadfile`, and its result comes back as
JSON-ish lines the test can compare. Running the real interpreter (not a Python Lua
emulation) is what catches 5.2+ features and nil-indexing mistakes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

ARGOCD_DIR = Path(__file__).resolve().parents[3] / "charts" / "specdecode-operator" / "argocd"
LUA = "lua5.1"

# Lua 5.1 has no JSON: a tiny encoder for the values scripts return (tables, strings,
# numbers, booleans), with sorted keys so output is stable.
LUA_JSON_ENCODER = r"""
local function encode(value)
  local kind = type(value)
  if kind == "table" then
    local keys = {}
    for key in pairs(value) do table.insert(keys, tostring(key)) end
    table.sort(keys)
    local parts = {}
    for _, key in ipairs(keys) do
      local item = value[key]
      if item == nil then item = value[tonumber(key)] end
      table.insert(parts, string.format("%q", key) .. ":" .. encode(item))
    end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif kind == "string" then
    return string.format("%q", value)
  elseif kind == "nil" then
    return "null"
  end
  return tostring(value)
end
"""


def lua_literal(value: Any) -> str:
    """A Python value from YAML/JSON as a Lua 5.1 table constructor expression."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date):
        return lua_literal(value.isoformat())
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, Mapping):
        fields = ", ".join(f"[{lua_literal(str(k))}] = {lua_literal(v)}" for k, v in value.items())
        return "{" + fields + "}"
    if isinstance(value, list | tuple):
        return "{" + ", ".join(lua_literal(item) for item in value) + "}"
    raise TypeError(f"no Lua literal for {type(value).__name__}")


def lua_interpreter() -> str:
    """Path of lua5.1; fails loudly (tests/cluster/install-system-deps.sh installs it)."""
    path = shutil.which(LUA)
    if path is None:
        raise RuntimeError(f"{LUA} not found: run tests/cluster/install-system-deps.sh")
    return path


def run_script(script: Path, obj: Mapping[str, Any]) -> Any:
    """Run `script` with global `obj` and return what it returns (decoded from JSON)."""
    program = "\n".join(
        [
            LUA_JSON_ENCODER,
            f"obj = {lua_literal(dict(obj))}",
            f"local script = assert(loadfile({lua_literal(str(script))}))",
            "io.write(encode(script()))",
        ]
    )
    result = subprocess.run(
        [lua_interpreter(), "-"],
        check=False,
        input=program,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if result.returncode != 0:
        raise AssertionError(f"{script.name} failed under {LUA}: {result.stderr.strip()}")
    return json.loads(_lua_quoted_to_json(result.stdout))


def _lua_quoted_to_json(text: str) -> str:
    """`%q` escapes newlines as backslash-newline; JSON wants \\n."""
    return text.replace("\\\n", "\\n")
