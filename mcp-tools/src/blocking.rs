//! Blocking tool work off the async thread.
//!
//! Servers run on a current-thread runtime, so file, search and SQLite work
//! goes to tokio's blocking pool; a panic there becomes a tool error, not a
//! dead server.

/// Runs `work` on the blocking pool and returns its outcome; a panic inside
/// it becomes `Err("internal error: …")`.
pub async fn blocking<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, String>
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(outcome) => outcome.map_err(|e| e.to_string()),
        Err(e) => Err(format!("internal error: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outcomes_and_panics_become_results() {
        assert_eq!(blocking(|| Ok::<_, String>(7)).await, Ok(7));
        assert_eq!(
            blocking(|| Err::<(), _>("bad")).await,
            Err("bad".to_string())
        );
        let panicked = blocking(|| -> Result<(), String> { panic!("boom") }).await;
        assert!(panicked.unwrap_err().starts_with("internal error"));
    }
}
