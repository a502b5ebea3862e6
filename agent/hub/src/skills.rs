//! The `skill` meta-tool: loads one skill's whole SKILL.md for the model.
//!
//! The system prompt lists the skills by name and description only
//! ([`nanohermes_core::prompt::skills`]); this tool is how the model reads one in
//! full. It follows the resource meta-tools' pattern ([`super::resources`]):
//! its name is claimed before any server tool is named, it is declared only
//! while there are skills ([`Hub::with_skills`]), it only reads (so every
//! permission mode offers it), it is routed in [`Hub::call`] before the
//! servers' tools, and its answer is clamped to the hub's output cap. The
//! text was read (with a size cap) when the skills were discovered, so a
//! call does no I/O.

use serde_json::{Map, Value, json};

use super::Hub;
use nanohermes_core::prompt::Skill;
use nanohermes_core::toolbox::ToolFacts;

/// The meta-tool's name.
pub const SKILL: &str = "skill";

/// What the policy knows about it: it only reads, like the resource
/// meta-tools.
pub const FACTS: ToolFacts = super::resources::FACTS;

/// The declaration of the `skill` tool for `skills`; `None` when there are
/// none.
pub(crate) fn declaration(skills: &[Skill]) -> Option<Value> {
    if skills.is_empty() {
        return None;
    }
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    Some(json!({
        "type": "function",
        "function": {
            "name": SKILL,
            "description": "Load a skill (instructions for a kind of task, listed in the system prompt) in full",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": names, "description": "The skill's name"},
                },
                "required": ["name"],
            },
        }
    }))
}

/// Whether the `skill` tool is declared for `skills`.
pub(crate) fn declares(skills: &[Skill], name: &str) -> bool {
    name == SKILL && !skills.is_empty()
}

impl Hub {
    /// Offers `skills` through the `skill` tool (declared only when there
    /// are some); the model reads one in full by name.
    pub fn with_skills(mut self, skills: Vec<Skill>) -> Hub {
        self.skills = skills;
        self.rebuild();
        self
    }

    /// The skills the `skill` tool offers.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// Runs the `skill` tool if `name` is it and it is declared; `None`
    /// otherwise.
    pub(super) fn call_skill(&self, name: &str, arguments: &Map<String, Value>) -> Option<String> {
        if !declares(&self.skills, name) {
            return None;
        }
        let listed = || {
            self.skills
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let answer = match arguments.get("name").and_then(Value::as_str) {
            None => format!("ERROR: {SKILL} needs `name`, one of: {}", listed()),
            Some(wanted) => match self.skills.iter().find(|s| s.name == wanted) {
                Some(skill) => format!(
                    "Skill {} ({}; files it mentions are in its folder)\n\n{}",
                    skill.name,
                    skill.path.display(),
                    skill.text
                ),
                None => format!(
                    "ERROR: no skill named {wanted}; the skills are: {}",
                    listed()
                ),
            },
        };
        Some(mcp_tools::clamp(&answer, self.max_output))
    }
}
