"""Tools the policy calls during a rollout (`evr1.registry.TOOLS`): the contract, the call format, the built-ins.

`evr1.tools.base` holds the contract (`Tool`, `ToolReply`, `ToolContext`), `evr1.tools.calls` parses Qwen's
`<tool_call>` blocks and runs them, `evr1.tools.builtin` registers `seek` and `zoom`. See docs/tools.md.
"""

from evr1.tools.base import Tool, ToolContext, ToolReply, check_arguments, schema_of

__all__ = ["Tool", "ToolContext", "ToolReply", "check_arguments", "schema_of"]
