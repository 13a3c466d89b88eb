//! Permission rules: the `Tool` / `Tool(specifier)` grammar parsed once into a typed
//! [`PermissionRule`], where each rule came from ([`RuleSource`], list, index), and the
//! [`RuleSet`] a session evaluates against — including which tools a bare deny hides from the model.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::domain::DomainPattern;
use super::glob::wildcard_match;
use super::path::PathPattern;
use super::tools::{self, Family};

/// Which list of `permissions` a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleList {
    /// `permissions.allow`: run without asking.
    Allow,
    /// `permissions.ask`: always ask, even when an allow rule or the mode would approve.
    Ask,
    /// `permissions.deny`: never run. Wins over everything.
    Deny,
}

impl RuleList {
    /// The settings key (`allow`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleList::Allow => "allow",
            RuleList::Ask => "ask",
            RuleList::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where rules came from, so a decision can say "why" and `/…` path rules know their anchor.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RuleSource {
    /// A short name for the layer: `userSettings`, `projectSettings`, `localSettings`, `cliArg`,
    /// `session`, `sdk`, … (free-form; shown to users).
    pub label: String,
    /// The settings file, when the rules were read from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The directory `/path` rules are anchored at: for `<project>/.claude/settings.json` this is
    /// `<project>`. When absent, `/path` rules anchor at the cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<PathBuf>,
}

impl RuleSource {
    /// A source with only a label (rules given in code, on the command line, for the session…).
    pub fn new(label: impl Into<String>) -> RuleSource {
        RuleSource {
            label: label.into(),
            file: None,
            base_dir: None,
        }
    }

    /// Rules read from `file`, whose `/path` rules anchor at `base_dir`.
    pub fn settings_file(
        label: impl Into<String>,
        file: impl Into<PathBuf>,
        base_dir: impl Into<PathBuf>,
    ) -> RuleSource {
        RuleSource {
            label: label.into(),
            file: Some(file.into()),
            base_dir: Some(base_dir.into()),
        }
    }

    /// Sets the file.
    pub fn with_file(mut self, file: impl Into<PathBuf>) -> RuleSource {
        self.file = Some(file.into());
        self
    }

    /// Sets the anchor directory of `/path` rules.
    pub fn with_base_dir(mut self, dir: impl Into<PathBuf>) -> RuleSource {
        self.base_dir = Some(dir.into());
        self
    }
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{} ({})", self.label, file.display()),
            None => f.write_str(&self.label),
        }
    }
}

/// A rule string that does not parse. Names the rule, its list and position, and the problem;
/// the caller adds the settings file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule `{rule}` in permissions.{list}[{index}]: {problem}")]
#[non_exhaustive]
pub struct RuleParseError {
    /// The rule text as written.
    pub rule: String,
    /// The list it was in.
    pub list: RuleList,
    /// Its index in that list.
    pub index: usize,
    /// What is wrong and how to fix it.
    pub problem: String,
}

/// A Bash command pattern: `*` matches anything (spaces included); a trailing ` *` (or `:*`) also
/// matches the bare command, so `ls *` covers `ls` and `ls -la` but not `lsof`.
#[derive(Debug, Clone)]
pub(crate) struct CommandPattern {
    /// The pattern with runs of whitespace collapsed and a trailing ` *` / `:*` removed.
    body: String,
    /// Whether a trailing ` *` / `:*` was removed.
    trailing_args: bool,
}

impl CommandPattern {
    fn parse(spec: &str) -> CommandPattern {
        // Whitespace in a rule is a word separator, like in the shell: `git  status` and
        // `git\tstatus` mean `git status`. (Non-breaking spaces are not shell whitespace and stay.)
        let collapsed = spec
            .split([' ', '\t', '\n', '\r'])
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let (body, trailing_args) = if let Some(b) = collapsed.strip_suffix(":*") {
            (b.trim_end().to_string(), true)
        } else if let Some(b) = collapsed.strip_suffix(" *") {
            (b.to_string(), true)
        } else {
            (collapsed, false)
        };
        CommandPattern {
            body,
            trailing_args,
        }
    }

    /// The length of the pattern's fixed text before its first `*` (the whole body when it has
    /// none): how much of a command the rule spells out.
    pub fn fixed_prefix_len(&self) -> usize {
        self.body.find('*').unwrap_or(self.body.len())
    }

