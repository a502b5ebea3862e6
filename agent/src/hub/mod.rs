//! MCP client hub (being written).
