//! Running skills in an interactive session: activation (who may run the skill, its instructions
//! with arguments filled in, inline or in a subagent), the `allowed-tools` grant that lasts as
//! long as the skill runs, and the `skill_activation` events and `skill-activation` history
//! entries that report it.
//!
//! An inline skill activated by the user becomes the next prompt (shown as `/name args`); one
//! activated by the model returns its instructions as the tool result and stays active until the
//! run ends. A forked skill runs in a subagent (its `agent`, default `general-purpose`, limited to
//! its `allowed-tools`) and only the subagent's answer comes back.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Inner, InteractiveEventKind};
use crate::framework::agents::{
    load_agent_definitions, resolve_subagent_model, run_subagent, AgentCatalog, SubagentError,
    SubagentProgress, SubagentReport, SubagentRequest, DEFAULT_AGENT_TYPE,
};
use crate::framework::commands::CommandResult;
use crate::framework::skills::{
    skill_instructions, SkillActivation, SkillActivationRequest, SkillCatalog, SkillContext,
    SkillDefinition, SkillInvocation,
};

/// Where the skills of a session came from, kept for activation.
#[derive(Debug, Clone)]
pub(crate) struct SkillSetup {
    pub(crate) catalog: SkillCatalog,
    pub(crate) cwd: std::path::PathBuf,
    pub(crate) home: Option<std::path::PathBuf>,
}

/// A skill running in the conversation: its `started` record and the label of its tool grant.
#[derive(Debug, Clone)]
pub(crate) struct ActiveSkill {
    pub(crate) activation: SkillActivation,
    pub(crate) grant: Option<String>,
    /// The model the prompt it runs in goes to (its `model`), for a prompt the user started.
    pub(crate) model: Option<String>,
}

/// The tool name of a permission rule (`Bash(git log *)` → `Bash`).
fn rule_tool(rule: &str) -> &str {
    rule.split('(').next().unwrap_or("").trim()
}

impl Inner {
    /// The skills, when a command module requested them.
    pub(crate) fn skill_catalog(&self) -> Option<&SkillCatalog> {
        self.skills.as_ref().map(|setup| &setup.catalog)
    }

