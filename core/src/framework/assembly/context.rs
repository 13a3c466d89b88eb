//! The system prompt a project folder supplies: its context (AGENTS.md/CLAUDE.md from the git root
//! down to the cwd and the user files under the settings' home, memory, tasks) loaded and built
//! into a prompt with the environment metadata, once the session states its model and mode.

use std::path::{Path, PathBuf};

use super::settings::PromptSettings;
use crate::framework::context::{
    build_instruction_sections, build_system_prompt, load_project_context, ContextOptions,
    ContextWarning, ProjectContext, ProjectInfo, PromptMetadata,
};
use crate::session::inputs::{ProjectPrompt, ProjectPromptBuilder, PromptFacts};

/// Builds the system prompt of a session in `cwd` from its project folder when asked.
pub(crate) fn project_prompt_builder(
    cwd: PathBuf,
    home: Option<PathBuf>,
    settings: PromptSettings,
) -> ProjectPromptBuilder {
    Box::new(move |facts: &PromptFacts| project_prompt(&cwd, home, settings, facts))
}

/// Loads the project context for `cwd` and builds the system prompt from it. A context that
/// cannot be loaded at all (an unusable cwd) does not stop the session: the prompt then has only
/// the environment section, and the failure is a warning in the `context_loaded` event.
fn project_prompt(
    cwd: &Path,
    home: Option<PathBuf>,
    settings: PromptSettings,
    facts: &PromptFacts,
) -> ProjectPrompt {
    let mut options = ContextOptions::new(cwd, home);
    options.load_task_context = settings.task_context_enabled;
    let mut metadata = PromptMetadata::new(cwd);
    metadata.model = Some(facts.model.clone());
    metadata.language = settings.language;
    metadata.permission_mode = Some(facts.permission_mode.as_str().to_string());
    match load_project_context(&options) {
        Ok(context) => ProjectPrompt {
            system_prompt: build_system_prompt(&context, &metadata),
            instructions: build_instruction_sections(&context),
            compact_instructions: context.compact_instructions.clone(),
            files: context.loaded_files,
            warnings: context.warnings,
        },
        Err(error) => ProjectPrompt {
            system_prompt: build_system_prompt(&empty_context(cwd), &metadata),
            instructions: None,
            compact_instructions: None,
            files: Vec::new(),
            warnings: vec![ContextWarning {
                path: cwd.to_path_buf(),
                message: error.to_string(),
            }],
        },
    }
}

/// A project context with nothing in it, for building the environment-only prompt.
fn empty_context(cwd: &Path) -> ProjectContext {
    ProjectContext {
        cwd: cwd.to_path_buf(),
        project_dir: cwd.to_path_buf(),
        git_root: None,
        git_branch: None,
        instructions: Vec::new(),
        memory: None,
        tasks: Vec::new(),
        task_context: None,
        project: ProjectInfo::default(),
        compact_instructions: None,
        loaded_files: Vec::new(),
        warnings: Vec::new(),
    }
}
