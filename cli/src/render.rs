//! What a person sees while a prompt runs, on a terminal or in a log: each tool call on a line
//! of its own with a marker (`● Read(src/main.rs)`), its end with how long it took (`  ⎿ Read
//! done in 12 ms`, `failed`, `denied`), warnings and hook failures as `!` lines, and — only when
//! stderr is a terminal — a spinner saying what is being waited for (the model, a tool).
//!
//! Everything is written through one [`Terminal`], which knows whether the answer text on stdout
//! stopped mid-line (a progress line then starts on a new one) and erases the spinner before
//! anything else is written, so the spinner never mixes with the answer or a permission question.
//! Progress goes to stderr: in `-p` text mode stdout stays the answer only. While a [`Progress`]
//! follows the prompt, a permission question waits until the events before it (the answer so
//! far, the previous call's end) are shown, so it never overtakes what it is about.

use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use robota::framework::interactive::{
    InteractiveEvent, InteractiveEventKind, ToolResultKind, ToolState,
};
use robota::session::SessionEvent;

/// The spinner's frames.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(100);
/// Erases the current line (carriage return, erase line).
const ERASE_LINE: &str = "\r\x1b[2K";
/// How long a permission question waits for its request's event to be shown, at the most (a
/// lagging display must not hold the question back for good).
const QUESTION_WAIT: Duration = Duration::from_secs(2);

/// The process's stdout and stderr as one display.
pub struct Terminal {
    state: Mutex<State>,
    /// Draw a spinner (stderr is a terminal).
    spinner: bool,
}

struct State {
    /// The answer text on stdout ends mid-line.
    mid_line: bool,
    /// A progress line was the last thing written: the engine's separator between one model
    /// turn's text and the next (`\n\n`) would only leave blank lines under it.
    after_note: bool,
    /// What is being waited for, and since when.
    activity: Option<(String, Instant)>,
    /// The spinner is on screen (its line must be erased before anything else is written).
    drawn: bool,
    frame: usize,
    /// A [`Progress`] shows the events: questions wait for their request's event.
    following: bool,
    /// Permission requests whose event was shown before their question was asked.
    shown_requests: HashSet<String>,
    /// Questions waiting for their request's event, by request id.
    waiting_questions: HashMap<String, tokio::sync::oneshot::Sender<()>>,
}

impl Terminal {
    /// A display whose spinner is shown when stderr is a terminal.
    pub fn new() -> Arc<Terminal> {
        Self::with_spinner(std::io::stderr().is_terminal())
    }

    /// A display with the spinner on or off.
    pub fn with_spinner(spinner: bool) -> Arc<Terminal> {
        let terminal = Arc::new(Terminal {
            state: Mutex::new(State {
                mid_line: false,
                after_note: false,
                activity: None,
                drawn: false,
                frame: 0,
                following: false,
                shown_requests: HashSet::new(),
                waiting_questions: HashMap::new(),
            }),
            spinner,
        });
        if spinner {
            let weak = Arc::downgrade(&terminal);
            tokio::spawn(async move {
                let mut interval = tokio::time::interval(TICK);
                loop {
                    interval.tick().await;
                    let Some(terminal) = weak.upgrade() else {
                        return;
                    };
                    terminal.tick();
                }
            });
        }
        terminal
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Erases the spinner if it is drawn.
    fn erase(state: &mut State) {
        if state.drawn {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "{ERASE_LINE}");
            let _ = stderr.flush();
            state.drawn = false;
        }
    }

