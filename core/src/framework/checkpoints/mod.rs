//! Edit checkpoints (spec 000 "Edit Checkpointing"): every prompt of an interactive session is a
//! turn checkpoint, and before a tool first changes a file in a turn ([`Tool::mutated_paths`]:
//! Write, Edit, MultiEdit, NotebookEdit and host tools that declare their files) the file's
//! content is saved — or, for a file that did not exist, that fact. Restoring a checkpoint undoes
//! the turns after it, newest first: saved contents are written back and files those turns
//! created are deleted. Changes made by Bash (or any tool that does not declare its files) are
//! not tracked.
//!
//! Storage: `<cwd>/.robota/checkpoints/<session-id>/turn-NNNN/manifest.json` plus the saved
//! contents under `files/`, every file written atomically, so a crash leaves either the old or
//! the new manifest. A turn is written when it saves its first file: a prompt that changes no
//! file is listed while it runs and leaves nothing on disk (so sessions that only chat do not
//! fill the project with empty checkpoints). Checkpoints are read back from disk, so a resumed session keeps them. The
//! saved contents of one session are capped ([`DEFAULT_MAX_CHECKPOINT_BYTES`]); when a finished
//! turn takes the total over the cap, the oldest turns are deleted first and reported.
//!
//! [`Tool::mutated_paths`]: crate::tools::Tool::mutated_paths

pub mod command;

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::files::{human_size, read_regular, FileKind};
use crate::tools::builtins::fsutil::atomic_write;
use crate::tools::FileMutationRecorder;

pub use command::{rewind_command_module, RewindCommand, REWIND_COMMAND};

/// The manifest format this version writes and reads.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 1;
/// The saved contents one session may keep (256 MiB) before the oldest turns are pruned.
pub const DEFAULT_MAX_CHECKPOINT_BYTES: u64 = 256 * 1024 * 1024;
/// A file larger than this (32 MiB) is not saved, and the tool call that would change it is
/// refused: a change that cannot be rewound is not made silently.
pub const CHECKPOINT_FILE: FileKind = FileKind::new("file to checkpoint", 32 * 1024 * 1024);
/// A checkpoint manifest (4 MiB).
const MANIFEST_FILE: FileKind = FileKind::new("checkpoint manifest", 4 * 1024 * 1024);
/// The longest prompt text a manifest keeps, in characters.
const PROMPT_CHARS: usize = 200;
/// Where checkpoints live under the project directory.
pub const CHECKPOINTS_DIR: &str = ".robota/checkpoints";

/// Why a checkpoint could not be listed, inspected or restored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// No checkpoint has this id in this session.
    #[error("no edit checkpoint `{id}` in this session; `rewind list` shows the checkpoints")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// A prompt is running; its edits are still being recorded.
    #[error("edit checkpoints cannot be restored while a prompt runs; wait or abort first")]
    Busy,
    /// The session keeps no edit checkpoints.
    #[error("this session keeps no edit checkpoints")]
    Disabled,
    /// Reading or writing the checkpoint files failed.
    #[error("edit checkpoint storage {}: {message}", path.display())]
    Storage {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

fn storage(path: &Path, error: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Storage {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

/// One file a turn saved before changing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFile {
    /// The absolute path.
    pub path: PathBuf,
    /// The path relative to the project directory, for display.
    pub display_path: String,
    /// Whether the file existed when the turn first changed it (a file that did not is deleted
    /// on restore).
    pub existed: bool,
    /// The saved content, relative to the turn's folder (`files/0001`); `None` for a file that
    /// did not exist or was a symbolic link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_file: Option<String>,
    /// For a symbolic link: where it pointed (restored as a link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target: Option<PathBuf>,
    /// Bytes saved.
    #[serde(default)]
    pub bytes: u64,
    /// The tool that changed it first.
    pub tool: String,
}

/// A turn checkpoint as stored in `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointManifest {
    /// [`CHECKPOINT_FORMAT_VERSION`].
    pub version: u32,
    /// `turn-NNNN`.
    pub id: String,
    /// The session the turn belongs to.
    pub session_id: String,
    /// Order within the session, from 1.
    pub sequence: u64,
    /// The prompt that started the turn (its start).
    pub prompt: String,
    /// RFC 3339 time the turn started.
    pub created_at: String,
    /// True once the turn's prompt ended.
    #[serde(default)]
    pub finished: bool,
    /// The files saved, in the order they were first changed.
    #[serde(default)]
    pub files: Vec<CheckpointFile>,
}

impl CheckpointManifest {
    fn summary(&self) -> CheckpointSummary {
        CheckpointSummary {
            id: self.id.clone(),
            sequence: self.sequence,
            prompt: self.prompt.clone(),
            created_at: self.created_at.clone(),
            finished: self.finished,
            file_count: self.files.len(),
            bytes: self.files.iter().map(|f| f.bytes).sum(),
        }
    }
}

/// One checkpoint in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    /// The id to inspect or restore (`turn-0003`).
    pub id: String,
    /// Order within the session, from 1.
    pub sequence: u64,
    /// The prompt that started the turn (its start).
    pub prompt: String,
    /// RFC 3339 time the turn started.
    pub created_at: String,
    /// False while the turn's prompt runs.
    pub finished: bool,
    /// Files the turn changed (through tools that declare their files).
    pub file_count: usize,
    /// Bytes of saved content.
    pub bytes: u64,
}

