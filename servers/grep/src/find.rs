//! Finding files by glob over the same walk as the content search.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use crate::walk::{PathFilter, parallel_walker, relative_to};

/// What a glob found.
#[derive(Debug, Default)]
pub struct Found {
    /// Selected files, relative to the workspace root, sorted.
    pub files: Vec<PathBuf>,
    /// Files or directories that could not be read.
    pub unreadable: u64,
}

/// The files under `start` that `filter` selects. Blocking.
pub fn find_files(root: &Path, start: &Path, filter: &PathFilter) -> Found {
    let results = Mutex::new(Found::default());
    let mut builder = FinderBuilder {
        root,
        filter,
        results: &results,
    };
    parallel_walker(start).visit(&mut builder);
    let mut found = results.into_inner().unwrap_or_else(|e| e.into_inner());
    found.files.sort();
    found
}

struct FinderBuilder<'s> {
    root: &'s Path,
    filter: &'s PathFilter,
    results: &'s Mutex<Found>,
}

impl<'s> ParallelVisitorBuilder<'s> for FinderBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Finder {
            root: self.root,
            filter: self.filter,
            results: self.results,
            local: Found::default(),
        })
    }
}

/// One walker thread's finds, handed over when the walk drops it.
struct Finder<'s> {
    root: &'s Path,
    filter: &'s PathFilter,
    results: &'s Mutex<Found>,
    local: Found,
}

impl ParallelVisitor for Finder<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        match entry {
            Ok(entry) if entry.file_type().is_some_and(|t| t.is_file()) => {
                let relative = relative_to(self.root, entry.path());
                if self.filter.selects(&relative) {
                    self.local.files.push(relative);
                }
            }
            Ok(_) => {}
            Err(_) => self.local.unreadable += 1,
        }
        WalkState::Continue
    }
}

impl Drop for Finder<'_> {
    fn drop(&mut self) {
        let mut shared = self.results.lock().unwrap_or_else(|e| e.into_inner());
        shared.files.append(&mut self.local.files);
        shared.unreadable += self.local.unreadable;
    }
}
