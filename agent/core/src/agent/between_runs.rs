//! What the interactive mode changes between runs (`/compact`, `/undo`,
//! `/reset`, `/mode`; the binary's `repl` module): kept apart from the
//! loop, whose parts are otherwise fixed when the agent is assembled.

use crate::agent::Agent;
use crate::policy::Policy;
use crate::toolbox::ToolBox;
use crate::transcript::Transcript;

/// The agent's only setters: a run never calls them.
impl<T: ToolBox> Agent<T> {
    /// Compacts now, whatever the size (`/compact`); returns how many
    /// messages were replaced ([`crate::compaction::Compactor::compact`]).
    pub async fn compact(&mut self) -> usize {
        self.compactor().compact().await
    }

    /// Changes the history between runs (`/undo` is
    /// [`Transcript::undo_last_turn`], `/reset` keeps only the system
    /// message). The call ids of what `change` leaves are reserved after
    /// it, so no later call can repeat one; usage is kept.
    pub fn edit_history<R>(&mut self, change: impl FnOnce(&mut Transcript) -> R) -> R {
        let result = change(&mut self.messages);
        self.call_ids.reserve(&self.messages);
        result
    }

    /// Puts a new permission gate in place (`/mode`) for the next call.
    pub fn set_policy(&mut self, policy: Policy) {
        self.parts.config.policy = policy;
    }

    /// The tool box, to change what it offers (`/mode`).
    pub fn tools_mut(&mut self) -> &mut T {
        &mut self.tools
    }
}
