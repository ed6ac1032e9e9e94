"""`torchvet mcp` driven by the official MCP Python SDK (`mcp` from PyPI) as the client.

Usage: python mcp_client.py /path/to/torchvet

Lists the tools, calls `check` on a file with a missing `zero_grad` and expects
`missing-zero-grad` back, checks that `check` wrote nothing, that a path outside the workspace
root is refused, reads the rule catalog resource, and prints the round-trip times.
"""

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BUGGY = """\
import torch
from torch import nn, optim

model = nn.Linear(10, 2)
criterion = nn.CrossEntropyLoss()
opt = optim.SGD(model.parameters(), lr=0.1)

for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
"""

EXPECTED_TOOLS = {
    "check",
    "review",
    "project",
    "summary",
    "ckpt_scan",
    "ckpt_inspect",
    "ckpt_diff",
    "rule",
}


async def main(binary: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        train = root / "train.py"
        train.write_text(BUGGY)
        (Path(tmp) / "outside.py").write_text(BUGGY)
        params = StdioServerParameters(command=binary, args=["mcp", "--root", str(root)])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == "torchvet", init.server_info

                tools = await session.list_tools()
                names = {t.name for t in tools.tools}
                assert EXPECTED_TOOLS <= names, names
                check_tool = next(t for t in tools.tools if t.name == "check")
                props = check_tool.input_schema["properties"]
                assert {"paths", "select", "ignore", "preview", "fix"} <= set(props), props

                times = []
                for _ in range(10):
                    start = time.perf_counter()
                    result = await session.call_tool("check", {"paths": ["train.py"]})
                    times.append(time.perf_counter() - start)
                assert not result.is_error, result.content
                data = result.structured_content
                names = [f["name"] for f in data["findings"]]
                assert "missing-zero-grad" in names, data
                assert data["count"] == len(data["findings"])
                assert "missing-zero-grad" in result.content[0].text
                assert train.read_text() == BUGGY, "check without fix: true must not write"
                assert sorted(p.name for p in root.iterdir()) == ["train.py"], list(root.iterdir())

                refused = await session.call_tool("check", {"paths": ["../outside.py"]})
                assert refused.is_error, refused
                assert "outside the workspace" in refused.content[0].text

                selected = await session.call_tool(
                    "check", {"paths": ["train.py"], "ignore": ["missing-zero-grad"]}
                )
                assert all(
                    f["name"] != "missing-zero-grad" for f in selected.structured_content["findings"]
                )

                rule = await session.call_tool("rule", {"rule": "TV001"})
                assert not rule.is_error and "## What it does" in rule.content[0].text, rule

                resources = await session.list_resources()
                uris = {str(r.uri) for r in resources.resources}
                assert "torchvet://rules" in uris
                assert "torchvet://rules/missing-zero-grad" in uris
                doc = await session.read_resource("torchvet://rules/missing-zero-grad")
                assert "missing-zero-grad" in doc.contents[0].text

                project = await session.call_tool("project", {})
                assert not project.is_error, project.content
                assert project.structured_content["is_pytorch_project"] is True

                rule_times = []
                for _ in range(20):
                    start = time.perf_counter()
                    await session.call_tool("rule", {"rule": "missing-zero-grad"})
                    rule_times.append(time.perf_counter() - start)

        print(
            "mcp: tools listed, check found missing-zero-grad, outside path refused, "
            "resources read"
        )
        print(
            "mcp round trip: check (1 file, child process) median %.1f ms, max %.1f ms; "
            "rule (in-process) median %.2f ms"
            % (
                statistics.median(times) * 1000,
                max(times) * 1000,
                statistics.median(rule_times) * 1000,
            )
        )


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("TORCHVET", "torchvet")
    asyncio.run(main(binary))