    /// Activates a skill (see the module docs). `Err` when it cannot run at all (unknown,
    /// refused for this caller, unreadable); a run that fails later is a failed result.
    pub(crate) async fn activate_skill(
        self: &Arc<Self>,
        request: SkillActivationRequest,
    ) -> Result<CommandResult, String> {
        let Some(catalog) = self.skill_catalog() else {
            return Err("skills are not enabled in this session".into());
        };
        let by_model = request.invocation == SkillInvocation::ModelTool;
        let name = request.name.trim().trim_start_matches('/');
        let skill = match catalog.get(name) {
            Some(skill) if by_model && !skill.model_invocable() => {
                return Err(format!(
                    "skill `{name}` has `disable-model-invocation: true`: only the user can run \
                     it (as /{name})"
                ))
            }
            Some(skill) if !by_model && !skill.user_invocable => {
                return Err(format!(
                    "skill `{name}` has `user-invocable: false`: only the model runs it"
                ))
            }
            Some(skill) => skill.clone(),
            // The model runs custom commands through the same tool.
            None if by_model && self.custom.as_ref().is_some_and(|c| c.get(name).is_some()) => {
                return self.run_custom_command(name, &request.args, true).await;
            }
            None => {
                let names: Vec<&str> = catalog
                    .skills()
                    .filter(|s| s.invocable_by(by_model))
                    .map(|s| s.name.as_str())
                    .collect();
                return Err(format!(
                    "unknown skill `{name}`; available: {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
        };
        let body = skill
            .load_body()
            .map_err(|w| format!("skill `{name}`: {w}"))?;
        let session_id = self.session.session_id().to_string();
        let instructions = skill_instructions(&skill, &body, &request.args, &session_id);
        let mut activation = SkillActivation::started(&skill, &request.args, request.invocation);
        // A skill the user starts runs its prompt on its `model`; one the model activates
        // moves the rest of the prompt in progress to it (as Claude Code does).
        let inline = skill.context == SkillContext::Inline;
        let model = self.run_model(skill.model.as_deref(), inline, &mut activation);
        if by_model && inline {
            self.switch_running_model(model.as_deref(), &mut activation);
        }
        let label = format!("skill:{}", skill.name);
        let grant = self.grant_tools(&label, &skill.allowed_tools, &mut activation);
        self.report_activation(&activation, true);
        let active = ActiveSkill {
            activation,
            grant,
            model,
        };
        match skill.context {
            SkillContext::Fork => Ok(self.run_forked(&skill, instructions, active).await),
            SkillContext::Inline if by_model => {
                let notes = active.activation.notes.clone();
                self.keep_for_run(active);
                let mut message = instructions;
                for note in &notes {
                    message.push_str(&format!("\n\nNote: {note}"));
                }
                Ok(CommandResult::ok(message).with_data(json!({
                    "skill": skill.name,
                    "mode": "inject",
                })))
            }
            SkillContext::Inline => {
                let display = format!("/{} {}", skill.name, request.args.trim())
                    .trim_end()
                    .to_string();
                match self.enqueue_prompt(&instructions, &display, None, Some(active.clone())) {
                    Ok((status, _)) => Ok(CommandResult::ok(format!(
                        "Skill `{}` {}.",
                        skill.name,
                        if status == super::SubmitStatus::Queued {
                            "queued: it runs when the current prompt ends"
                        } else {
                            "started"
                        }
                    ))
                    .with_data(json!({
                        "skill": skill.name,
                        "mode": "inject",
                        "notes": active.activation.notes,
                    }))),
                    Err(error) => {
                        let message = error.to_string();
                        self.finish_skill(active, Some(message.clone()));
                        Err(message)
                    }
                }
            }
        }
    }

    /// The model a user-started prompt of a skill or custom command runs on: `requested` when
    /// `switch` and the provider can call it; when it cannot, a note on `activation` says the
    /// session's model is used.
    pub(crate) fn run_model(
        &self,
        requested: Option<&str>,
        switch: bool,
        activation: &mut SkillActivation,
    ) -> Option<String> {
        if !switch {
            return None;
        }
        let current = self.session.current_model();
        match resolve_subagent_model(&self.session, requested) {
            Ok(model) => (model != current).then_some(model),
            Err(error) => {
                activation.notes.push(format!(
                    "`{}` asks for a model this session cannot run ({error}); it runs on the \
                     session's model `{current}`",
                    activation.skill_name
                ));
                None
            }
        }
    }

    /// Moves the rest of the prompt in progress to `model` (from [`run_model`](Self::run_model))
    /// for a skill or custom command the model activated; a refusal is a note on `activation`.
    pub(crate) fn switch_running_model(
        &self,
        model: Option<&str>,
        activation: &mut SkillActivation,
    ) {
        if let Some(Err(error)) = model.map(|m| self.session.switch_running_model(m)) {
            activation.notes.push(error.to_string());
        }
    }

    /// Pre-approves `allowed_tools` (a skill's or a custom command's) until the activation
    /// ends; the grant's label (`what` and a unique suffix), or `None` when there is nothing to
    /// grant (a list that does not parse is a note, and nothing is granted).
    pub(crate) fn grant_tools(
        &self,
        what: &str,
        allowed_tools: &[String],
        activation: &mut SkillActivation,
    ) -> Option<String> {
        if allowed_tools.is_empty() {
            return None;
        }
        let label = format!("{what}:{}", uuid::Uuid::new_v4().simple());
        match self.session.enforcer().grant_scoped(&label, allowed_tools) {
            Ok(()) => Some(label),
            Err(errors) => {
                let problems: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                activation.notes.push(format!(
                    "`allowed-tools` was not applied: {}",
                    problems.join("; ")
                ));
                None
            }
        }
    }

    /// Runs a forked skill in a subagent and ends its activation.
    async fn run_forked(
        self: &Arc<Self>,
        skill: &SkillDefinition,
        instructions: String,
        active: ActiveSkill,
    ) -> CommandResult {
        let mut catalog = match self.agent_catalog() {
            Some(catalog) => catalog,
            None => match &self.skills {
                Some(setup) => load_agent_definitions(&setup.cwd, setup.home.as_deref()),
                None => AgentCatalog::builtin(),
            },
        };
        let agent = skill.agent.as_deref().unwrap_or(DEFAULT_AGENT_TYPE);
        // A forked skill's subagent has only the tools its `allowed-tools` names (on top of the
        // agent's own denylist).
        if let (false, Some(definition)) = (skill.allowed_tools.is_empty(), catalog.get(agent)) {
            let mut definition = definition.clone();
            let mut names: Vec<String> = Vec::new();
            for rule in &skill.allowed_tools {
                let tool = rule_tool(rule).to_string();
                if !tool.is_empty() && !names.contains(&tool) {
                    names.push(tool);
                }
            }
            definition.tools = Some(names);
            catalog.insert(definition);
        }
        let request = SubagentRequest {
            agent_type: Some(agent.to_string()),
            prompt: instructions,
            isolation: Default::default(),
            // The forked run goes to the skill's `model`; the session's model is untouched.
            model: skill.model.clone(),
            fork_worker: true,
            parent_tool_use_id: None,
        };
        let result = self.run_subagent_for(&catalog, request).await;
        match result {
            Ok(report) => {
                let failed = report.interrupted || report.error.is_some();
                let error = failed.then(|| report.message());
                self.finish_skill(active, error);
                let data = serde_json::to_value(&report).unwrap_or(Value::Null);
                if failed {
                    CommandResult::error(report.message()).with_data(data)
                } else {
                    CommandResult::ok(report.message()).with_data(data)
                }
            }
            Err(error) => {
                let message = format!("skill `{}` could not run: {error}", skill.name);
                self.finish_skill(active, Some(message.clone()));
                CommandResult::error(message)
            }
        }
    }

    /// Runs a subagent with `catalog`, registered for abort and reporting progress as
    /// `background_task_event`s.
    pub(crate) async fn run_subagent_for(
        self: &Arc<Self>,
        catalog: &AgentCatalog,
        request: SubagentRequest,
    ) -> Result<SubagentReport, SubagentError> {
        let (id, cancel) = self.begin_subagent();
        let progress = {
            let weak = Arc::downgrade(self);
            Arc::new(move |event: SubagentProgress| {
                if let Some(inner) = weak.upgrade() {
                    inner.emit_background(event.to_event_data());
                }
            })
        };
        let result = run_subagent(&self.session, catalog, request, &cancel, Some(progress)).await;
        self.end_subagent(id);
        result
    }

    /// Keeps an activation the model made until the run it is part of ends (it ends now when
    /// no run holds the session).
    pub(crate) fn keep_for_run(&self, active: ActiveSkill) {
        let mut state = self.lock();
        if state.executing {
            state.active_skills.push(active);
        } else {
            drop(state);
            self.finish_skill(active, None);
        }
    }

    /// Ends an activation: its tool grant is withdrawn and `completed` (or `failed`) reported.
    pub(crate) fn finish_skill(&self, active: ActiveSkill, error: Option<String>) {
        if let Some(label) = &active.grant {
            self.session.enforcer().revoke_scoped(label);
        }
        self.report_activation(&active.activation.ended(error), false);
    }

    /// Ends the skills active in the run that just ended (`error`: why it did not complete).
    pub(crate) fn finish_run_skills(&self, error: Option<String>) {
        let active = std::mem::take(&mut self.lock().active_skills);
        for skill in active {
            self.finish_skill(skill, error.clone());
        }
    }

    /// Emits the `skill_activation` event; a `started` record also becomes a
    /// `skill-activation` history entry.
    pub(crate) fn report_activation(&self, activation: &SkillActivation, history: bool) {
        self.hub.emit(InteractiveEventKind::SkillActivation {
            data: activation.clone(),
        });
        if history {
            let mut data = serde_json::to_value(activation).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut data {
                map.insert("message".into(), Value::String(activation.message()));
            }
            self.record_history("skill-activation", data);
        }
    }

    /// Appends a history event entry now, or — while a run holds the session — when it ends.
    pub(crate) fn record_history(&self, event_type: &str, data: Value) {
        if self
            .session
            .append_history_event(event_type, data.clone())
            .is_err()
        {
            self.lock()
                .deferred_history
                .push((event_type.to_string(), data));
        }
    }

    /// Appends the history entries deferred while the run held the session.
    pub(crate) fn flush_history(&self) {
        let deferred = std::mem::take(&mut self.lock().deferred_history);
        for (event_type, data) in deferred {
            let _ = self.session.append_history_event(&event_type, data);
        }
    }
}
