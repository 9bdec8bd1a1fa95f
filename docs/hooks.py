"""MkDocs hook: the scenario reference is generated from the pydantic schema, so it cannot drift."""

from __future__ import annotations

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


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, schema_tables()) if MARKER in markdown else markdown