/// One file of an inspected checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFileInfo {
    /// The path relative to the project directory.
    pub display_path: String,
    /// The absolute path.
    pub path: PathBuf,
    /// Whether it existed before the turn changed it.
    pub existed: bool,
    /// Whether the saved content is on disk (a pre-existing file whose snapshot is missing
    /// cannot be rolled back).
    pub snapshot_exists: bool,
    /// What rolling this turn back does: `restore_preimage` or `delete_created_file`.
    pub action: String,
}

/// A checkpoint with its files and what restoring or rolling back would undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInspection {
    /// The checkpoint.
    pub checkpoint: CheckpointSummary,
    /// The files it saved.
    pub files: Vec<CheckpointFileInfo>,
    /// The checkpoints `restore` undoes (those after this one), newest first.
    pub restore_range: Vec<String>,
    /// The checkpoints `rollback` undoes (this one and those after it), newest first.
    pub rollback_range: Vec<String>,
}

/// What a restore or rollback did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RestoreReport {
    /// The checkpoint restored to (or rolled back through).
    pub checkpoint_id: String,
    /// The turns undone, newest first; their checkpoints are deleted.
    pub rolled_back: Vec<String>,
    /// Files written back to their saved content (display paths).
    pub restored: Vec<String>,
    /// Files deleted because the undone turns created them.
    pub deleted: Vec<String>,
    /// Files that could not be put back, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Turns deleted to keep the saved contents under the cap.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PruneReport {
    /// The deleted checkpoints, oldest first.
    pub pruned: Vec<String>,
    /// Bytes freed.
    pub freed_bytes: u64,
    /// The cap.
    pub max_bytes: u64,
}

#[derive(Debug)]
struct OpenTurn {
    dir: PathBuf,
    manifest: CheckpointManifest,
    captured: BTreeSet<PathBuf>,
    /// False until the turn saved its first file: a prompt that changes no file leaves
    /// nothing on disk.
    written: bool,
}

/// The edit checkpoints of one session.
#[derive(Debug)]
pub struct EditCheckpointStore {
    project_dir: PathBuf,
    root: PathBuf,
    session_id: String,
    max_bytes: u64,
    open: Mutex<Option<OpenTurn>>,
}

impl EditCheckpointStore {
    /// The checkpoints of `session_id` in the project at `project_dir` (nothing is written
    /// until a turn begins).
    pub fn new(project_dir: &Path, session_id: &str) -> Self {
        let project_dir = normalize(project_dir);
        EditCheckpointStore {
            root: project_dir.join(CHECKPOINTS_DIR).join(session_id),
            project_dir,
            session_id: session_id.to_string(),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
            open: Mutex::new(None),
        }
    }

    /// Sets the cap on saved contents (oldest turns are pruned past it).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The folder of this session's checkpoints.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<OpenTurn>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True while a turn is open (a prompt runs).
    pub fn is_turn_open(&self) -> bool {
        self.lock().is_some()
    }

