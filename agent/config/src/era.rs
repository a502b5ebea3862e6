//! The two eras of the MCP protocol a server can speak. The hub learns a
//! server's era at connection time (and remembers it, keyed by the
//! server's configuration); a config entry may state it (`era`).

use serde::{Deserialize, Serialize};

/// A protocol era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Era {
    /// 2026-07-28: `server/discover`, `_meta` on every request.
    #[serde(rename = "2026-07-28")]
    Modern,
    /// 2025-11-25 and before: the `initialize` handshake.
    #[serde(rename = "2025-11-25")]
    Legacy,
}

impl Era {
    /// The protocol version that names the era: `2026-07-28` or `2025-11-25`.
    pub fn version(self) -> &'static str {
        match self {
            Era::Modern => "2026-07-28",
            Era::Legacy => "2025-11-25",
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.version())
    }
}
