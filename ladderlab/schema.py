"""The base of every model of a scenario file: a key the model does not know is an error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A table of a scenario file; unknown keys are refused, naming them."""

    model_config = ConfigDict(extra="forbid")
