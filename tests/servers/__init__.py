"""MCP servers the live-source tests start: in-process (the SDK's low-level `Server` over Streamable HTTP) and small
stdio scripts for the misbehaving cases. `package.json` pins the npm servers (`npm ci --prefix tests/servers`)."""
