//! Where the list lives: in memory for the server instance, and optionally
//! in a JSON file written atomically by [`mcp_tools::write_atomic`] (temp
//! file in the same directory, fsync, rename, fsync of the directory), so a
//! crash leaves either the old list or the new one, never a torn file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::list::Todo;

/// Format version written into the file.
const FILE_VERSION: u32 = 1;

/// The list of one server instance, shared by every clone of its handler.
#[derive(Debug, Default)]
pub struct Store {
    todos: Mutex<Vec<Todo>>,
    file: Option<PathBuf>,
}

/// Why the list could not be loaded or saved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but cannot be read.
    #[error("cannot read the todo file {0}: {1}")]
    Read(String, String),
    /// The file is not a todo list this server wrote.
    #[error("the todo file {0} is corrupt ({1}); fix it or delete it to start an empty list")]
    Corrupt(String, String),
    /// Writing the file failed; the previous list is kept.
    #[error("cannot save the todo list to {0}: {1}; the previous list is kept")]
    Write(String, String),
}

#[derive(Serialize, Deserialize)]
struct FileFormat {
    version: u32,
    todos: Vec<Todo>,
}

impl Store {
    /// A list kept in memory only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A list persisted at `path`, loaded now if the file exists (a missing
    /// file is an empty list; its directory is created on the first write).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let todos = match std::fs::read(path) {
            Ok(bytes) => {
                let file: FileFormat = serde_json::from_slice(&bytes)
                    .map_err(|e| StoreError::Corrupt(shown.clone(), e.to_string()))?;
                if file.version != FILE_VERSION {
                    return Err(StoreError::Corrupt(
                        shown,
                        format!("unknown version {}", file.version),
                    ));
                }
                crate::list::validate(file.todos).map_err(|e| StoreError::Corrupt(shown, e))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(StoreError::Read(shown, e.to_string())),
        };
        Ok(Self {
            todos: Mutex::new(todos),
            file: Some(path.to_path_buf()),
        })
    }

    /// The file the list is persisted to, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// A copy of the current list.
    pub fn read(&self) -> Vec<Todo> {
        self.lock().clone()
    }

    /// Replaces the list with an already validated one: writes the file
    /// first (when there is one), and changes the list in memory only if
    /// that succeeded. Blocking: call it off the async runtime.
    pub fn replace(&self, todos: Vec<Todo>) -> Result<(), StoreError> {
        let mut current = self.lock();
        if let Some(path) = &self.file {
            write_atomically(path, &todos)
                .map_err(|e| StoreError::Write(path.display().to_string(), e.to_string()))?;
        }
        *current = todos;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Todo>> {
        // A panic while holding the lock cannot leave a half-written list:
        // the list is only ever replaced whole.
        self.todos
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Mode of a new todo file: the agent's own state, private to the user
/// (an existing file keeps whatever mode it has).
const NEW_FILE_MODE: u32 = 0o600;

fn write_atomically(path: &Path, todos: &[Todo]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut bytes = serde_json::to_vec_pretty(&FileFormat {
        version: FILE_VERSION,
        todos: todos.to_vec(),
    })?;
    bytes.push(b'\n');
    mcp_tools::write_atomic(path, &bytes, NEW_FILE_MODE)
}