    /// Ends the answer's line on stdout if it stopped mid-line.
    fn end_answer_line(state: &mut State) {
        if state.mid_line {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout);
            let _ = stdout.flush();
            state.mid_line = false;
        }
    }

    /// Answer text, on stdout, as it streams.
    pub fn answer(&self, text: &str) {
        let mut state = self.lock();
        let text = if state.after_note {
            text.trim_start_matches(['\n', '\r'])
        } else {
            text
        };
        if text.is_empty() {
            return;
        }
        state.after_note = false;
        Self::erase(&mut state);
        let mut stdout = std::io::stdout().lock();
        let _ = write!(stdout, "{text}");
        let _ = stdout.flush();
        state.mid_line = !text.ends_with('\n');
    }

    /// Ends the answer with a newline when it stopped mid-line.
    pub fn finish_answer(&self) {
        let mut state = self.lock();
        Self::erase(&mut state);
        Self::end_answer_line(&mut state);
    }

    /// One line of progress on stderr, on a line of its own.
    pub fn note(&self, line: &str) {
        let mut state = self.lock();
        Self::erase(&mut state);
        Self::end_answer_line(&mut state);
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{line}");
        let _ = stderr.flush();
        drop(stderr);
        state.after_note = true;
        self.draw(&mut state);
    }

    /// A question on stderr (the permission prompt): the spinner stops until the next activity.
    pub fn ask(&self, question: &str) {
        let mut state = self.lock();
        Self::erase(&mut state);
        Self::end_answer_line(&mut state);
        state.activity = None;
        state.after_note = true;
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
    }

    /// Waits (at most [`QUESTION_WAIT`]) until the event of permission request `request_id` has
    /// been shown, with everything before it; at once when no [`Progress`] follows the events.
    pub async fn request_shown(&self, request_id: &str) {
        let receiver = {
            let mut state = self.lock();
            if !state.following || state.shown_requests.remove(request_id) {
                return;
            }
            let (sender, receiver) = tokio::sync::oneshot::channel();
            state
                .waiting_questions
                .insert(request_id.to_string(), sender);
            receiver
        };
        let _ = tokio::time::timeout(QUESTION_WAIT, receiver).await;
        self.lock().waiting_questions.remove(request_id);
    }

    /// Records that the event of permission request `request_id` has been shown.
    fn show_request(&self, request_id: &str) {
        let mut state = self.lock();
        match state.waiting_questions.remove(request_id) {
            Some(question) => {
                let _ = question.send(());
            }
            None => {
                state.shown_requests.insert(request_id.to_string());
            }
        }
    }

    /// Starts or stops ordering questions after the events (see [`Terminal::request_shown`]);
    /// stopping lets every waiting question go.
    fn set_following(&self, following: bool) {
        let mut state = self.lock();
        state.following = following;
        if !following {
            state.shown_requests.clear();
            for (_, question) in state.waiting_questions.drain() {
                let _ = question.send(());
            }
        }
    }

    /// Says what is being waited for (`None`: nothing); the spinner shows it.
    pub fn set_activity(&self, label: Option<&str>) {
        let mut state = self.lock();
        let same = match (&state.activity, label) {
            (Some((current, _)), Some(label)) => current == label,
            (None, None) => true,
            _ => false,
        };
        if same {
            return;
        }
        state.activity = label.map(|l| (l.to_string(), Instant::now()));
        Self::erase(&mut state);
        self.draw(&mut state);
    }

    /// Moves the spinner one frame.
    fn tick(&self) {
        let mut state = self.lock();
        state.frame = (state.frame + 1) % FRAMES.len();
        self.draw(&mut state);
    }

    /// Draws the spinner when there is something to wait for and the cursor is at the start of a
    /// line (never over the answer's unfinished line).
    fn draw(&self, state: &mut State) {
        if !self.spinner || state.mid_line {
            return;
        }
        let Some((label, since)) = &state.activity else {
            return;
        };
        let seconds = since.elapsed().as_secs();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "{ERASE_LINE}{} {label}… ({seconds}s)",
            FRAMES[state.frame]
        );
        let _ = stderr.flush();
        state.drawn = true;
    }
}

/// Follows one prompt's events and shows its progress.
pub struct Progress {
    terminal: Arc<Terminal>,
    /// Stream the answer to stdout (the REPL); in `-p` mode it is printed once at the end.
    stream_answer: bool,
    /// When each running tool call started, by id.
    started: HashMap<String, Instant>,
}

