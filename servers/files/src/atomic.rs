//! Atomic file replacement: write a temp file beside the target, then rename.

use std::io::Write;
use std::path::Path;

/// Writes `content` to `path` atomically, creating parent directories. An
/// existing file keeps its permissions.
pub(crate) fn write_atomic(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "path has no parent directory",
        )
    })?;
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".nanohermes-")
        .suffix(".tmp")
        .tempfile_in(parent)?;
    temp.write_all(content)?;
    temp.as_file().sync_data()?;
    if let Ok(meta) = std::fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