    /// Matches one normalised command text. `fold_case` compares lower-cased (used for deny and
    /// ask, so `RM -rf` on a case-insensitive file system is still caught).
    pub fn matches(&self, command: &str, fold_case: bool) -> bool {
        let (body, command) = if fold_case {
            (self.body.to_lowercase(), command.to_lowercase())
        } else {
            (self.body.clone(), command.to_string())
        };
        if wildcard_match(&body, &command) {
            return true;
        }
        self.trailing_args && wildcard_match(&format!("{body} *"), &command)
    }
}

/// Which tools a rule's tool part covers.
#[derive(Debug, Clone)]
pub(crate) enum ToolMatcher {
    /// One tool name (plus its family: `Edit` covers every editing tool, `Read` every reading
    /// tool, `Agent` and `Task` are one tool).
    Exact(String),
    /// `mcp__server` or `mcp__server__*`: every tool of one MCP server.
    McpServer(String),
    /// A tool-name wildcard such as `mcp__*` or `*` (deny/ask; in allow only after `mcp__`).
    Glob(String),
}

/// What a rule's specifier says about the call.
#[derive(Debug, Clone)]
pub(crate) enum Spec {
    /// No specifier, or `(*)`: every call of the tool.
    All,
    /// A Bash command pattern.
    Command(CommandPattern),
    /// A Read/Edit path pattern.
    Path(PathPattern),
    /// `WebFetch(domain:…)`.
    Domain(DomainPattern),
    /// A `*` wildcard on the primary string (WebSearch query, Agent subagent type).
    Text(String),
    /// `Tool(param:value)` on a scalar top-level parameter (deny/ask only).
    Param { name: String, value: String },
    /// A specifier robota cannot check against this tool's input (unknown tool). Deny and ask
    /// treat it as matching every call (fail closed); allow never matches.
    Unevaluable,
}

/// One parsed rule with its provenance.
#[derive(Debug, Clone)]
pub struct PermissionRule {
    text: String,
    list: RuleList,
    index: usize,
    source: RuleSource,
    pub(crate) tool: ToolMatcher,
    pub(crate) spec: Spec,
    warning: Option<String>,
    /// Stands in for an unparsable deny/ask rule (see [`PermissionRule::fail_closed`]).
    fallback: bool,
}

impl PermissionRule {
    /// Parses `text` as a rule of `list`. `index` (its position in the list) and `source` are
    /// kept for explanations.
    pub fn parse(
        text: &str,
        list: RuleList,
        index: usize,
        source: RuleSource,
    ) -> Result<PermissionRule, RuleParseError> {
        let err = |problem: String| RuleParseError {
            rule: text.to_string(),
            list,
            index,
            problem,
        };
        let trimmed = text.trim();
        let (tool_name, spec_text) = split_rule(trimmed).map_err(err)?;
        let tool = parse_tool(tool_name, list).map_err(err)?;
        let (spec, warning) = parse_spec(tool_name, &tool, spec_text, list).map_err(err)?;
        Ok(PermissionRule {
            text: trimmed.to_string(),
            list,
            index,
            source,
            tool,
            spec,
            warning,
            fallback: false,
        })
    }

    /// The rule that stands in for a deny or ask rule robota could not parse: every call of the
    /// tool it names needs approval (fail closed). `None` when the tool name cannot be read
    /// either (or `list` is allow, where nothing stands in: the rule is skipped).
    fn fail_closed(
        text: &str,
        list: RuleList,
        index: usize,
        source: &RuleSource,
    ) -> Option<PermissionRule> {
        if list == RuleList::Allow {
            return None;
        }
        let name = text.trim().split('(').next().unwrap_or("").trim();
        let tool = match parse_tool(name, RuleList::Deny) {
            Ok(tool) => tool,
            // A case slip (`bash(rm *)`) still says which tool the author meant to restrict.
            Err(_) => ToolMatcher::Exact(
                tools::known_tool_names()
                    .find(|known| known.eq_ignore_ascii_case(name))?
                    .to_string(),
            ),
        };
        Some(PermissionRule {
            text: text.trim().to_string(),
            list: RuleList::Ask,
            index,
            source: source.clone(),
            tool,
            spec: Spec::All,
            warning: None,
            fallback: true,
        })
    }

    /// The tool part of the rule as text (`Bash`, `mcp__github`, `mcp__github__*`).
    pub fn tool_name(&self) -> String {
        match &self.tool {
            ToolMatcher::Exact(name) | ToolMatcher::Glob(name) => name.clone(),
            ToolMatcher::McpServer(server) => format!("mcp__{server}"),
        }
    }

