//! The one file that holds OAuth tokens: `$NANOHERMES_HOME/credentials.json`,
//! mode 0600 in a 0700 directory, written atomically (the project's
//! private-file writer), keyed by the server's URL. Each entry is rmcp's
//! [`StoredCredentials`] (client id, token response, granted scopes, the
//! issuer that minted them), so a changed authorization server is noticed
//! and its old tokens dropped (rmcp's `initialize_from_store`).
//!
//! Nothing else writes tokens: not sessions, not logs, not error texts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

/// `$NANOHERMES_HOME/credentials.json`, else `~/.nanohermes/credentials.json`.
pub fn default_path() -> Option<PathBuf> {
    nanohermes_config::Paths::of_process().credentials()
}

#[derive(Default, Serialize, Deserialize)]
struct Contents {
    /// Server URL → its credentials.
    #[serde(default)]
    servers: BTreeMap<String, StoredCredentials>,
}

/// The credentials file. Every read and write goes through one lock, so two
/// connections of this process never lose each other's update.
#[derive(Clone)]
pub struct CredentialsFile {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl std::fmt::Debug for CredentialsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsFile")
            .field("path", &self.path)
            .finish()
    }
}

impl CredentialsFile {
    /// The file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> CredentialsFile {
        CredentialsFile {
            path: path.into(),
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> std::io::Result<Contents> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                std::io::Error::other(format!(
                    "{} is not a credentials file ({e}); remove it and run `nanohermes mcp login NAME` again",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Contents::default()),
            Err(e) => Err(e),
        }
    }

    fn write(&self, contents: &Contents) -> std::io::Result<()> {
        mcp_tools::atomic::write_private_json(&self.path, contents)
    }

    /// The credentials stored for `url`.
    pub async fn get(&self, url: &str) -> std::io::Result<Option<StoredCredentials>> {
        let _held = self.lock.lock().await;
        Ok(self.read()?.servers.remove(url))
    }

    /// Stores `credentials` for `url`, replacing what was there.
    pub async fn put(&self, url: &str, credentials: StoredCredentials) -> std::io::Result<()> {
        let _held = self.lock.lock().await;
        let mut contents = self.read()?;
        contents.servers.insert(url.to_owned(), credentials);
        self.write(&contents)
    }

    /// Forgets `url`'s credentials; whether there were any.
    pub async fn remove(&self, url: &str) -> std::io::Result<bool> {
        let _held = self.lock.lock().await;
        let mut contents = self.read()?;
        let had = contents.servers.remove(url).is_some();
        if had {
            self.write(&contents)?;
        }
        Ok(had)
    }

    /// Whether `url` has a token stored (it may have expired: a refresh
    /// token can still renew it).
    pub async fn has_token(&self, url: &str) -> bool {
        matches!(self.get(url).await, Ok(Some(c)) if c.token_response.is_some())
    }

    /// rmcp's view of one server's entry.
    pub fn for_server(&self, url: &str) -> ServerCredentials {
        ServerCredentials {
            file: self.clone(),
            url: url.to_owned(),
        }
    }
}

/// One server's entry of the [`CredentialsFile`], as rmcp's
/// [`CredentialStore`]: rmcp saves the tokens here after a code exchange
/// and after every refresh.
#[derive(Clone, Debug)]
pub struct ServerCredentials {
    file: CredentialsFile,
    url: String,
}

fn store_error(e: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.file.get(&self.url).await.map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.file
            .put(&self.url, credentials)
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.file
            .remove(&self.url)
            .await
            .map(drop)
            .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn entries_are_per_server_and_the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::new(dir.path().join("home").join("credentials.json"));
        let a = file.for_server("http://a/mcp");
        a.save(StoredCredentials::new(
            "client-a".into(),
            None,
            vec![],
            None,
        ))
        .await
        .unwrap();
        file.for_server("http://b/mcp")
            .save(StoredCredentials::new(
                "client-b".into(),
                None,
                vec![],
                None,
            ))
            .await
            .unwrap();
        assert_eq!(a.load().await.unwrap().unwrap().client_id, "client-a");
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        a.clear().await.unwrap();
        assert!(a.load().await.unwrap().is_none());
        assert!(file.get("http://b/mcp").await.unwrap().is_some());
    }
}
