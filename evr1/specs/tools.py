"""Video tools the policy may call during a rollout, and the limits of a multi-turn rollout."""

from __future__ import annotations

from pydantic import model_validator

from evr1.specs.base import PositiveInt, Spec


class ToolsSpec(Spec):
    """Which tools the policy sees and what one call may return.

    `names`: registered tools (`evr1 list tools`) offered to the model, in this order. `seek_total_pixels`:
    the pixel budget of one `seek` reply, all its frames together (qwen-vl-utils' `total_pixels` meaning; the
    frame rate and frame limits are the data's `VideoSpec`). `zoom_min_pixels` / `zoom_max_pixels`: the size
    a `zoom` crop is resized into, so a small region comes back larger than the prompt showed it.
    `max_turns`, `max_visual_tokens`, `max_tokens_per_turn`: the limits of one multi-turn rollout (tool calls
    answered, visual tokens added by replies in all, tokens the policy generates per turn).
    """

    names: tuple[str, ...] = ("seek", "zoom")
    seek_total_pixels: PositiveInt = 8 * 256 * 28 * 28
    zoom_min_pixels: PositiveInt = 256 * 28 * 28
    zoom_max_pixels: PositiveInt = 1024 * 28 * 28
    max_turns: PositiveInt = 3
    max_visual_tokens: PositiveInt = 8192
    max_tokens_per_turn: PositiveInt = 256

    @model_validator(mode="after")
    def _consistent(self) -> ToolsSpec:
        if self.zoom_min_pixels > self.zoom_max_pixels:
            raise ValueError(f"zoom_min_pixels ({self.zoom_min_pixels}) > zoom_max_pixels ({self.zoom_max_pixels})")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"names lists a tool twice: {list(self.names)}")
        return self