    /// Whether this rule stands in for a deny or ask rule that could not be parsed (see
    /// [`RuleSet::add_settings_list`]): it asks for every call of its tool.
    pub fn is_fail_closed_fallback(&self) -> bool {
        self.fallback
    }

    /// The rule as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its list.
    pub fn list(&self) -> RuleList {
        self.list
    }

    /// Its index in the list it came from.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where it came from.
    pub fn source(&self) -> &RuleSource {
        &self.source
    }

    /// A note about a rule that parses but may not do what its author expects (e.g. a specifier
    /// on a tool whose input robota cannot inspect).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Whether the rule names a tool without narrowing it (`Bash`, `Bash(*)`).
    pub fn is_bare(&self) -> bool {
        matches!(self.spec, Spec::All)
    }

    /// Whether the rule's tool part covers `tool`.
    pub fn applies_to_tool(&self, tool: &str) -> bool {
        match &self.tool {
            ToolMatcher::Exact(name) => {
                name == tool
                    || (name == "Edit" && tools::family(tool) == Family::Edit)
                    || (name == "Read" && tools::family(tool) == Family::Read)
                    || (matches!(name.as_str(), "Agent" | "Task")
                        && matches!(tool, "Agent" | "Task"))
            }
            ToolMatcher::McpServer(server) => tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server.as_str()))
                .is_some_and(|rest| rest.starts_with("__")),
            ToolMatcher::Glob(pattern) => wildcard_match(pattern, tool),
        }
    }

    /// The exact tool name, when the rule names one.
    pub(crate) fn exact_tool(&self) -> Option<&str> {
        match &self.tool {
            ToolMatcher::Exact(name) => Some(name),
            _ => None,
        }
    }
}

/// Splits `Tool(spec)` into its parts.
fn split_rule(rule: &str) -> Result<(&str, Option<&str>), String> {
    if rule.is_empty() {
        return Err(
            "the rule is empty; write a tool name such as `Bash` or `Read(./src/**)`".into(),
        );
    }
    match rule.find('(') {
        None => {
            if rule.contains(')') {
                return Err("`)` without a matching `(`".into());
            }
            Ok((rule, None))
        }
        Some(open) => {
            if !rule.ends_with(')') {
                return Err(if rule[open..].contains(')') {
                    "text after the closing `)`; a rule is `Tool` or `Tool(specifier)`".into()
                } else {
                    "missing closing `)`".into()
                });
            }
            let tool = rule[..open].trim_end();
            let spec = rule[open + 1..rule.len() - 1].trim();
            if spec.is_empty() {
                return Err(format!(
                    "empty `()`; write `{tool}` alone to match every use of the tool"
                ));
            }
            Ok((tool, Some(spec)))
        }
    }
}

fn parse_tool(name: &str, list: RuleList) -> Result<ToolMatcher, String> {
    if name.is_empty() {
        return Err("missing tool name before `(`".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '*' | '.')))
    {
        return Err(format!(
            "`{bad}` is not allowed in a tool name; a rule is `Tool` or `Tool(specifier)`"
        ));
    }
    if !tools::known_tool_names().any(|k| k == name) {
        if let Some(known) = tools::known_tool_names().find(|k| k.eq_ignore_ascii_case(name)) {
            return Err(format!(
                "tool names are case-sensitive; did you mean `{known}`?"
            ));
        }
    }
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            Some((server, tool)) => (server, Some(tool)),
            None => (rest, None),
        };
        if server.is_empty() {
            return Err("missing MCP server name after `mcp__`".into());
        }
        if !server.contains('*') {
            return Ok(match tool {
                None | Some("*") => ToolMatcher::McpServer(server.to_string()),
                Some(t) if t.contains('*') => ToolMatcher::Glob(name.to_string()),
                Some(_) => ToolMatcher::Exact(name.to_string()),
            });
        }
    }
    if name.contains('*') {
        // After a literal `mcp__` a wildcard can only reach MCP tools (`mcp__*`: every server's),
        // so an allow rule may use it; a bare `*` would allow every tool and is refused.
        if list == RuleList::Allow && !name.starts_with("mcp__") {
            return Err(
                "tool-name wildcards in allow rules are only accepted after a literal `mcp__` \
                 (e.g. `mcp__*`, `mcp__github__get_*`); deny and ask rules may use `*`"
                    .into(),
            );
        }
        return Ok(ToolMatcher::Glob(name.to_string()));
    }
    Ok(ToolMatcher::Exact(name.to_string()))
}

