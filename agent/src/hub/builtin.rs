//! The built-in tool servers, served inside the agent's process.
//!
//! Each built-in is an rmcp handler from its server crate, connected over
//! typed in-memory channels ([`mcp_tools::in_process::serve_in_process`]): a
//! full MCP session with no child process and no JSON encoding. Adding a
//! server is one variant and one arm in [`Builtin::spec`].

use futures::future::BoxFuture;
use mcp_tools::ToolContext;
use mcp_tools::in_process::serve_in_process;

use super::server::{Client, client_config};

/// A built-in tool server the agent can run in-process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `nanohermes-files`: read, write, edit, patch and list files.
    Files,
}

/// Starts one built-in server in-process and returns the connected client.
type Connect = fn(ToolContext) -> BoxFuture<'static, anyhow::Result<Client>>;

impl Builtin {
    /// Every built-in server, in the order their tools are listed.
    pub const ALL: &'static [Builtin] = &[Builtin::Files];

    /// The server's name, as shown in `nanohermes tools` and in errors.
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// Looks a built-in up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Self::ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Name and in-process constructor: the one place a new server is added.
    fn spec(self) -> (&'static str, Connect) {
        match self {
            Builtin::Files => ("files", |ctx| {
                Box::pin(connect(nanohermes_files::FilesServer::new(ctx)))
            }),
        }
    }

    /// Starts the server in-process, confined to `ctx`'s workspace.
    pub(crate) fn connect(self, ctx: ToolContext) -> BoxFuture<'static, anyhow::Result<Client>> {
        (self.spec().1)(ctx)
    }
}

async fn connect<S>(server: S) -> anyhow::Result<Client>
where
    S: rmcp::ServerHandler + rmcp::service::Service<rmcp::RoleServer>,
{
    Ok(serve_in_process(server, client_config()).await?)
}