    /// Starts the checkpoint of a prompt turn and returns its id. A turn still open is finished
    /// first.
    pub fn begin_turn(&self, prompt: &str) -> Result<String, CheckpointError> {
        let mut open = self.lock();
        if let Some(turn) = open.take() {
            self.finish(turn)?;
        }
        let sequence = self.stored_manifests()?.last().map_or(0, |m| m.sequence) + 1;
        let id = format!("turn-{sequence:04}");
        let dir = self.root.join(&id);
        let manifest = CheckpointManifest {
            version: CHECKPOINT_FORMAT_VERSION,
            id: id.clone(),
            session_id: self.session_id.clone(),
            sequence,
            prompt: prompt.chars().take(PROMPT_CHARS).collect(),
            created_at: crate::framework::skills::activation::now_rfc3339(),
            finished: false,
            files: Vec::new(),
        };
        *open = Some(OpenTurn {
            dir,
            manifest,
            captured: BTreeSet::new(),
            written: false,
        });
        Ok(id)
    }

    /// Ends the open turn (if any) and prunes the oldest turns past the cap.
    pub fn finish_turn(&self) -> Result<PruneReport, CheckpointError> {
        let turn = self.lock().take();
        if let Some(turn) = turn {
            self.finish(turn)?;
        }
        self.prune()
    }

    fn finish(&self, mut turn: OpenTurn) -> Result<(), CheckpointError> {
        if !turn.written {
            return Ok(());
        }
        turn.manifest.finished = true;
        write_manifest(&turn.dir, &turn.manifest)
    }

    /// Saves `path` in the open turn before its first change in that turn. Without an open
    /// turn, or for a path outside the project or inside the checkpoint folder, nothing is
    /// saved. Fails (and the change must not be made) when the file cannot be saved.
    pub fn capture(&self, tool: &str, path: &Path) -> Result<(), CheckpointError> {
        let mut open = self.lock();
        let Some(turn) = open.as_mut() else {
            return Ok(());
        };
        let path = normalize(path);
        let Ok(relative) = path.strip_prefix(&self.project_dir) else {
            return Ok(());
        };
        if path.starts_with(self.project_dir.join(CHECKPOINTS_DIR))
            || relative.as_os_str().is_empty()
        {
            return Ok(());
        }
        if turn.captured.contains(&path) {
            return Ok(());
        }
        if !turn.written {
            let files = turn.dir.join("files");
            fs::create_dir_all(&files).map_err(|e| storage(&files, e))?;
            turn.written = true;
        }
        let mut file = CheckpointFile {
            path: path.clone(),
            display_path: relative.to_string_lossy().into_owned(),
            existed: true,
            snapshot_file: None,
            link_target: None,
            bytes: 0,
            tool: tool.to_string(),
        };
        match fs::symlink_metadata(&path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => file.existed = false,
            Err(error) => return Err(storage(&path, error)),
            Ok(meta) if meta.file_type().is_symlink() => {
                file.link_target = Some(fs::read_link(&path).map_err(|e| storage(&path, e))?);
            }
            // The tool will refuse a directory; there is nothing to save.
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => {
                let bytes = read_regular(&path, &CHECKPOINT_FILE).map_err(|e| {
                    storage(
                        &path,
                        format!("{e}; the file was not saved for rewind, so it was not changed"),
                    )
                })?;
                let name = format!("files/{:04}", turn.manifest.files.len() + 1);
                let target = turn.dir.join(&name);
                atomic_write(&target, &bytes).map_err(|e| storage(&target, e))?;
                file.bytes = bytes.len() as u64;
                file.snapshot_file = Some(name);
            }
        }
        turn.manifest.files.push(file);
        write_manifest(&turn.dir, &turn.manifest)?;
        turn.captured.insert(path);
        Ok(())
    }

    /// Every checkpoint of the session, oldest first (unreadable manifests are skipped).
    pub fn list(&self) -> Result<Vec<CheckpointSummary>, CheckpointError> {
        Ok(self.manifests()?.iter().map(|m| m.summary()).collect())
    }