fn parse_spec(
    tool_name: &str,
    tool: &ToolMatcher,
    spec: Option<&str>,
    list: RuleList,
) -> Result<(Spec, Option<String>), String> {
    let Some(spec) = spec else {
        return Ok((Spec::All, None));
    };
    if spec == "*" {
        return Ok((Spec::All, None));
    }
    let exact = match tool {
        ToolMatcher::Exact(name) => name.as_str(),
        _ => {
            return Err(format!(
                "`{tool_name}` covers several tools, so it cannot take a specifier other than \
                 `(*)`"
            ))
        }
    };
    let family = tools::family(exact);
    if family == Family::WebFetch {
        if let Some((key, value)) = spec.split_once(':') {
            if key.trim() == "domain" && (key != "domain" || value.starts_with(char::is_whitespace))
            {
                return Err(format!(
                    "write `WebFetch(domain:{})` without spaces around `:`",
                    value.trim()
                ));
            }
        }
        if let Some(domain) = spec.strip_prefix("domain:") {
            return Ok((Spec::Domain(DomainPattern::parse(domain)?), None));
        }
    }
    if let Some((name, value)) = param_form(exact, spec)? {
        if list == RuleList::Allow {
            return Err(format!(
                "`{exact}({name}:…)` parameter rules are only allowed in deny and ask lists"
            ));
        }
        return Ok((
            Spec::Param {
                name: name.to_string(),
                value: value.to_string(),
            },
            None,
        ));
    }
    Ok(match family {
        Family::Bash => (Spec::Command(CommandPattern::parse(spec)), None),
        Family::Read | Family::Edit => (Spec::Path(PathPattern::parse(spec)?), None),
        Family::WebFetch => {
            return Err(format!(
                "WebFetch rules take a domain: `WebFetch(domain:{})`",
                super::domain::url_host(spec).unwrap_or_else(|| "example.com".to_string())
            ))
        }
        Family::WebSearch | Family::Agent | Family::Skill => (Spec::Text(spec.to_string()), None),
        Family::Internal | Family::Other => (
            Spec::Unevaluable,
            Some(format!(
                "robota does not know which input of `{exact}` `({spec})` should match; as a \
                 {list} rule it {}. Use `{exact}`, `{exact}(*)` or `{exact}(param:value)`.",
                if list == RuleList::Allow {
                    "never matches"
                } else {
                    "applies to every call of the tool"
                }
            )),
        ),
    })
}

/// Recognises `param:value`. For built-in tools only their known scalar parameters count (so
/// `Bash(npm run test:*)` stays a command pattern); naming the primary field is an error, and so
/// is a rule that looks like a parameter rule but could never match: spaces around the `:`
/// (`timeout : 30` compares against " 30"), or — for Bash and file rules — a parameter the tool
/// does not have (a misspelt deny rule must not quietly protect nothing).
fn param_form<'a>(tool: &str, spec: &'a str) -> Result<Option<(&'a str, &'a str)>, String> {
    let Some((raw_name, raw_value)) = spec.split_once(':') else {
        return Ok(None);
    };
    let name = raw_name.trim();
    let identifier = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !identifier {
        return Ok(None);
    }
    let spaced = raw_name != name || raw_value.starts_with(char::is_whitespace);
    // `Bash(timeout:*)` is the prefix form of a command pattern (`timeout …`) even though
    // `timeout` is also a parameter: "any value of a parameter" would match every call.
    if tools::family(tool) == Family::Bash && !spaced && raw_value == "*" {
        return Ok(None);
    }
    if let Some(primary) = tools::primary_field(tool) {
        if name == primary || name == tools::camel(primary) {
            return Err(format!(
                "`{name}:` is `{tool}`'s main input; write `{tool}({})` instead of a \
                 parameter rule",
                raw_value.trim()
            ));
        }
    }
    let known = tools::known_params(tool);
    let is_known = known.is_none_or(|k| k.iter().any(|k| *k == name || tools::camel(k) == name));
    if is_known {
        if spaced {
            return Err(format!(
                "a parameter rule is written without spaces around `:`: \
                 `{tool}({name}:{})`; as written it would never match",
                raw_value.trim()
            ));
        }
        return Ok(Some((name, raw_value)));
    }
    let known_list = || {
        known
            .unwrap_or_default()
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match tools::family(tool) {
        // `git:*` is the legacy prefix form, and `git:* push` a literal `:` plus a wildcard:
        // command patterns. A plain `name:value` is a parameter rule with a misspelt name.
        Family::Bash if !spaced && !raw_value.contains('*') => Err(format!(
            "`{name}` is not a parameter of `Bash` (its parameters are {}); to match commands \
             starting with `{name}`, write `Bash({name} {}:*)` or `Bash({name}:*)`",
            known_list(),
            raw_value.trim_end_matches('*').trim()
        )),
        Family::Read | Family::Edit if name.len() > 1 && !spaced => Err(format!(
            "`{name}` is not a parameter of `{tool}` (its parameters are {}); to match a file \
             whose name contains `:`, anchor the path: `{tool}(./{spec})`",
            known_list()
        )),
        // Elsewhere a `:` may belong to the value (`plugin:agent`, `site:example.com`); only a
        // near-miss of a real parameter name is taken for a typo.
        _ => match known
            .unwrap_or_default()
            .iter()
            .find(|k| edit_distance(k, name) <= 2 && name.len() > 2)
        {
            Some(k) => Err(format!(
                "`{name}` is not a parameter of `{tool}`; did you mean `{tool}({k}:{})`?",
                raw_value.trim()
            )),
            None => Ok(None),
        },
    }
}

/// Levenshtein distance with adjacent transpositions, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The rules a session evaluates against, in the order they were added (allow, ask and deny mixed;
/// precedence comes from the list, not the order).
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<PermissionRule>,
    /// Entries skipped on purpose (`// comment` strings), reported by [`RuleSet::warnings`].
    skipped: Vec<String>,
}

