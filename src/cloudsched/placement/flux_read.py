"""Reading Apache Storm Flux files as Storm's ``FluxParser`` does: text, includes, variables.

``${name}`` is replaced by a property from a Java properties file (:func:`read_properties`)
and ``${ENV-NAME}`` by the environment variable ``NAME``; ``includes`` merge one level deep
(:func:`apply_includes`).  Files are read only when regular and of bounded size
(:func:`cloudsched.io.read_input`).  A value taken from the environment never appears in an
error message: :func:`scrubbed` puts the variable's name in its place.  The graph itself is
built by :mod:`cloudsched.placement.flux`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudsched.errors import InputError, ParameterError
from cloudsched.io import YAML_MAX_BYTES, read_input, read_yaml_text

__all__ = [
    "FLUX_KEYS",
    "PROPERTIES_MAX_BYTES",
    "apply_includes",
    "read_flux",
    "read_properties",
    "scrubbed",
]

_VAR = re.compile(r"\$\{([^}]+)\}")


#: Largest properties file read.
PROPERTIES_MAX_BYTES = 1 << 20


def _list_item(value: str, index: int, where: str, name: str) -> str:
    """``${name[i]}``: element ``i`` of a list property, as Storm's Flux reads it.

    FluxParser.parseListAndExtractElem (flux-core, org.apache.storm.flux.parser): the
    value's first and last characters (its brackets) dropped, split at commas, the element
    trimmed and its first and last characters (its quotes) dropped.
    """
    parts = value[1:-1].split(",")
    if index >= len(parts):
        raise InputError(where, f"${{{name}}}: the list has {len(parts)} elements")
    return parts[index].strip()[1:-1]


def read_properties(path: str | Path) -> dict[str, str]:
    """Read a Java ``.properties`` file (``key=value`` or ``key: value``; ``#``/``!`` comments)."""
    out: dict[str, str] = {}
    try:
        text = read_input(path, PROPERTIES_MAX_BYTES, "a properties file").decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(str(path), "the properties file is not UTF-8 text") from None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _substitute(
    text: str, where: str, properties: Mapping[str, str], secrets: list[tuple[str, str]]
) -> str:
    """Fill ``${name}`` and ``${ENV-NAME}``; the environment's values go into ``secrets``."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("ENV-"):
            value = os.environ.get(name[4:])
            if value is None:
                raise InputError(where, f"${{{name}}}: environment variable {name[4:]} is not set")
            secrets.append((name, value))
            return value
        item = re.fullmatch(r"(.+)\[(\d+)\]", name)
        if item is not None and name not in properties and item[1] in properties:
            return _list_item(properties[item[1]], int(item[2]), where, name)
        if name not in properties:
            raise InputError(
                where,
                f"${{{name}}} is not defined (give a properties file: --properties, or "
                f"'properties:' next to 'flux:' in a workload)",
            )
        return properties[name]

    return "\n".join(
        line if line.lstrip().startswith("#") else _VAR.sub(one, line) for line in text.splitlines()
    )


def read_flux(
    path: Path, properties: Mapping[str, str], secrets: list[tuple[str, str]]
) -> dict[str, Any]:
    """Read one Flux file (variables filled, environment values noted in ``secrets``)."""
    where = str(path)
    try:
        text = read_input(path, YAML_MAX_BYTES, "a Flux file").decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(where, "the Flux file is not UTF-8 text") from None
    doc = read_yaml_text(_substitute(text, where, properties, secrets), where)
    if not isinstance(doc, Mapping):
        raise InputError(where, "a Flux file is a mapping with 'spouts', 'bolts' and 'streams'")
    for key in ("spouts", "bolts", "streams", "components", "includes"):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            raise InputError(where, f"'{key}' must be a list (got {type(doc[key]).__name__})")
    if doc.get("config") is not None and not isinstance(doc["config"], Mapping):
        raise InputError(where, "'config' must be a mapping of Storm settings")
    if isinstance(doc.get("name"), (list, Mapping)):
        raise InputError(where, "'name' must be a string")
    return dict(doc)


def _merge_by_id(base: list[Any], extra: list[Any], override: bool) -> list[Any]:
    out = list(base)
    index = {d.get("id"): i for i, d in enumerate(out) if isinstance(d, Mapping)}
    for d in extra:
        cid = d.get("id") if isinstance(d, Mapping) else None
        if cid in index:
            if override:
                out[index[cid]] = d
        else:
            index[cid] = len(out)
            out.append(d)
    return out


#: What a Flux file defines; an included file defining none of them is not a Flux file.
FLUX_KEYS = ("name", "config", "components", "spouts", "bolts", "streams")


def apply_includes(
    doc: dict[str, Any], path: Path, properties: Mapping[str, str], secrets: list[tuple[str, str]]
) -> list[str]:
    """Merge ``includes`` as Storm's ``FluxParser.processIncludes`` does (one level).

    Returns the files included, in order.  A file that defines none of :data:`FLUX_KEYS`
    is refused (Storm would merge it as nothing, and the mistake would go unseen).
    """
    included: list[str] = []
    includes = doc.get("includes") or []
    if not isinstance(includes, list):
        raise InputError(str(path), "'includes' must be a list of {file: PATH, override: BOOL}")
    for inc in includes:
        if not isinstance(inc, Mapping) or not isinstance(inc.get("file"), str):
            raise InputError(str(path), "every include needs a 'file'")
        if inc.get("resource"):
            raise InputError(
                str(path),
                f"include {inc['file']!r} is a classpath resource "
                "(resource: true), which only a Storm jar can read: copy it next "
                "to this file and include it as a file",
            )
        override = bool(inc.get("override", False))
        file = path.parent / inc["file"]
        sub = read_flux(file, properties, secrets)
        if not any(sub.get(key) is not None for key in FLUX_KEYS):
            raise InputError(
                str(path),
                f"include {inc['file']!r} is not a Flux file: it defines none of "
                + ", ".join(FLUX_KEYS),
            )
        included.append(str(file))
        if sub.get("name") is not None and (override or doc.get("name") is None):
            doc["name"] = sub["name"]
        if isinstance(sub.get("config"), Mapping):
            config = dict(doc.get("config") or {})
            for k, v in sub["config"].items():
                if override or k not in config:
                    config[k] = v
            doc["config"] = config
        for key in ("components", "bolts", "spouts"):
            if isinstance(sub.get(key), list):
                doc[key] = _merge_by_id(list(doc.get(key) or []), sub[key], override)
        if isinstance(sub.get("streams"), list):
            doc["streams"] = list(doc.get("streams") or []) + list(sub["streams"])
    return included


def scrubbed(exc: ParameterError, secrets: list[tuple[str, str]]) -> ParameterError:
    """Return ``exc`` with every environment value in its message replaced by its name."""
    text = str(exc)
    for name, value in secrets:
        shown = {repr(value), repr(value)[1:-1]} if len(value) < 3 else {value, repr(value)[1:-1]}
        for form in sorted(shown, key=len, reverse=True):
            if form:
                text = text.replace(form, f"${{{name}}}")
    exc.args = (text,)
    if any(value and value in repr(exc.value) for _, value in secrets):
        exc.value = "(a value from the environment)"
    return exc