    /// One checkpoint with its files and the restore and rollback ranges.
    pub fn inspect(&self, id: &str) -> Result<CheckpointInspection, CheckpointError> {
        let manifests = self.manifests()?;
        let Some(index) = manifests.iter().position(|m| m.id == id.trim()) else {
            return Err(CheckpointError::NotFound { id: id.into() });
        };
        let manifest = &manifests[index];
        let dir = self.root.join(&manifest.id);
        let files = manifest
            .files
            .iter()
            .map(|f| CheckpointFileInfo {
                display_path: f.display_path.clone(),
                path: f.path.clone(),
                existed: f.existed,
                snapshot_exists: match &f.snapshot_file {
                    Some(name) => dir.join(name).is_file(),
                    None => f.existed,
                },
                action: if f.existed {
                    "restore_preimage"
                } else {
                    "delete_created_file"
                }
                .into(),
            })
            .collect();
        let later: Vec<String> = manifests[index + 1..]
            .iter()
            .rev()
            .map(|m| m.id.clone())
            .collect();
        let mut rollback = later.clone();
        rollback.push(manifest.id.clone());
        Ok(CheckpointInspection {
            checkpoint: manifest.summary(),
            files,
            restore_range: later,
            rollback_range: rollback,
        })
    }

    /// Restores the files to how they were when checkpoint `id`'s turn ended: the turns after
    /// it are undone newest first and their checkpoints deleted. Refused while a turn is open.
    pub fn restore(&self, id: &str) -> Result<RestoreReport, CheckpointError> {
        self.undo(id, false)
    }

    /// Like [`restore`](Self::restore), and also undoes checkpoint `id`'s own turn: the files
    /// are as they were before that prompt.
    pub fn rollback(&self, id: &str) -> Result<RestoreReport, CheckpointError> {
        self.undo(id, true)
    }

    fn undo(&self, id: &str, including: bool) -> Result<RestoreReport, CheckpointError> {
        if self.is_turn_open() {
            return Err(CheckpointError::Busy);
        }
        let manifests = self.manifests()?;
        let Some(index) = manifests.iter().position(|m| m.id == id.trim()) else {
            return Err(CheckpointError::NotFound { id: id.into() });
        };
        let start = if including { index } else { index + 1 };
        let mut report = RestoreReport {
            checkpoint_id: manifests[index].id.clone(),
            ..RestoreReport::default()
        };
        for manifest in manifests[start..].iter().rev() {
            let dir = self.root.join(&manifest.id);
            // Within a turn too, the last change is undone first.
            for file in manifest.files.iter().rev() {
                match put_back(&self.project_dir, &dir, file) {
                    Ok(Action::Restored) => push_once(&mut report.restored, &file.display_path),
                    Ok(Action::Deleted) => push_once(&mut report.deleted, &file.display_path),
                    Ok(Action::Nothing) => {}
                    Err(problem) => report
                        .problems
                        .push(format!("{}: {problem}", file.display_path)),
                }
            }
            fs::remove_dir_all(&dir).map_err(|e| storage(&dir, e))?;
            report.rolled_back.push(manifest.id.clone());
        }
        // A file restored by an older turn and deleted by a newer one ends restored.
        report.deleted.retain(|d| !report.restored.contains(d));
        Ok(report)
    }

    /// The stored checkpoints, plus the open turn while it has saved nothing yet.
    fn manifests(&self) -> Result<Vec<CheckpointManifest>, CheckpointError> {
        let mut manifests = self.stored_manifests()?;
        if let Some(turn) = self.lock().as_ref() {
            if !turn.written {
                manifests.push(turn.manifest.clone());
            }
        }
        Ok(manifests)
    }

    fn stored_manifests(&self) -> Result<Vec<CheckpointManifest>, CheckpointError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(storage(&self.root, error)),
        };
        let mut manifests = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with("turn-") {
                continue;
            }
            let path = entry.path().join("manifest.json");
            let Ok(text) = read_regular(&path, &MANIFEST_FILE) else {
                continue;
            };
            match serde_json::from_slice::<CheckpointManifest>(&text) {
                Ok(manifest) if manifest.id == name => manifests.push(manifest),
                _ => continue,
            }
        }
        manifests.sort_by_key(|m| m.sequence);
        Ok(manifests)
    }

    /// Deletes the oldest finished turns while the saved contents exceed the cap (the newest
    /// turn is always kept).
    pub fn prune(&self) -> Result<PruneReport, CheckpointError> {
        let manifests = self.stored_manifests()?;
        let mut total: u64 = manifests.iter().map(|m| m.summary().bytes).sum();
        let mut report = PruneReport {
            max_bytes: self.max_bytes,
            ..PruneReport::default()
        };
        let keep_from = manifests.len().saturating_sub(1);
        for manifest in &manifests[..keep_from] {
            if total <= self.max_bytes {
                break;
            }
            let dir = self.root.join(&manifest.id);
            fs::remove_dir_all(&dir).map_err(|e| storage(&dir, e))?;
            let bytes = manifest.summary().bytes;
            total -= bytes;
            report.freed_bytes += bytes;
            report.pruned.push(manifest.id.clone());
        }
        Ok(report)
    }
}