impl RuleSet {
    /// An empty set.
    pub fn new() -> RuleSet {
        RuleSet::default()
    }

    /// Parses and adds one settings list. All-or-nothing: when any rule is invalid, nothing is
    /// added and every problem is returned.
    pub fn add_list<S: AsRef<str>>(
        &mut self,
        list: RuleList,
        rules: impl IntoIterator<Item = S>,
        source: &RuleSource,
    ) -> Result<(), Vec<RuleParseError>> {
        let mut parsed = Vec::new();
        let mut errors = Vec::new();
        let mut skipped = Vec::new();
        for (index, text) in rules.into_iter().enumerate() {
            // Settings files shared between tools often carry `// …` strings as comments in
            // their lists; Claude Code ignores them, and so does robota — with a note.
            if text.as_ref().trim_start().starts_with("//") {
                skipped.push(format!(
                    "permissions.{list}[{index}] of {source} is a comment (`{}`) and was skipped",
                    text.as_ref().trim()
                ));
                continue;
            }
            match PermissionRule::parse(text.as_ref(), list, index, source.clone()) {
                Ok(rule) => parsed.push(rule),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        self.rules.extend(parsed);
        self.skipped.extend(skipped);
        Ok(())
    }

    /// Parses and adds one list of a settings file, entry by entry, the way Claude Code loads
    /// settings: one rule robota cannot parse does not make the file unusable.
    ///
    /// - An invalid **allow** rule is skipped ([`RuleFallback::Skipped`]): it allows nothing.
    /// - An invalid **deny** or **ask** rule must not silently weaken protection: every call of
    ///   the tool it names needs approval instead ([`RuleFallback::AskForTool`]; an ask rule for
    ///   the bare tool, which applies in every mode — `dontAsk` turns it into a denial).
    /// - A deny or ask rule whose tool name cannot be read either (`Two Words(x)`, `(ls)`) is
    ///   still an error: there is no tool to fall back on, and skipping it would weaken
    ///   protection without anyone knowing which tool it was meant for.
    ///
    /// `// comment` strings are skipped as in [`add_list`](Self::add_list). Returns what became
    /// of each invalid rule (for warnings naming the file and JSON path), or the errors.
    pub fn add_settings_list<S: AsRef<str>>(
        &mut self,
        list: RuleList,
        rules: impl IntoIterator<Item = S>,
        source: &RuleSource,
    ) -> Result<Vec<RuleIssue>, Vec<RuleParseError>> {
        let mut issues = Vec::new();
        let mut errors = Vec::new();
        for (index, text) in rules.into_iter().enumerate() {
            let text = text.as_ref();
            if text.trim_start().starts_with("//") {
                self.skipped.push(format!(
                    "permissions.{list}[{index}] of {source} is a comment (`{}`) and was skipped",
                    text.trim()
                ));
                continue;
            }
            match PermissionRule::parse(text, list, index, source.clone()) {
                Ok(rule) => self.rules.push(rule),
                Err(error) if list == RuleList::Allow => issues.push(RuleIssue {
                    error,
                    fallback: RuleFallback::Skipped,
                }),
                Err(error) => match PermissionRule::fail_closed(text, list, index, source) {
                    Some(rule) => {
                        issues.push(RuleIssue {
                            fallback: RuleFallback::AskForTool(rule.tool_name()),
                            error,
                        });
                        self.rules.push(rule);
                    }
                    None => errors.push(error),
                },
            }
        }
        if errors.is_empty() {
            Ok(issues)
        } else {
            Err(errors)
        }
    }

    /// Adds an already parsed rule.
    pub fn push(&mut self, rule: PermissionRule) {
        self.rules.push(rule);
    }

    /// Keeps only the rules for which `keep` is true (e.g. to drop the rules of one source).
    pub fn retain(&mut self, keep: impl FnMut(&PermissionRule) -> bool) {
        self.rules.retain(keep);
    }

    /// Builder form of [`add_list`](Self::add_list) for the three lists of one source.
    pub fn from_lists<S: AsRef<str>>(
        allow: impl IntoIterator<Item = S>,
        ask: impl IntoIterator<Item = S>,
        deny: impl IntoIterator<Item = S>,
        source: &RuleSource,
    ) -> Result<RuleSet, Vec<RuleParseError>> {
        let mut set = RuleSet::new();
        let mut errors = Vec::new();
        for (list, rules) in [
            (RuleList::Allow, allow.into_iter().collect::<Vec<_>>()),
            (RuleList::Ask, ask.into_iter().collect()),
            (RuleList::Deny, deny.into_iter().collect()),
        ] {
            if let Err(mut e) = set.add_list(list, rules, source) {
                errors.append(&mut e);
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// Every rule.
    pub fn rules(&self) -> &[PermissionRule] {
        &self.rules
    }

    /// The rules of one list.
    pub fn list(&self, list: RuleList) -> impl Iterator<Item = &PermissionRule> {
        self.rules.iter().filter(move |r| r.list == list)
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Notes on rules that parse but may not do what their author expects, one line each, with
    /// the rule's source. Surface these at startup; they are never dropped silently.
    pub fn warnings(&self) -> Vec<String> {
        self.skipped
            .iter()
            .cloned()
            .chain(self.rules.iter().filter_map(|r| {
                r.warning().map(|w| {
                    format!(
                        "permission rule `{}` in permissions.{}[{}] of {}: {w}",
                        r.text, r.list, r.index, r.source
                    )
                })
            }))
            .collect()
    }

    /// The bare deny rule that removes `tool` from what the model sees, if any. A bare `Read`
    /// deny also hides the editing tools, since a Read deny blocks edits of the same paths.
    pub fn hiding_rule(&self, tool: &str) -> Option<&PermissionRule> {
        self.list(RuleList::Deny).find(|r| {
            r.is_bare()
                && (r.applies_to_tool(tool)
                    || (r.exact_tool() == Some("Read") && tools::family(tool) == Family::Edit))
        })
    }

    /// Which of `tools` a bare deny removes from the model's tool list.
    pub fn hidden_tools<'a>(&self, tools: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
        tools
            .into_iter()
            .filter(|t| self.hiding_rule(t).is_some())
            .map(str::to_string)
            .collect()
    }
}

/// What [`RuleSet::add_settings_list`] did with a rule it could not parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "tool", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RuleFallback {
    /// An allow rule: skipped; it allows nothing.
    Skipped,
    /// A deny or ask rule: every call of this tool needs approval instead (fail closed).
    AskForTool(String),
}

/// A settings rule that could not be parsed, and what was done instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleIssue {
    /// The rule, its list and index, and the problem.
    pub error: RuleParseError,
    /// What robota did with it.
    pub fallback: RuleFallback,
}

impl RuleIssue {
    /// One sentence for the user: the rule, the problem and the consequence.
    pub fn message(&self) -> String {
        let consequence = match &self.fallback {
            RuleFallback::Skipped => "the rule is skipped (it allows nothing)".to_string(),
            RuleFallback::AskForTool(tool) => format!(
                "so that this {} rule does not silently stop protecting, every call of `{tool}` \
                 needs approval until it is fixed",
                self.error.list
            ),
        };
        format!(
            "invalid permission rule `{}`: {}; {consequence}",
            self.error.rule, self.error.problem
        )
    }
}

/// The serialized form of one rule: text plus provenance. A [`RuleSet`] serializes as a list of
/// these and is re-parsed when deserialized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RuleEntry {
    /// The rule text.
    pub rule: String,
    /// Its list.
    pub list: RuleList,
    /// Its index in the list.
    #[serde(default)]
    pub index: usize,
    /// Where it came from.
    #[serde(default)]
    pub source: RuleSource,
}

impl Serialize for RuleSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries: Vec<RuleEntry> = self
            .rules
            .iter()
            .map(|r| RuleEntry {
                // A fail-closed stand-in is, in effect, an ask rule for its bare tool; written
                // that way it reads back to the same rule.
                rule: if r.fallback {
                    r.tool_name()
                } else {
                    r.text.clone()
                },
                list: r.list,
                index: r.index,
                source: r.source.clone(),
            })
            .collect();
        entries.serialize(serializer)
    }
}