impl Progress {
    /// Progress on `terminal`; `stream_answer` prints the answer text as it comes. Create it
    /// before submitting the prompt, so that its first permission question already waits for
    /// the events before it.
    pub fn new(terminal: Arc<Terminal>, stream_answer: bool) -> Self {
        terminal.set_following(true);
        terminal.set_activity(Some("waiting for the model"));
        Progress {
            terminal,
            stream_answer,
            started: HashMap::new(),
        }
    }

    /// Shows one event.
    pub fn on_event(&mut self, event: &InteractiveEvent) {
        match &event.kind {
            InteractiveEventKind::TextDelta { text } => {
                if self.stream_answer {
                    self.terminal.answer(text);
                }
                // The separator between two model turns' text is not writing yet.
                if !text.trim().is_empty() {
                    self.terminal.set_activity(Some("writing"));
                }
            }
            InteractiveEventKind::Thinking { .. } => self.terminal.set_activity(Some("thinking")),
            InteractiveEventKind::ServerToolUse { name, input, .. } => {
                // A tool the provider runs (web search, …): shown like a tool call, with its
                // query or URL; its result is in the answer that follows.
                let arg = robota::framework::interactive::first_arg(input);
                let arg = arg.lines().next().unwrap_or("").trim();
                let label = if name == "web_search" {
                    format!("Searching: {}", shorten(arg, 80))
                } else if arg.is_empty() {
                    name.clone()
                } else {
                    format!("{name}({})", shorten(arg, 80))
                };
                self.terminal.note(&format!("● {label}"));
                self.terminal.set_activity(Some(&format!("running {name}")));
            }
            InteractiveEventKind::ToolStart { tool } => {
                self.started
                    .insert(tool.tool_use_id.clone(), Instant::now());
                self.terminal.note(&format!("● {}", call_label(tool)));
                self.terminal
                    .set_activity(Some(&format!("running {}", tool.name)));
            }
            InteractiveEventKind::ToolEnd { tool } => {
                let took = self
                    .started
                    .remove(&tool.tool_use_id)
                    .map(|start| start.elapsed());
                if took.is_none() {
                    // Refused before it started (a deny rule, a hook): name the call here.
                    self.terminal.note(&format!("● {}", call_label(tool)));
                }
                self.terminal.note(&end_line(tool, took));
                match self.started.len() {
                    0 => self.terminal.set_activity(Some("waiting for the model")),
                    _ => self.terminal.set_activity(Some("running tools")),
                }
            }
            InteractiveEventKind::PermissionRequest { request_id, .. } => {
                self.terminal.set_activity(None);
                self.terminal.show_request(request_id);
            }
            InteractiveEventKind::Compaction {
                tokens_before,
                tokens_after,
                ..
            } => self.terminal.note(&format!(
                "● compacted the conversation ({tokens_before} → {tokens_after} tokens)"
            )),
            InteractiveEventKind::Session { event } => {
                if let Some(line) = session_line(event) {
                    self.terminal.note(&line);
                }
            }
            InteractiveEventKind::Complete { .. }
            | InteractiveEventKind::Error { .. }
            | InteractiveEventKind::Interrupted { .. } => {
                self.terminal.set_activity(None);
                if self.stream_answer {
                    self.terminal.finish_answer();
                }
            }
            _ => {}
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.terminal.set_following(false);
        self.terminal.set_activity(None);
    }
}

/// `Bash(ls -la)`, or the bare name when the call has no telling argument.
pub fn call_label(tool: &ToolState) -> String {
    let arg = tool.first_arg.lines().next().unwrap_or("").trim();
    if arg.is_empty() {
        tool.name.clone()
    } else {
        format!("{}({})", tool.name, shorten(arg, 80))
    }
}

/// `  ⎿ Read done in 12 ms`, `  ⎿ Bash failed in 1.2 s: …`, `  ⎿ Write denied: …`.
fn end_line(tool: &ToolState, took: Option<Duration>) -> String {
    let detail = tool
        .tool_result_data
        .as_deref()
        .and_then(|text| text.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|line| shorten(line, 160));
    let took = took
        .map(|d| format!(" in {}", duration(d)))
        .unwrap_or_default();
    match tool.result {
        Some(ToolResultKind::Denied) => match detail {
            Some(detail) => format!("  ⎿ {} denied: {detail}", tool.name),
            None => format!("  ⎿ {} denied", tool.name),
        },
        Some(ToolResultKind::Error) => match detail {
            Some(detail) => format!("  ⎿ {} failed{took}: {detail}", tool.name),
            None => format!("  ⎿ {} failed{took}", tool.name),
        },
        _ => format!("  ⎿ {} done{took}", tool.name),
    }
}

/// The line for the session events a person should see; `None` for the rest (permission answers
/// are shown by the tool's end line, never as JSON).
fn session_line(event: &SessionEvent) -> Option<String> {
    if let Some(line) = event.developer_warning() {
        return Some(format!("! {}", line.trim_start_matches("robota: ")));
    }
    match event {
        SessionEvent::Warning { source, message } => Some(format!("! {source}: {message}")),
        SessionEvent::PersistenceError { operation, message } => Some(format!(
            "! could not save the session ({operation}): {message}"
        )),
        SessionEvent::HookSystemMessage { message, .. } => Some(format!("  {message}")),
        SessionEvent::PromptRejected { reason, .. } => {
            Some(format!("! a hook rejected the prompt: {reason}"))
        }
        SessionEvent::SettingsWriteFailed { file, message } => Some(format!(
            "! could not save the rule to {}: {message}",
            file.display()
        )),
        _ => None,
    }
}

/// The line for what the session reports apart from a prompt's progress, so it is shown from
/// the session's own events (`on_event`): a settings warning (once, as the session opens) and an
/// MCP server's status change (its servers connect in the background, so `connected`, `failed`
/// or `needs_auth` arrives whenever the server gets there; `pending` is not worth a line).
pub fn session_notice_line(event: &SessionEvent) -> Option<String> {
    use robota::mcp::McpServerStatus;
    match event {
        SessionEvent::SettingsWarning { warning } => Some(format!("! settings: {warning}")),
        SessionEvent::McpServerStatus { server, status } => match status {
            McpServerStatus::Connected => Some(format!("  mcp: server `{server}` connected")),
            McpServerStatus::Failed { reason } => {
                Some(format!("! mcp: server `{server}` failed: {reason}"))
            }
            McpServerStatus::NeedsAuth { reason } => Some(format!(
                "! mcp: server `{server}` needs authorization: {reason}"
            )),
            McpServerStatus::Pending | McpServerStatus::Disabled { .. } => None,
        },
        _ => None,
    }
}

/// `12 ms`, `1.2 s`, `2 min 5 s`.
fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1_000)
    }
}

/// `text` cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(result: Option<ToolResultKind>, data: Option<&str>) -> ToolState {
        ToolState {
            tool_use_id: "t1".into(),
            name: "Bash".into(),
            first_arg: "ls -la".into(),
            is_running: result.is_none(),
            result,
            diff_file: None,
            diff_lines: Vec::new(),
            tool_result_data: data.map(str::to_string),
        }
    }

    #[test]
    fn tool_lines_name_the_call_its_end_and_its_duration() {
        assert_eq!(call_label(&tool(None, None)), "Bash(ls -la)");
        assert_eq!(
            end_line(
                &tool(Some(ToolResultKind::Success), Some("a\nb")),
                Some(Duration::from_millis(12))
            ),
            "  ⎿ Bash done in 12 ms"
        );
        assert_eq!(
            end_line(
                &tool(
                    Some(ToolResultKind::Error),
                    Some("\nexit 2: no such file\n")
                ),
                Some(Duration::from_millis(1_250))
            ),
            "  ⎿ Bash failed in 1.2 s: exit 2: no such file"
        );
        assert_eq!(
            end_line(
                &tool(Some(ToolResultKind::Denied), Some("The user denied it.")),
                None
            ),
            "  ⎿ Bash denied: The user denied it."
        );
    }
}