impl FileMutationRecorder for EditCheckpointStore {
    fn before_mutation(&self, tool: &str, path: &Path) -> Result<(), String> {
        self.capture(tool, path).map_err(|e| e.to_string())
    }
}

/// A [`PruneReport`] in words, for history entries and messages.
pub fn prune_message(report: &PruneReport) -> String {
    format!(
        "Edit checkpoints over the {} cap: deleted the oldest {} ({}), freeing {}.",
        human_size(report.max_bytes),
        if report.pruned.len() == 1 {
            "checkpoint".to_string()
        } else {
            format!("{} checkpoints", report.pruned.len())
        },
        report.pruned.join(", "),
        human_size(report.freed_bytes)
    )
}

enum Action {
    Restored,
    Deleted,
    Nothing,
}

fn push_once(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|i| i == item) {
        list.push(item.to_string());
    }
}

/// Puts one file back as the turn found it.
fn put_back(project: &Path, dir: &Path, file: &CheckpointFile) -> Result<Action, String> {
    // A folder on the way may have become a symbolic link since (Bash is not tracked): never
    // write or delete through one to outside the project.
    if !normalize(&file.path).starts_with(project) {
        return Err(
            "its folder now leads outside the project (a symbolic link?); left as it is".into(),
        );
    }
    let current = fs::symlink_metadata(&file.path);
    if current.as_ref().is_ok_and(|m| m.is_dir()) {
        return Err("it is a directory now; left as it is".into());
    }
    if !file.existed {
        return match current {
            Ok(_) => fs::remove_file(&file.path)
                .map(|()| Action::Deleted)
                .map_err(|e| format!("cannot delete it: {e}")),
            Err(_) => Ok(Action::Nothing),
        };
    }
    if let Some(target) = &file.link_target {
        if current.is_ok() {
            fs::remove_file(&file.path).map_err(|e| format!("cannot replace it: {e}"))?;
        }
        return make_link(target, &file.path)
            .map(|()| Action::Restored)
            .map_err(|e| format!("cannot recreate the symbolic link: {e}"));
    }
    let Some(name) = &file.snapshot_file else {
        return Err("its saved content is missing from the checkpoint".into());
    };
    let bytes = read_regular(&dir.join(name), &CHECKPOINT_FILE)
        .map_err(|e| format!("its saved content cannot be read: {e}"))?;
    if current.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
        // The saved content belongs at this path, not wherever a new link points.
        fs::remove_file(&file.path).map_err(|e| format!("cannot replace it: {e}"))?;
    }
    atomic_write(&file.path, &bytes)
        .map(|_| Action::Restored)
        .map_err(|e| format!("cannot write it: {e}"))
}

#[cfg(unix)]
fn make_link(target: &Path, path: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, path)
}

#[cfg(not(unix))]
fn make_link(_target: &Path, _path: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "symbolic links are restored on Unix only",
    ))
}

fn write_manifest(dir: &Path, manifest: &CheckpointManifest) -> Result<(), CheckpointError> {
    let path = dir.join("manifest.json");
    let text = serde_json::to_vec_pretty(manifest).map_err(|e| storage(&path, e))?;
    atomic_write(&path, &text)
        .map(|_| ())
        .map_err(|e| storage(&path, e))
}

/// `path` with `.` and `..` resolved lexically, the project folder resolved through symbolic
/// links when it exists (so `/tmp/x` and `/private/tmp/x` compare equal).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    // Resolve the longest existing ancestor, keep the rest as written.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.as_os_str().is_empty() {
        if let Ok(meta) = fs::symlink_metadata(&existing) {
            // The last component itself may be a link the tool writes through; keep it.
            if rest.is_empty() && meta.file_type().is_symlink() {
                if let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) {
                    let parent = fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
                    return parent.join(name);
                }
            }
            if let Ok(canonical) = fs::canonicalize(&existing) {
                let mut result = canonical;
                for part in rest.iter().rev() {
                    result.push(part);
                }
                return result;
            }
            break;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    out
}
