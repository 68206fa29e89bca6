"""Cell parameters of the Python runners: one list per runner, checked here.

dlbench validates the core parameters (model, scenario, batch_size, device, precision, strategy,
world_size) and passes every other key of a ``runner: {command: [...]}`` matrix unvalidated, so a
runner must check its own keys: an unknown key, a wrong type or a value out of range ends the
cell as ERROR ``invalid`` naming the key and what it accepts (the message style of
src/config/registry_parse.cc).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from dlbench_client import InvalidParameter
from dlbench_client.load import LOAD_KEYS


@dataclass(frozen=True)
class Param:
    """One parameter: its name, kind (int, number, bool, enum, str, device), default (None:
    absent), allowed values (enum), bounds (int, number) and help text."""

    name: str
    kind: str
    default: Any = None
    choices: Tuple[str, ...] = ()
    minimum: Optional[float] = None
    exclusive_minimum: bool = False
    maximum: Optional[float] = None
    help: str = ""

    def expected(self) -> str:
        """What a valid value looks like, for messages and docs."""
        if self.kind == "enum":
            return "one of " + ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "device":
            return "cpu, cuda or cuda:N"
        if self.kind == "str":
            return "a string"
        noun = "an integer" if self.kind == "int" else "a number"
        parts = []
        if self.minimum is not None:
            parts.append("%s %s" % (">" if self.exclusive_minimum else ">=", _num(self.minimum)))
        if self.maximum is not None:
            parts.append("<= %s" % _num(self.maximum))
        return noun + (" " + " and ".join(parts) if parts else "")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d{1,4}))?$")

#: The core parameters, with dlbench's defaults (docs/config-reference.md).
CORE = (
    Param("model", "str", help="The model to run."),
    Param("scenario", "enum", "train", ("train", "infer"), help="train: forward, backward, optimizer; infer: forward."),
    Param("batch_size", "int", 1, minimum=1, maximum=1 << 20, help="Samples per step."),
    Param("device", "device", "cpu", help="cpu, cuda (= cuda:0) or cuda:N."),
    Param("precision", "enum", "fp32", ("fp32", "tf32", "bf16", "fp16", "int8"), help="Numeric precision."),
    Param("strategy", "enum", "none", ("none", "ddp"), help="Distribution (ddp: not in the Python runners)."),
    Param("world_size", "int", 1, minimum=1, maximum=1 << 16, help="Ranks (1 in the Python runners)."),
)


def parse_device(text: str) -> Tuple[str, int]:
    """("cpu", 0) or ("cuda", N) from "cpu", "cuda" or "cuda:N"; InvalidParameter otherwise."""
    m = _DEVICE.match(text)
    if not m or (m.group(1) == "cpu" and m.group(2) is not None):
        raise InvalidParameter("device: expected cpu, cuda or cuda:N (got '%s')" % text)
    return m.group(1), int(m.group(2) or 0)


def _check(spec: Param, value: Any) -> Any:
    got = "(got %s)" % (("'%s'" % value) if isinstance(value, str) else repr(value))
    bad = InvalidParameter("%s: expected %s %s" % (spec.name, spec.expected(), got))
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
    if spec.kind in ("str", "device", "enum"):
        if not isinstance(value, str):
            raise bad
        if spec.kind == "enum" and value not in spec.choices:
            raise bad
        if spec.kind == "device":
            parse_device(value)
        if len(value) > 4096:
            raise InvalidParameter("%s: at most 4096 characters (got %d)" % (spec.name, len(value)))
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad
    if spec.kind == "int" and not isinstance(value, int):
        raise bad
    if not math.isfinite(value):
        raise bad
    if spec.minimum is not None and (value < spec.minimum or (spec.exclusive_minimum and value == spec.minimum)):
        raise bad
    if spec.maximum is not None and value > spec.maximum:
        raise bad
    return int(value) if spec.kind == "int" else float(value)


def parse_params(params: Mapping[str, Any], specs: Sequence[Param], runner: str) -> Dict[str, Any]:
    """Every parameter of ``specs`` typed and checked, defaults filled (absent ones without a
    default stay None); InvalidParameter for an unknown key (with the nearest known one) or a bad
    value. A null value counts as absent. The load keys (dlbench_client.load.LOAD_KEYS) are not
    this function's: the client's harness checks them (resolve_load_settings) and refuses a load
    cell for a runner without ``issue``."""
    by_name = {s.name: s for s in specs}
    for key in params:
        if key not in by_name and key not in LOAD_KEYS:
            near = difflib.get_close_matches(key, list(by_name), n=1, cutoff=0.75)
            hint = " (did you mean '%s'?)" % near[0] if near else ""
            raise InvalidParameter("unknown parameter '%s' for runner %s%s; it accepts: %s"
                                   % (key, runner, hint, ", ".join(sorted(by_name))))
    out: Dict[str, Any] = {}
    for spec in specs:
        value = params.get(spec.name)
        out[spec.name] = spec.default if value is None else _check(spec, value)
    return out


def require_single_process(p: Mapping[str, Any]) -> None:
    """The Python runners run one process per cell: ddp and world_size > 1 are refused."""
    from dlbench_client import Unsupported
    if p["strategy"] != "none" or p["world_size"] != 1:
        raise Unsupported("strategy ddp / world_size > 1 are not implemented in the Python runners "
                          "(use runner: torch)")


def markdown_table(specs: Sequence[Param]) -> str:
    """The parameters as a Markdown table (key, expected, default, help)."""
    rows = ["| key | accepts | default | notes |", "|---|---|---|---|"]
    for s in specs:
        default = "none" if s.default is None else ("`%s`" % str(s.default).lower()
                                                     if isinstance(s.default, bool) else "`%s`" % s.default)
        rows.append("| `%s` | %s | %s | %s |" % (s.name, s.expected(), default, s.help))
    return "\n".join(rows)


def runner_tables() -> str:
    """The Markdown tables of every runner's own parameters, as docs/python-client.md holds them
    (``python3 -m dlbench_runners.params`` prints them; a test checks the doc)."""
    import importlib
    core = {p.name for p in CORE}
    parts = []
    for module in ("torch", "jax", "onnxruntime", "spin"):
        specs = importlib.import_module("dlbench_runners." + module).PARAMS
        parts.append("`dlbench_runners.%s`:\n\n<!-- params: dlbench_runners.%s -->\n%s\n<!-- end params -->"
                     % (module, module, markdown_table([s for s in specs if s.name not in core])))
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(runner_tables())