/// The two JSON forms a [`RuleSet`] is read from.
#[derive(Deserialize)]
#[serde(untagged)]
enum RuleSetRepr {
    /// What [`RuleSet`] serializes to: one entry per rule, with its list, index and source.
    Entries(Vec<RuleEntry>),
    /// The settings.json `permissions` shape: `{"allow": [...], "ask": [...], "deny": [...]}`
    /// (source label `sdk`).
    Lists(RuleLists),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleLists {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

impl<'de> Deserialize<'de> for RuleSet {
    /// Reads either the serialized entry list or a settings-style
    /// `{"allow": [...], "ask": [...], "deny": [...]}` object.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = match RuleSetRepr::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "rules must be a list of {rule, list, index?, source?} entries or an object \
                 {\"allow\": [...], \"ask\": [...], \"deny\": [...]} of rule strings",
            )
        })? {
            RuleSetRepr::Entries(entries) => entries,
            RuleSetRepr::Lists(lists) => {
                let source = RuleSource::new("sdk");
                [
                    (RuleList::Allow, lists.allow),
                    (RuleList::Ask, lists.ask),
                    (RuleList::Deny, lists.deny),
                ]
                .into_iter()
                .flat_map(|(list, rules)| {
                    let source = source.clone();
                    rules
                        .into_iter()
                        .enumerate()
                        .map(move |(index, rule)| RuleEntry {
                            rule,
                            list,
                            index,
                            source: source.clone(),
                        })
                })
                .collect()
            }
        };
        let mut set = RuleSet::new();
        let mut problems = Vec::new();
        for e in entries {
            match PermissionRule::parse(&e.rule, e.list, e.index, e.source) {
                Ok(rule) => set.push(rule),
                Err(err) => problems.push(err.to_string()),
            }
        }
        if problems.is_empty() {
            Ok(set)
        } else {
            Err(serde::de::Error::custom(problems.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_sets_read_entries_and_settings_style_lists() {
        let lists: RuleSet = serde_json::from_str(
            r#"{"allow": ["Bash(npm test)"], "deny": ["Read(./.env)", "WebFetch"]}"#,
        )
        .expect("settings-style lists");
        let entries = serde_json::to_value(&lists).expect("serialize");
        let again: RuleSet = serde_json::from_value(entries.clone()).expect("entry list");
        assert_eq!(serde_json::to_value(&again).expect("serialize"), entries);
        let texts: Vec<(String, String)> = entries
            .as_array()
            .expect("array")
            .iter()
            .map(|e| (e["list"].to_string(), e["rule"].to_string()))
            .collect();
        assert_eq!(texts.len(), 3, "{entries}");
        assert!(
            texts.contains(&("\"deny\"".into(), "\"WebFetch\"".into())),
            "{texts:?}"
        );
        let bad = serde_json::from_str::<RuleSet>(r#"{"allow": ["Bash("]}"#);
        assert!(bad.is_err());
        let typo = serde_json::from_str::<RuleSet>(r#"{"alow": ["Bash"]}"#)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(typo.contains("rules must be"), "{typo}");
    }

    fn parse(text: &str, list: RuleList) -> Result<PermissionRule, RuleParseError> {
        PermissionRule::parse(text, list, 0, RuleSource::new("test"))
    }

    #[test]
    fn grammar_errors_name_rule_and_problem() {
        let e = parse("Bash(ls", RuleList::Allow).unwrap_err();
        assert!(e.to_string().contains("`Bash(ls`"), "{e}");
        assert!(e.problem.contains("missing closing"), "{e}");
        assert!(parse("Bash(ls) x", RuleList::Allow).is_err());
        assert!(parse("", RuleList::Deny).is_err());
        assert!(parse("Bash()", RuleList::Deny).is_err());
        assert!(parse("bash(ls)", RuleList::Deny)
            .unwrap_err()
            .problem
            .contains("`Bash`"));
        assert!(parse("Read(../x)", RuleList::Deny).is_err());
        assert!(parse("WebFetch(https://x.com/a)", RuleList::Allow)
            .unwrap_err()
            .problem
            .contains("domain:x.com"));
        assert!(parse("Bash(command:rm)", RuleList::Deny).is_err());
        assert!(parse("Bash(run_in_background:true)", RuleList::Allow).is_err());
        assert!(parse("Bash(run_in_background:true)", RuleList::Deny).is_ok());
        assert!(parse("mcp__*", RuleList::Allow).is_ok());
        assert!(parse("mcp__*", RuleList::Allow)
            .unwrap()
            .applies_to_tool("mcp__any__tool"));
        assert!(!parse("mcp__*", RuleList::Allow)
            .unwrap()
            .applies_to_tool("Bash"));
        assert!(parse("*", RuleList::Allow).is_err());
        assert!(parse("mcp__*", RuleList::Deny).is_ok());
        assert!(parse("mcp__gh__get_*", RuleList::Allow).is_ok());
        assert!(parse("Two Words", RuleList::Deny).is_err());
    }

    #[test]
    fn command_patterns() {
        let p = |s: &str| CommandPattern::parse(s);
        assert!(p("ls *").matches("ls", false));
        assert!(p("ls *").matches("ls -la", false));
        assert!(!p("ls *").matches("lsof", false));
        assert!(p("ls*").matches("lsof", false));
        assert!(p("npm run test:*").matches("npm run test", false));
        assert!(p("npm run test:*").matches("npm run test --watch", false));
        assert!(!p("npm run test:*").matches("npm run testx", false));
        assert!(p("git  status").matches("git status", false));
        assert!(!p("git *").matches("GIT status", false));
        assert!(p("git *").matches("GIT status", true));
    }

    #[test]
    fn tool_matchers() {
        let r = parse("Edit(./src/**)", RuleList::Allow).unwrap();
        assert!(r.applies_to_tool("Write") && r.applies_to_tool("NotebookEdit"));
        assert!(!r.applies_to_tool("Read"));
        let r = parse("mcp__github", RuleList::Allow).unwrap();
        assert!(r.applies_to_tool("mcp__github__create_issue"));
        assert!(!r.applies_to_tool("mcp__githubx__a"));
        let r = parse("mcp__github__*", RuleList::Allow).unwrap();
        assert!(r.applies_to_tool("mcp__github__x"));
        let r = parse("Task(Explore)", RuleList::Deny).unwrap();
        assert!(r.applies_to_tool("Agent"));
    }

    #[test]
    fn hidden_tools_from_bare_denies() {
        let set = RuleSet::from_lists(
            Vec::<&str>::new(),
            vec![],
            vec!["WebSearch", "Bash(rm *)", "mcp__evil", "Read"],
            &RuleSource::new("t"),
        )
        .unwrap();
        let hidden = set.hidden_tools([
            "Bash",
            "WebSearch",
            "mcp__evil__x",
            "mcp__good__x",
            "Read",
            "Grep",
            "Write",
        ]);
        let want: BTreeSet<String> = ["WebSearch", "mcp__evil__x", "Read", "Grep", "Write"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(hidden, want);
    }

    #[test]
    fn add_list_is_all_or_nothing_and_serde_round_trips() {
        let mut set = RuleSet::new();
        let src = RuleSource::settings_file("projectSettings", "/p/.claude/settings.json", "/p");
        let errs = set
            .add_list(RuleList::Allow, ["Bash(ls *)", "Bash(x", "Read("], &src)
            .unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].index, 1);
        assert!(set.is_empty());
        set.add_list(RuleList::Deny, ["Read(./.env)"], &src)
            .unwrap();
        let json = serde_json::to_value(&set).unwrap();
        let back: RuleSet = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        let bad = serde_json::json!([{"rule": "Bash(", "list": "deny"}]);
        assert!(serde_json::from_value::<RuleSet>(bad).is_err());
    }

    #[test]
    fn unknown_tool_specifiers_warn() {
        let set = RuleSet::from_lists(
            vec!["mytool(x)"],
            vec![],
            vec!["robota_command_deploy(prod)"],
            &RuleSource::new("t"),
        )
        .unwrap();
        let w = set.warnings();
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("never matches"), "{w:?}");
        assert!(w[1].contains("every call"), "{w:?}");
    }
}
