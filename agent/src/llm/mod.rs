//! OpenAI-compatible model client (being written).
