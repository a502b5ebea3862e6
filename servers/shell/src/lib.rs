//! The shell MCP server (being written).
