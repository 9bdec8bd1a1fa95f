"""MkDocs hooks: the scenario reference is generated from the pydantic schema, so it cannot drift;
a generated page says, where a reader sees it, which command wrote it and when."""

from __future__ import annotations

import re
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

MARKER = "<!-- scenario-schema -->"


def _type(annotation: Any) -> str:
    """A field's type as a reader writes it: ``int | list[int]``, ``'permuted' | 'random-split'``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin in (Union, UnionType):
        return " | ".join(_type(arg) for arg in args)
    if origin is Literal:
        return " | ".join(repr(arg) for arg in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type(arg) for arg in args)}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def _default(value: Any) -> str:
    """A default as a reader would write it: a table of defaults as ``RulesEntry()``."""
    if isinstance(value, list):
        return "[" + ", ".join(_default(item) for item in value) + "]"
    return f"{type(value).__name__}()" if hasattr(type(value), "model_fields") else repr(value)


def schema_tables() -> str:
    """One Markdown table per model of the scenario schema: key, type, default, description."""
    from pydantic_core import PydanticUndefined

    from ladderlab.competition import scenario as competition_scenario
    from ladderlab.extrapolation import scenario as extrapolation_scenario
    from ladderlab.runs import scenario
    from ladderlab.runs.schema import StrictModel

    models = [model for module in (scenario, competition_scenario, extrapolation_scenario) for model in vars(module).values()
              if isinstance(model, type) and issubclass(model, StrictModel) and model.__module__ == module.__name__]
    models[models.index(scenario.BaseScenario)] = scenario.Scenario  # with every registered kind's tables
    parts = []
    for model in models:
        rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, field in model.model_fields.items():
            if field.is_required():
                default = "required"
            elif field.default_factory is not None:
                default = f"`{_default(field.default_factory())}`"
            elif field.default is PydanticUndefined:
                default = ""
            else:
                default = f"`{field.default!r}`"
            meaning = (field.description or "").replace("|", "\\|")
            kind = _type(field.annotation).replace("|", "\\|")
            rows.append(f"| `{name}` | `{kind}` | {default} | {meaning} |")
        doc = (model.__doc__ or "").strip().splitlines()
        intro = f"{doc[0]}\n\n" if doc else ""
        parts.append(f"### `{model.__name__}`\n\n{intro}" + "\n".join(rows))
    return "\n\n".join(parts)


ROOT = Path(__file__).resolve().parents[1]
CODE_BLOCK = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2", flags=re.M | re.S)


def provenance(markdown: str, path: str) -> str:
    """The line a page written by a command ends with: the commands its stamps record (the code
    they fingerprint is in the stamp; ``ladderlab dev pages`` compares it with today's) and when
    the page was last written (its last commit), or nothing for a page no command stamped."""
    from ladderlab.dev.page_survey import made
    from ladderlab.runs.page_stamps import stamps_in

    stamps = stamps_in(CODE_BLOCK.sub("", markdown))  # a stamp shown as an example is not the page's
    if not stamps:
        return ""
    commands = list(dict.fromkeys(stamp["command"] for stamp in stamps))
    shown = f"`{commands[0]}`" if len(commands) == 1 else f"{len(commands)} commands (one per part, in its stamp)"
    fingerprints = sum(len(stamp.get("code", {})) for stamp in stamps)
    last = made(ROOT, path)
    when = f"; last written {last}" if last else ""
    modules = "1 plugin or core module" if fingerprints == 1 else f"{fingerprints} plugins and core modules"
    return (f"*Written by {shown}; the stamp in this page's source fingerprints its code ({modules}){when}. "
            f"`ladderlab dev pages` says whether that code has changed since.*")


INCLUDE = re.compile(r'^([ \t]*)--8<-- "([^"]+)"[ \t]*$')


def with_provenance(markdown: str, path: str) -> str:
    """``markdown`` with the :func:`provenance` of each generated page it includes (``--8<--``)
    under the include (under the code block, for an include inside one), and its own at its end."""
    lines: list[str] = []
    fenced, waiting = False, []
    for text in markdown.splitlines():
        lines.append(text)
        if text.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            if not fenced and waiting:
                lines += waiting
                waiting = []
        elif (include := INCLUDE.match(text)) and (ROOT / include[2]).is_file():
            line = provenance((ROOT / include[2]).read_text(), include[2])
            if line:
                (waiting if fenced else lines).extend(["", f"{include[1]}{line}", ""])
    markdown = "\n".join(lines + waiting) + ("\n" if markdown.endswith("\n") else "")
    line = provenance(markdown, path)
    return f"{markdown.rstrip()}\n\n---\n\n{line}\n" if line else markdown


def on_page_markdown(markdown: str, page: Any = None, **_: Any) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, schema_tables())
    return with_provenance(markdown, f"docs/{page.file.src_path}") if page is not None else markdown
