"""MkDocs hook: the scenario reference is generated from the pydantic schema, so it cannot drift."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- scenario-schema -->"


def _type(field: Any) -> str:
    text = getattr(field.annotation, "__name__", None) or str(field.annotation)
    return text.replace("typing.", "").replace("ladderlab.scenario.", "")


def schema_tables() -> str:
    """One Markdown table per model of the scenario schema: key, type, default, description."""
    from pydantic_core import PydanticUndefined

    from ladderlab import scenario

    models = [model for model in vars(scenario).values()
              if isinstance(model, type) and issubclass(model, scenario._Strict) and model is not scenario._Strict]
    parts = []
    for model in models:
        rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, field in model.model_fields.items():
            if field.is_required():
                default = "required"
            elif field.default_factory is not None:
                default = f"`{field.default_factory()!r}`"
            elif field.default is PydanticUndefined:
                default = ""
            else:
                default = f"`{field.default!r}`"
            meaning = (field.description or "").replace("|", "\\|")
            rows.append(f"| `{name}` | `{_type(field)}` | {default} | {meaning} |")
        doc = (model.__doc__ or "").strip().splitlines()
        intro = f"{doc[0]}\n\n" if doc else ""
        parts.append(f"### `{model.__name__}`\n\n{intro}" + "\n".join(rows))
    return "\n\n".join(parts)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, schema_tables()) if MARKER in markdown else markdown
