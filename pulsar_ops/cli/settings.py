"""Settings for every command from a file, the environment and flags, in that order of precedence.

``pulsar-ops --config-file FILE COMMAND ...`` (or ``PULSAR_OPS_CONFIG_FILE``) reads a TOML file with one table
per command; keys are the command's long option names without the dashes (``zk-auth-file`` or
``zk_auth_file``)::

    [scrape]
    zookeeper = "zk1:2181,zk2:2181/pulsar"
    zk-sasl-file = "/etc/pulsar-ops/zk-sasl"
    client-conf = "/pulsar/conf/client.conf"

    [apply]
    zookeeper = "zk1:2181,zk2:2181/pulsar"
    quarantine = "2h"

    ["model gc"]      # subcommands: "GROUP NAME"
    pulsar-conf = "/pulsar/conf/bookkeeper.conf"

Every option can also come from ``PULSAR_OPS_<COMMAND>_<OPTION>`` (``PULSAR_OPS_APPLY_QUARANTINE=2h``; the
security options also from the shorter ``PULSAR_OPS_ZK_AUTH`` ...). Precedence: built-in defaults < the file <
environment variables < flags (Click's own order for ``default_map`` and environment variables).

Each table is validated before any command runs by a pydantic model built from the command's own options (their
names and types): an unknown key or a value of the wrong type is ``config-invalid`` naming the file, the table and
the key, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from pulsar_ops.errors import ConfigError

ENV_PREFIX = "PULSAR_OPS"
CONFIG_FILE_ENV = "PULSAR_OPS_CONFIG_FILE"


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, sub in sorted((getattr(group, "commands", None) or {}).items()):
        path = (*prefix, name)
        if getattr(sub, "commands", None):
            yield from _commands(sub, path)
        else:
            yield path, sub


_BY_CLICK_NAME: dict[str, Any] = {"integer": int, "float": float, "boolean": bool, "path": str}
_BY_ANNOTATION: dict[Any, Any] = {int: int, float: float, bool: bool}


def _python_type(param: Any) -> Any:
    """The value type of an option: Click's ``type.name`` or, in typer >= 0.29 (its own Click), the annotation."""
    click_type = getattr(param, "type", None)
    if click_type is not None:
        base: Any = _BY_CLICK_NAME.get(getattr(click_type, "name", ""), str)
    else:
        descriptor = getattr(param, "type_descriptor", None)
        base = _BY_ANNOTATION.get(getattr(descriptor, "annotation", None), str)
    if getattr(param, "multiple", False):
        return list[base]
    return base


def _model(path: tuple[str, ...], command: Any) -> tuple[type[BaseModel], dict[str, str]]:
    """A pydantic model of the command's options (all optional) and a key -> parameter-name map."""
    fields: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for p in command.params:
        long = [o for o in getattr(p, "opts", []) if o.startswith("--")]
        if not long or getattr(p, "param_type_name", "") != "option" or p.name in ("help",):
            continue
        key = long[0][2:]
        keys[key] = keys[key.replace("-", "_")] = p.name
        fields[p.name] = (_python_type(p) | None, None)
    model = create_model(
        "Settings_" + "_".join(path).replace("-", "_"), __config__=ConfigDict(extra="forbid", strict=False), **fields
    )
    return model, keys


def load_default_map(file: Path, root: Any) -> dict[str, Any]:
    """The TOML file as Click's ``default_map`` for ``root``, validated per command."""
    try:
        doc = tomllib.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--config-file {file} does not exist", hint="pass an existing TOML file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"--config-file {file}: {e}", hint="fix the TOML syntax") from None
    commands = {" ".join(path): (path, cmd) for path, cmd in _commands(root)}
    out: dict[str, Any] = {}
    for table, values in doc.items():
        if table not in commands:
            raise ConfigError(
                f"--config-file {file}: [{table}] is not a command",
                hint="tables are command names: " + ", ".join(sorted(commands)),
            )
        if not isinstance(values, dict):
            raise ConfigError(f"--config-file {file}: [{table}] must be a table of options", hint="see README")
        path, cmd = commands[table]
        model, keys = _model(path, cmd)
        unknown = sorted(k for k in values if k not in keys)
        if unknown:
            raise ConfigError(
                f"--config-file {file}: [{table}] has no option {unknown[0]!r}",
                hint=f"options of `pulsar-ops {table}`: " + ", ".join(sorted(k for k in keys if "_" not in k)),
            )
        named = {keys[k]: v for k, v in values.items()}
        try:
            checked = model.model_validate(named)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ConfigError(
                f"--config-file {file}: [{table}] {where}: {first['msg']}", hint="fix the value's type"
            ) from None
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = {k: v for k, v in checked.model_dump().items() if k in named}
    return out


def context_settings() -> dict[str, Any]:
    """Typer/Click context settings: ``PULSAR_OPS_<COMMAND>_<OPTION>`` for every option."""
    return {"auto_envvar_prefix": ENV_PREFIX}


def apply_config_file(ctx: Any, file: Path | None) -> None:
    """Install the file's values as the ``default_map`` of the root context (children inherit their table)."""
    if file is not None:
        ctx.default_map = load_default_map(file, ctx.command)
