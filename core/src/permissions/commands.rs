//! What robota knows about individual shell commands, by allowlist:
//!
//! - the built-in **read-only set** that needs no approval (and is all plan mode may run): each
//!   command with the exact options known to be harmless, and which of its words name files it
//!   reads — any other option, an abbreviated option, or a word that is only known at run time
//!   where an option could stand takes the command out of the set;
//! - the commands that **create, change or delete** the files they name (their targets are
//!   checked against deny rules and protected paths), parsed with their real options so `cp
//!   -tDIR` and `mv --target-directory=DIR` name `DIR`;
//! - the commands that **delete** (`rm`, `find -delete`, recursive `chmod`, …), whose targets the
//!   critical-path check looks at;
//! - the file commands **acceptEdits** approves inside the workspace (`mkdir`, `touch`, `rm`,
//!   `rmdir`, `mv`, `cp`, `sed -i`, as Claude Code does).

use super::getopt::{self, Arg, OptSpec, Parsed};
use super::shell::ShellWord;

use Arg::{None as F, Optional as O, Required as R};

/// How a read-only command uses its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Text, never opened (`basename`, `which`, `tr`'s sets).
    Text,
    /// Files or directories it reads.
    Paths,
    /// A pattern first (unless `-e`/`-f` gave it), then paths (`grep`, `rg`).
    PatternThenPaths,
}

/// Whether the command reads directories recursively, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recursion {
    Never,
    Always,
    /// When one of these options is present.
    With(&'static [&'static str]),
}

/// A read-only command and the options it may be used with.
struct ReadOnlySpec {
    name: &'static str,
    opts: OptSpec,
    operands: Operands,
    /// Options whose value names a file the command reads.
    path_opts: &'static [&'static str],
    recursion: Recursion,
    /// Reads the working directory when no path is given (and it is recursive or always does).
    default_cwd: bool,
    /// At most this many operands (`uniq IN OUT` writes OUT).
    max_operands: Option<usize>,
}

const fn spec(short: &'static [(char, Arg)], long: &'static [(&'static str, Arg)]) -> OptSpec {
    OptSpec {
        short,
        long,
        permute: true,
        numeric: false,
        single_dash_long: false,
    }
}

const fn numeric(short: &'static [(char, Arg)], long: &'static [(&'static str, Arg)]) -> OptSpec {
    OptSpec {
        short,
        long,
        permute: true,
        numeric: true,
        single_dash_long: false,
    }
}

#[rustfmt::skip]
const READ_ONLY: &[ReadOnlySpec] = &[
    ReadOnlySpec {
        name: "ls",
        opts: spec(
            &[
                ('a', F), ('A', F), ('b', F), ('B', F), ('c', F), ('C', F), ('d', F), ('f', F),
                ('F', F), ('g', F), ('G', F), ('h', F), ('H', F), ('i', F), ('I', R), ('k', F),
                ('l', F), ('L', F), ('m', F), ('n', F), ('N', F), ('o', F), ('p', F), ('q', F),
                ('Q', F), ('r', F), ('R', F), ('s', F), ('S', F), ('t', F), ('T', R), ('u', F),
                ('U', F), ('v', F), ('w', R), ('x', F), ('X', F), ('1', F),
            ],
            &[
                ("all", F), ("almost-all", F), ("author", F), ("escape", F), ("block-size", R),
                ("ignore-backups", F), ("color", O), ("colour", O), ("directory", F), ("dired", F),
                ("classify", O), ("file-type", F), ("format", R), ("full-time", F),
                ("group-directories-first", F), ("no-group", F), ("human-readable", F), ("si", F),
                ("dereference-command-line", F), ("dereference-command-line-symlink-to-dir", F),
                ("hide", R), ("hyperlink", O), ("indicator-style", R), ("inode", F), ("ignore", R),
                ("kibibytes", F), ("dereference", F), ("numeric-uid-gid", F), ("literal", F),
                ("hide-control-chars", F), ("show-control-chars", F), ("quote-name", F),
                ("quoting-style", R), ("reverse", F), ("recursive", F), ("size", F), ("sort", R),
                ("time", R), ("time-style", R), ("tabsize", R), ("width", R), ("context", F),
                ("zero", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::With(&["R", "recursive"]),
        default_cwd: true,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "pwd",
        opts: spec(&[('L', F), ('P', F)], &[]),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(0),
    },
    ReadOnlySpec {
        name: "cat",
        opts: spec(
            &[
                ('A', F), ('b', F), ('e', F), ('E', F), ('n', F), ('s', F), ('t', F), ('T', F),
                ('u', F), ('v', F),
            ],
            &[
                ("show-all", F), ("number-nonblank", F), ("show-ends", F), ("number", F),
                ("squeeze-blank", F), ("show-tabs", F), ("show-nonprinting", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "head",
        opts: numeric(
            &[('c', R), ('n', R), ('q', F), ('v', F), ('z', F)],
            &[
                ("bytes", R), ("lines", R), ("quiet", F), ("silent", F), ("verbose", F),
                ("zero-terminated", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "tail",
        // `-f`/`-F` would follow forever; not in the set.
        opts: numeric(
            &[('c', R), ('n', R), ('q', F), ('v', F), ('z', F)],
            &[
                ("bytes", R), ("lines", R), ("quiet", F), ("silent", F), ("verbose", F),
                ("zero-terminated", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "wc",
        opts: spec(
            &[('c', F), ('l', F), ('L', F), ('m', F), ('w', F)],
            &[
                ("bytes", F), ("chars", F), ("lines", F), ("max-line-length", F), ("words", F),
                ("total", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    GREP_SPEC_GREP,
    ReadOnlySpec {
        name: "egrep",
        ..GREP_SPEC_GREP
    },
    ReadOnlySpec {
        name: "fgrep",
        ..GREP_SPEC_GREP
    },
    ReadOnlySpec {
        name: "rg",
        // No `--pre`, `--pre-glob`, `--hostname-bin`, `-z`/`--search-zip` (they run programs), no
        // `-L`/`--follow` (follows links out of the tree).
        opts: spec(
            &[
                ('A', R), ('B', R), ('C', R), ('c', F), ('d', R), ('e', R), ('E', R), ('f', R),
                ('F', F), ('g', R), ('H', F), ('h', F), ('i', F), ('I', F), ('j', R), ('l', F),
                ('m', R), ('M', R), ('n', F), ('N', F), ('o', F), ('p', F), ('P', F),
                ('q', F), ('r', R), ('s', F), ('S', F), ('t', R), ('T', R), ('u', F), ('U', F),
                ('v', F), ('V', F), ('w', F), ('x', F), ('0', F),
            ],
            &[
                ("after-context", R), ("before-context", R), ("context", R), ("count", F),
                ("count-matches", F), ("max-depth", R), ("maxdepth", R), ("regexp", R),
                ("encoding", R), ("file", R), ("fixed-strings", F), ("glob", R), ("iglob", R),
                ("glob-case-insensitive", F), ("with-filename", F), ("no-filename", F),
                ("ignore-case", F), ("no-ignore", F), ("no-ignore-vcs", F), ("no-ignore-dot", F),
                ("no-ignore-parent", F), ("no-ignore-global", F), ("no-ignore-exclude", F),
                ("no-ignore-files", F), ("hidden", F), ("no-hidden", F), 
                ("threads", R), ("files-with-matches", F), ("files-without-match", F),
                ("files", F), ("max-count", R), ("max-columns", R), ("max-columns-preview", F),
                ("max-filesize", R), ("line-number", F), ("no-line-number", F), ("column", F),
                ("no-column", F), ("only-matching", F), ("pretty", F), ("pcre2", F), ("engine", R),
                ("quiet", F), ("replace", R), ("no-messages", F), ("smart-case", F),
                ("case-sensitive", F), ("type", R), ("type-not", R), ("type-list", F),
                ("unrestricted", F), ("multiline", F), ("multiline-dotall", F),
                ("invert-match", F), ("vimgrep", F), ("word-regexp", F), ("line-regexp", F),
                ("null", F), ("null-data", F), ("color", R), ("colors", R), ("heading", F),
                ("no-heading", F), ("json", F), ("stats", F), ("sort", R), ("sortr", R),
                ("trim", F), ("passthru", F), ("binary", F), ("text", F), ("crlf", F),
                ("byte-offset", F), ("one-file-system", F), ("no-config", F), ("no-unicode", F),
                ("path-separator", R), ("field-match-separator", R),
                ("field-context-separator", R), ("context-separator", R),
                ("no-context-separator", F), ("include-zero", F), ("auto-hybrid-regex", F),
                ("block-buffered", F), ("line-buffered", F), ("debug", F), ("trace", F),
                ("ignore-file-case-insensitive", F), ("max-filesize", R), ("dfa-size-limit", R),
                ("regex-size-limit", R), ("hyperlink-format", R),
            ],
        ),
        operands: Operands::PatternThenPaths,
        path_opts: &["f", "file"],
        recursion: Recursion::Always,
        default_cwd: true,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "stat",
        opts: spec(
            &[('c', R), ('f', F), ('L', F), ('t', F)],
            &[
                ("format", R), ("printf", R), ("file-system", F), ("dereference", F), ("terse", F),
                ("cached", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "file",
        // No `-C` (compiles a magic file), `-m`/`-f` (read lists of other files), `-p`.
        opts: spec(
            &[
                ('b', F), ('E', F), ('h', F), ('i', F), ('k', F), ('L', F), ('N', F), ('r', F),
                ('s', F), ('z', F), ('Z', F), ('0', F),
            ],
            &[
                ("brief", F), ("mime", F), ("mime-type", F), ("mime-encoding", F),
                ("keep-going", F), ("no-dereference", F), ("dereference", F), ("no-pad", F),
                ("raw", F), ("special-files", F), ("uncompress", F), ("uncompress-noreport", F),
                ("print0", F), ("extension", F), ("apple", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "du",
        opts: spec(
            &[
                ('0', F), ('a', F), ('b', F), ('B', R), ('c', F), ('d', R), ('D', F), ('h', F),
                ('H', F), ('k', F), ('L', F), ('l', F), ('m', F), ('P', F), ('s', F), ('S', F),
                ('t', R), ('x', F),
            ],
            &[
                ("null", F), ("all", F), ("apparent-size", F), ("block-size", R), ("bytes", F),
                ("total", F), ("max-depth", R), ("dereference-args", F), ("human-readable", F),
                ("inodes", F), ("dereference", F), ("count-links", F), ("no-dereference", F),
                ("separate-dirs", F), ("si", F), ("summarize", F), ("threshold", R), ("time", O),
                ("time-style", R), ("exclude", R), ("one-file-system", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Always,
        default_cwd: true,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "df",
        opts: spec(
            &[
                ('a', F), ('B', R), ('h', F), ('H', F), ('i', F), ('k', F), ('l', F), ('P', F),
                ('t', R), ('T', F), ('x', R),
            ],
            &[
                ("all", F), ("block-size", R), ("human-readable", F), ("si", F), ("inodes", F),
                ("local", F), ("no-sync", F), ("output", O), ("portability", F), ("total", F),
                ("type", R), ("print-type", F), ("exclude-type", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "tree",
        // No `-o` (writes), `-R` (writes index files with -H), `--fromfile`, `-H`, `-l` (follows
        // links out of the tree).
        opts: spec(
            &[
                ('a', F), ('d', F), ('f', F), ('x', F), ('L', R), ('P', R), ('I', R),
                ('i', F), ('q', F), ('N', F), ('Q', F), ('p', F), ('u', F), ('g', F), ('s', F),
                ('h', F), ('D', F), ('F', F), ('v', F), ('t', F), ('c', F), ('U', F), ('r', F),
                ('n', F), ('C', F), ('A', F), ('S', F), ('J', F), ('X', F),
            ],
            &[
                ("noreport", F), ("dirsfirst", F), ("filesfirst", F), ("gitignore", F),
                ("prune", F), ("matchdirs", F), ("ignore-case", F), ("charset", R),
                ("filelimit", R), ("du", F), ("si", F), ("inodes", F), ("device", F), ("sort", R),
                ("timefmt", R), ("info", F), ("metafirst", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Always,
        default_cwd: true,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "diff",
        opts: spec(
            &[
                ('a', F), ('b', F), ('B', F), ('c', F), ('C', R), ('d', F), ('e', F), ('E', F),
                ('i', F), ('I', R), ('n', F), ('N', F), ('p', F), ('q', F), ('s', F),
                ('t', F), ('T', F), ('u', F), ('U', R), ('w', F), ('W', R), ('x', R), ('y', F),
                ('Z', F),
            ],
            &[
                ("text", F), ("ignore-space-change", F), ("ignore-blank-lines", F), ("context", O),
                ("minimal", F), ("ed", F), ("ignore-tab-expansion", F), ("ignore-case", F),
                ("ignore-matching-lines", R), ("rcs", F), ("new-file", F),
                ("unidirectional-new-file", F), ("show-c-function", F), ("show-function-line", R),
                ("brief", F), ("report-identical-files", F), ("expand-tabs", F),
                ("initial-tab", F), ("unified", O), ("ignore-all-space", F),
                ("ignore-trailing-space", F), ("width", R), ("exclude", R), ("side-by-side", F),
                ("color", O), ("palette", R), ("label", R), ("left-column", F),
                ("suppress-common-lines", F), ("suppress-blank-empty", F),
                ("strip-trailing-cr", F), ("normal", F), ("speed-large-files", F),
                ("no-dereference", F), ("from-file", R), ("to-file", R), ("tabsize", R),
                ("horizon-lines", R), ("line-format", R), ("old-line-format", R),
                ("new-line-format", R), ("unchanged-line-format", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &["from-file", "to-file"],
        // No `-r`: it follows links out of the tree.
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "cmp",
        opts: spec(
            &[('b', F), ('i', R), ('l', F), ('n', R), ('s', F)],
            &[
                ("print-bytes", F), ("ignore-initial", R), ("verbose", F), ("bytes", R),
                ("quiet", F), ("silent", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(4),
    },
    ReadOnlySpec {
        name: "sort",
        // No `-o`/`--output` (writes), `--compress-program` (runs a program), `-T` (writes temp
        // files in a chosen place), `--files0-from` (reads a list of other files).
        opts: spec(
            &[
                ('b', F), ('c', F), ('C', F), ('d', F), ('f', F), ('g', F), ('h', F), ('i', F),
                ('k', R), ('m', F), ('M', F), ('n', F), ('r', F), ('R', F), ('s', F), ('S', R),
                ('t', R), ('u', F), ('V', F), ('z', F),
            ],
            &[
                ("ignore-leading-blanks", F), ("dictionary-order", F), ("ignore-case", F),
                ("general-numeric-sort", F), ("ignore-nonprinting", F), ("month-sort", F),
                ("human-numeric-sort", F), ("numeric-sort", F), ("random-sort", F), ("reverse", F),
                ("sort", R), ("version-sort", F), ("check", O), ("debug", F), ("key", R),
                ("merge", F), ("stable", F), ("buffer-size", R), ("field-separator", R),
                ("unique", F), ("zero-terminated", F), ("parallel", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "uniq",
        opts: spec(
            &[
                ('c', F), ('d', F), ('D', F), ('f', R), ('i', F), ('s', R), ('u', F), ('w', R),
                ('z', F),
            ],
            &[
                ("count", F), ("repeated", F), ("all-repeated", O), ("skip-fields", R),
                ("group", O), ("ignore-case", F), ("skip-chars", R), ("unique", F),
                ("zero-terminated", F), ("check-chars", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        // `uniq IN OUT` writes OUT.
        max_operands: Some(1),
    },
    ReadOnlySpec {
        name: "cut",
        opts: spec(
            &[
                ('b', R), ('c', R), ('d', R), ('f', R), ('n', F), ('s', F), ('z', F),
            ],
            &[
                ("bytes", R), ("characters", R), ("delimiter", R), ("fields", R),
                ("complement", F), ("only-delimited", F), ("output-delimiter", R),
                ("zero-terminated", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "tr",
        opts: spec(
            &[('c', F), ('C', F), ('d', F), ('s', F), ('t', F)],
            &[
                ("complement", F), ("delete", F), ("squeeze-repeats", F), ("truncate-set1", F),
            ],
        ),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(2),
    },
    ReadOnlySpec {
        name: "nl",
        opts: spec(
            &[
                ('b', R), ('d', R), ('f', R), ('h', R), ('i', R), ('l', R), ('n', R), ('p', F),
                ('s', R), ('v', R), ('w', R),
            ],
            &[
                ("body-numbering", R), ("section-delimiter", R), ("footer-numbering", R),
                ("header-numbering", R), ("line-increment", R), ("join-blank-lines", R),
                ("number-format", R), ("no-renumber", F), ("number-separator", R),
                ("starting-line-number", R), ("number-width", R),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "realpath",
        opts: spec(
            &[
                ('e', F), ('L', F), ('m', F), ('P', F), ('q', F), ('s', F), ('z', F),
            ],
            &[
                ("canonicalize-existing", F), ("canonicalize-missing", F), ("logical", F),
                ("physical", F), ("quiet", F), ("relative-to", R), ("relative-base", R),
                ("no-symlinks", F), ("strip", F), ("zero", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "readlink",
        opts: spec(
            &[
                ('e', F), ('f', F), ('m', F), ('n', F), ('q', F), ('s', F), ('v', F), ('z', F),
            ],
            &[
                ("canonicalize", F), ("canonicalize-existing", F), ("canonicalize-missing", F),
                ("no-newline", F), ("quiet", F), ("silent", F), ("verbose", F), ("zero", F),
            ],
        ),
        operands: Operands::Paths,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "basename",
        opts: spec(
            &[('a', F), ('s', R), ('z', F)],
            &[("multiple", F), ("suffix", R), ("zero", F)],
        ),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "dirname",
        opts: spec(&[('z', F)], &[("zero", F)]),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "which",
        opts: spec(&[('a', F), ('s', F)], &[]),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "type",
        opts: spec(&[('a', F), ('f', F), ('p', F), ('P', F), ('t', F)], &[]),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "whoami",
        opts: OptSpec::NONE,
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(0),
    },
    ReadOnlySpec {
        name: "id",
        opts: spec(
            &[
                ('a', F), ('g', F), ('G', F), ('n', F), ('r', F), ('u', F), ('z', F), ('Z', F),
            ],
            &[
                ("group", F), ("groups", F), ("name", F), ("real", F), ("user", F), ("zero", F),
                ("context", F),
            ],
        ),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: None,
    },
    ReadOnlySpec {
        name: "uname",
        opts: spec(
            &[
                ('a', F), ('s', F), ('n', F), ('r', F), ('v', F), ('m', F), ('p', F), ('i', F),
                ('o', F),
            ],
            &[
                ("all", F), ("kernel-name", F), ("nodename", F), ("kernel-release", F),
                ("kernel-version", F), ("machine", F), ("processor", F), ("hardware-platform", F),
                ("operating-system", F),
            ],
        ),
        operands: Operands::Text,
        path_opts: &[],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(0),
    },
    ReadOnlySpec {
        name: "date",
        // No `-s`/`--set` (changes the clock) or `-f`/`--file` (reads a list of dates).
        opts: spec(
            &[('d', R), ('I', O), ('r', R), ('R', F), ('u', F)],
            &[
                ("date", R), ("debug", F), ("iso-8601", O), ("reference", R), ("rfc-email", F),
                ("rfc-3339", R), ("resolution", F), ("utc", F), ("universal", F),
            ],
        ),
        operands: Operands::Text,
        path_opts: &["r", "reference"],
        recursion: Recursion::Never,
        default_cwd: false,
        max_operands: Some(1),
    },
];

#[rustfmt::skip]
const GREP_SPEC_GREP: ReadOnlySpec = ReadOnlySpec {
    name: "grep",
    opts: numeric(
        &[
            ('A', R), ('a', F), ('B', R), ('b', F), ('C', R), ('c', F), ('D', R), ('d', R),
            ('E', F), ('e', R), ('F', F), ('f', R), ('G', F), ('H', F), ('h', F), ('I', F),
            ('i', F), ('L', F), ('l', F), ('m', R), ('n', F), ('o', F), ('P', F), ('q', F),
            ('r', F), ('s', F), ('T', F), ('U', F), ('u', F), ('V', F), ('v', F),
            ('w', F), ('x', F), ('y', F), ('Z', F), ('z', F),
        ],
        &[
            ("after-context", R), ("text", F), ("before-context", R), ("byte-offset", F),
            ("binary-files", R), ("context", R), ("color", O), ("colour", O), ("count", F),
            ("devices", R), ("directories", R), ("exclude", R), ("exclude-dir", R),
            ("extended-regexp", F), ("regexp", R), ("fixed-strings", F), ("file", R),
            ("basic-regexp", F), ("with-filename", F), ("no-filename", F), ("ignore-case", F),
            ("no-ignore-case", F), ("include", R), ("files-without-match", F),
            ("files-with-matches", F), ("label", R), ("line-buffered", F), ("line-number", F),
            ("no-messages", F), ("null", F), ("null-data", F), ("only-matching", F),
            ("perl-regexp", F), ("quiet", F), ("silent", F), ("recursive", F),
            ("initial-tab", F), ("binary", F), ("invert-match", F),
            ("word-regexp", F), ("line-regexp", F), ("max-count", R),
        ],
    ),
    operands: Operands::PatternThenPaths,
    path_opts: &["f", "file"],
    recursion: Recursion::With(&["r", "recursive"]),
    default_cwd: true,
    max_operands: None,
};

/// What a read-only command reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reads {
    /// Words naming files or directories it reads (contents or metadata).
    pub paths: Vec<ShellWord>,
    /// It reads the working directory it runs in.
    pub cwd: bool,
    /// It reads directories recursively.
    pub recursive: bool,
    /// It is `git`: repository configuration (fsmonitor, diff drivers, pagers) can run programs,
    /// so it is read-only only in the session's own working directory.
    pub git: bool,
    /// For `git diff --no-index`: the paths are outside git's control.
    pub git_no_index: bool,
}

/// The verdict on one command for the read-only set.
#[derive(Debug, Clone)]
pub(crate) enum ReadOnly {
    /// It only reads; these are its reads.
    Yes(Reads),
    /// Not in the set, or used in a way that may write or run programs.
    No(String),
}

fn name_of(argv: &[ShellWord]) -> Option<&str> {
    argv.first()
        .filter(|w| w.is_static())
        .map(|w| w.text.as_str())
}

/// Whether the command (wrappers already stripped) is in the built-in read-only set, and what it
/// reads.
pub(crate) fn read_only(argv: &[ShellWord]) -> ReadOnly {
    let Some(name) = name_of(argv) else {
        return ReadOnly::No("its name is only known when it runs".into());
    };
    let args = &argv[1..];
    let no = |why: String| ReadOnly::No(format!("`{name}` {why}"));
    match name {
        // Builtins that read nothing; their words are text.
        "echo" | "true" | "false" | ":" | "cd" => return ReadOnly::Yes(Reads::default()),
        "break" | "continue" => {
            return if args
                .iter()
                .all(|w| w.is_static() && w.text.chars().all(|c| c.is_ascii_digit()))
            {
                ReadOnly::Yes(Reads::default())
            } else {
                no("takes a loop count that is not a plain number".into())
            };
        }
        "printf" => {
            // `printf -v NAME` assigns a variable (`PATH`…); a format known only at run time
            // could be `-v`.
            return match args.first() {
                None => ReadOnly::Yes(Reads::default()),
                Some(first) if !first.is_static() => {
                    no("has a format that is only known when it runs (it could be `-v`)".into())
                }
                Some(first) if first.text.starts_with('-') && first.text != "--" => {
                    no("with options can assign variables (`-v`)".into())
                }
                Some(_) => ReadOnly::Yes(Reads::default()),
            };
        }
        "test" | "[" => {
            // Only static words: `-v NAME` evaluates an array subscript (and can run code), and
            // two run-time words side by side can turn into `-v` and a hostile name.
            return if args.iter().all(ShellWord::is_static)
                && !args.iter().any(|w| w.text == "-v" || w.text == "-R")
            {
                ReadOnly::Yes(Reads::default())
            } else {
                no("is only read-only with fixed words and without `-v`/`-R`".into())
            };
        }
        "command" => {
            return match args.first().map(|w| w.text.as_str()) {
                Some("-v" | "-V") if args.iter().all(ShellWord::is_static) => {
                    ReadOnly::Yes(Reads::default())
                }
                _ => no("runs the command it is given".into()),
            };
        }
        "find" => return find_read_only(args),
        "git" => return git_read_only(args),
        _ => {}
    }
    let Some(spec) = READ_ONLY.iter().find(|s| s.name == name) else {
        return ReadOnly::No(format!("`{name}` is not in the built-in read-only set"));
    };
    let parsed = match getopt::parse(args, &spec.opts) {
        Ok(p) => p,
        Err(e) => return no(format!("is used in a way robota cannot vouch for: {}", e.0)),
    };
    if spec
        .max_operands
        .is_some_and(|max| parsed.operands.len() > max)
    {
        return no("has more operands than a read-only use takes".into());
    }
    let mut reads = Reads {
        recursive: match spec.recursion {
            Recursion::Never => false,
            Recursion::Always => true,
            Recursion::With(opts) => opts.iter().any(|o| parsed.has(o)),
        },
        ..Reads::default()
    };
    for opt in &parsed.opts {
        if spec.path_opts.contains(&opt.name.as_str()) {
            if let Some(w) = option_value_word(args, opt) {
                reads.paths.push(w);
            }
        }
    }
    let mut operands: Vec<&ShellWord> = parsed.operands.iter().map(|&i| &args[i]).collect();
    match spec.operands {
        Operands::Text => {
            if operands.iter().any(|w| !w.is_static()) && !parsed.saw_double_dash {
                return no("has words that are only known when it runs".into());
            }
            operands.clear();
        }
        Operands::Paths => {}
        Operands::PatternThenPaths => {
            let pattern_given = ["e", "f", "regexp", "file"].iter().any(|o| parsed.has(o));
            if !pattern_given && !operands.is_empty() {
                operands.remove(0);
            }
        }
    }
    if operands.is_empty() && spec.default_cwd && (reads.recursive || name == "ls") {
        reads.cwd = true;
    }
    reads.paths.extend(operands.into_iter().cloned());
    ReadOnly::Yes(reads)
}

/// The word holding an option's value (the separate word, or the value part of `--opt=VALUE`
/// / `-oVALUE`).
fn option_value_word(args: &[ShellWord], opt: &getopt::Opt) -> Option<ShellWord> {
    let i = opt.value_word?;
    let word = args.get(i)?;
    let value = opt.value.clone()?;
    if word.text == value {
        return Some(word.clone());
    }
    Some(ShellWord {
        text: value.clone(),
        raw: value,
        ..word.clone()
    })
}

/// `find`: start paths, then an expression of tests and actions — only the listed ones.
fn find_read_only(args: &[ShellWord]) -> ReadOnly {
    // Tests and actions that only read, with how many words they take.
    const PRIMARIES: &[(&str, usize)] = &[
        ("-name", 1),
        ("-iname", 1),
        ("-path", 1),
        ("-ipath", 1),
        ("-wholename", 1),
        ("-iwholename", 1),
        ("-regex", 1),
        ("-iregex", 1),
        ("-regextype", 1),
        ("-lname", 1),
        ("-ilname", 1),
        ("-type", 1),
        ("-xtype", 1),
        ("-maxdepth", 1),
        ("-mindepth", 1),
        ("-mtime", 1),
        ("-mmin", 1),
        ("-atime", 1),
        ("-amin", 1),
        ("-ctime", 1),
        ("-cmin", 1),
        ("-size", 1),
        ("-perm", 1),
        ("-user", 1),
        ("-group", 1),
        ("-uid", 1),
        ("-gid", 1),
        ("-links", 1),
        ("-inum", 1),
        ("-fstype", 1),
        ("-used", 1),
        ("-newer", 1),
        ("-anewer", 1),
        ("-cnewer", 1),
        ("-samefile", 1),
        ("-printf", 1),
        ("-empty", 0),
        ("-executable", 0),
        ("-readable", 0),
        ("-writable", 0),
        ("-nouser", 0),
        ("-nogroup", 0),
        ("-print", 0),
        ("-print0", 0),
        ("-ls", 0),
        ("-prune", 0),
        ("-quit", 0),
        ("-true", 0),
        ("-false", 0),
        ("-depth", 0),
        ("-d", 0),
        ("-daystart", 0),
        ("-mount", 0),
        ("-xdev", 0),
        ("-noleaf", 0),
        ("-ignore_readdir_race", 0),
        ("-noignore_readdir_race", 0),
        ("-not", 0),
        ("-and", 0),
        ("-or", 0),
        ("-a", 0),
        ("-o", 0),
        ("!", 0),
        ("(", 0),
        (")", 0),
        (",", 0),
    ];
    // Paths that `-newer FILE` & co. read (metadata only).
    const FILE_ARG: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
    let mut i = 0;
    // Leading options -H -L -P -D debugopts -Olevel.
    while let Some(w) = args.get(i) {
        if !w.is_static() {
            break;
        }
        match w.text.as_str() {
            // Not `-L`: it follows links out of the tree.
            "-H" | "-P" => i += 1,
            t if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut reads = Reads {
        recursive: true,
        ..Reads::default()
    };
    while let Some(w) = args.get(i) {
        if w.is_static() && (w.text.starts_with('-') || matches!(w.text.as_str(), "(" | "!")) {
            break;
        }
        if !w.is_static() && could_start_expression(w) {
            return ReadOnly::No(format!(
                "`find` has a start path `{}` that is only known when it runs",
                w.raw
            ));
        }
        reads.paths.push(w.clone());
        i += 1;
    }
    if reads.paths.is_empty() {
        reads.cwd = true;
    }
    while let Some(w) = args.get(i) {
        if !w.is_static() {
            return ReadOnly::No(format!(
                "`find` has an expression word `{}` that is only known when it runs",
                w.raw
            ));
        }
        let Some((name, takes)) = PRIMARIES.iter().find(|(p, _)| *p == w.text) else {
            return ReadOnly::No(format!(
                "`find {}` may change files or run programs",
                w.text
            ));
        };
        if FILE_ARG.contains(name) {
            if let Some(f) = args.get(i + 1) {
                reads.paths.push(f.clone());
            }
        }
        i += 1 + takes;
    }
    ReadOnly::Yes(reads)
}

/// Whether a run-time word among `find`'s start paths could turn into an expression primary.
fn could_start_expression(w: &ShellWord) -> bool {
    let raw = w.raw.trim_start_matches(['"', '\'']);
    !raw.starts_with(|c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '~'))
}

/// `git` options allowed before the subcommand.
#[rustfmt::skip]
const GIT_GLOBAL: OptSpec = OptSpec {
    short: &[('P', F)],
    long: &[
        ("no-pager", F), ("no-optional-locks", F), ("literal-pathspecs", F),
        ("no-replace-objects", F), ("glob-pathspecs", F), ("noglob-pathspecs", F),
        ("icase-pathspecs", F), ("no-advice", F),
    ],
    permute: false,
    numeric: false,
    single_dash_long: false,
};

/// Options shared by `git diff`, `log` and `show` that only change what is printed. Not here:
/// `--output` (writes a file), `--ext-diff` and `--textconv` (run configured programs),
/// `--no-index` is handled on its own.
#[rustfmt::skip]
const GIT_DIFF_OPTS: &[(&str, Arg)] = &[
    ("patch", F), ("no-patch", F), ("unified", R), ("raw", F), ("patch-with-raw", F),
    ("minimal", F), ("patience", F), ("histogram", F), ("anchored", R), ("diff-algorithm", R),
    ("stat", O), ("stat-width", R), ("stat-name-width", R), ("stat-count", R),
    ("compact-summary", F), ("numstat", F), ("shortstat", F), ("dirstat", O), ("cumulative", F),
    ("dirstat-by-file", O), ("summary", F), ("patch-with-stat", F), ("name-only", F),
    ("name-status", F), ("submodule", O), ("color", O), ("no-color", F), ("color-moved", O),
    ("no-color-moved", F), ("color-moved-ws", R), ("word-diff", O), ("word-diff-regex", R),
    ("color-words", O), ("no-renames", F), ("rename-empty", F), ("no-rename-empty", F),
    ("check", F), ("ws-error-highlight", R), ("full-index", F), ("binary", F), ("abbrev", O),
    ("break-rewrites", O), ("find-renames", O), ("find-copies", O), ("find-copies-harder", F),
    ("irreversible-delete", F), ("diff-filter", R), ("find-object", R), ("pickaxe-all", F),
    ("pickaxe-regex", F), ("relative", O), ("no-relative", F), ("text", F),
    ("ignore-cr-at-eol", F), ("ignore-space-at-eol", F), ("ignore-space-change", F),
    ("ignore-all-space", F), ("ignore-blank-lines", F), ("ignore-matching-lines", R),
    ("inter-hunk-context", R), ("function-context", F), ("exit-code", F), ("quiet", F),
    ("no-ext-diff", F), ("no-textconv", F), ("ignore-submodules", O), ("src-prefix", R),
    ("dst-prefix", R), ("no-prefix", F), ("default-prefix", F), ("line-prefix", R),
    ("ita-invisible-in-index", F), ("cached", F), ("staged", F), ("merge-base", F),
    ("indent-heuristic", F), ("no-indent-heuristic", F), ("oneline", F), ("format", R),
    ("pretty", O), ("abbrev-commit", F), ("no-abbrev-commit", F), ("encoding", R), ("notes", O),
    ("no-notes", F), ("show-signature", F), ("relative-date", F), ("date", R), ("parents", F),
    ("children", F), ("left-right", F), ("graph", F), ("decorate", O), ("no-decorate", F),
    ("source", F), ("follow", F), ("full-diff", F), ("log-size", F), ("max-count", R), ("skip", R),
    ("since", R), ("after", R), ("until", R), ("before", R), ("author", R), ("committer", R),
    ("grep", R), ("all-match", F), ("invert-grep", F), ("regexp-ignore-case", F),
    ("basic-regexp", F), ("extended-regexp", F), ("fixed-strings", F), ("perl-regexp", F),
    ("merges", F), ("no-merges", F), ("min-parents", R), ("max-parents", R), ("first-parent", F),
    ("all", F), ("branches", O), ("tags", O), ("remotes", O), ("reverse", F), ("topo-order", F),
    ("date-order", F), ("author-date-order", F), ("no-walk", O), ("boundary", F),
    ("simplify-by-decoration", F), ("ancestry-path", O), ("dense", F), ("sparse", F),
    ("full-history", F), ("mailmap", F), ("no-mailmap", F), ("use-mailmap", F),
    ("no-use-mailmap", F), ("expand-tabs", O), ("no-expand-tabs", F), ("diff-merges", R),
    ("combined-all-paths", F), ("dd", F), ("remerge-diff", F), ("cc", F), ("null", F),
];

#[rustfmt::skip]
const GIT_DIFF_SHORT: &[(char, Arg)] = &[
    ('p', F), ('u', F), ('s', F), ('U', R), ('W', F), ('M', O), ('C', O), ('B', O), ('D', F),
    ('l', R), ('S', R), ('G', R), ('O', R), ('R', F), ('a', F), ('b', F), ('w', F), ('z', F),
    ('n', R), ('i', F), ('E', F), ('F', F), ('P', F), ('m', F), ('c', F), ('t', F),
];

#[rustfmt::skip]
fn git_sub_spec(sub: &str) -> Option<OptSpec> {
    Some(match sub {
        "diff" | "log" | "show" => OptSpec {
            short: GIT_DIFF_SHORT,
            long: GIT_DIFF_OPTS,
            permute: true,
            numeric: true,
            single_dash_long: false,
        },
        "status" => spec(
            &[('s', F), ('b', F), ('v', F), ('u', O), ('z', F), ('M', O)],
            &[
                ("short", F), ("branch", F), ("show-stash", F), ("porcelain", O), ("long", F),
                ("verbose", F), ("untracked-files", O), ("ignore-submodules", O), ("ignored", O),
                ("column", O), ("no-column", F), ("ahead-behind", F), ("no-ahead-behind", F),
                ("renames", F), ("no-renames", F), ("find-renames", O), ("null", F),
            ],
        ),
        "rev-parse" => spec(
            &[('q', F)],
            &[
                ("show-toplevel", F), ("show-prefix", F), ("show-cdup", F), ("git-dir", F),
                ("absolute-git-dir", F), ("git-common-dir", F), ("is-inside-work-tree", F),
                ("is-inside-git-dir", F), ("is-bare-repository", F), ("is-shallow-repository", F),
                ("abbrev-ref", O), ("short", O), ("verify", F), ("quiet", F), ("symbolic", F),
                ("symbolic-full-name", F), ("show-object-format", O), ("all", F), ("branches", O),
                ("tags", O), ("remotes", O),
            ],
        ),
        "ls-files" => spec(
            &[
                ('c', F), ('d', F), ('m', F), ('o', F), ('i', F), ('s', F), ('u', F), ('k', F),
                ('t', F), ('v', F), ('f', F), ('z', F),
            ],
            &[
                ("cached", F), ("deleted", F), ("modified", F), ("others", F), ("ignored", F),
                ("stage", F), ("unmerged", F), ("killed", F), ("directory", F),
                ("no-empty-directory", F), ("exclude-standard", F), ("exclude", R),
                ("error-unmatch", F), ("full-name", F), ("recurse-submodules", F), ("abbrev", O),
                ("debug", F), ("eol", F), ("deduplicate", F), ("sparse", F), ("format", R),
            ],
        ),
        "blame" => spec(
            &[
                ('b', F), ('c', F), ('e', F), ('f', F), ('l', F), ('L', R), ('M', O), ('C', O),
                ('n', F), ('p', F), ('s', F), ('t', F), ('w', F),
            ],
            &[
                ("root", F), ("show-stats", F), ("porcelain", F), ("line-porcelain", F),
                ("incremental", F), ("show-name", F), ("show-number", F), ("show-email", F),
                ("date", R), ("abbrev", O), ("color-lines", F), ("color-by-age", F),
                ("minimal", F), ("progress", F), ("no-progress", F), ("ignore-rev", R),
            ],
        ),
        "branch" => spec(
            &[('a', F), ('r', F), ('v', F), ('l', F)],
            &[
                ("show-current", F), ("all", F), ("remotes", F), ("verbose", F), ("list", F),
                ("contains", R), ("no-contains", R), ("merged", O), ("no-merged", O),
                ("points-at", R), ("sort", R), ("format", R), ("color", O), ("no-color", F),
                ("column", O), ("no-column", F), ("abbrev", O), ("ignore-case", F),
            ],
        ),
        _ => return None,
    })
}

/// `git status|diff|log|show|rev-parse|ls-files|blame|branch` with listed options only; no
/// `-C`, `-c`, `--git-dir`, `--work-tree` or `--exec-path`, which point git at another
/// repository or configuration.
fn git_read_only(args: &[ShellWord]) -> ReadOnly {
    let global = match getopt::parse(args, &GIT_GLOBAL) {
        Ok(p) => p,
        Err(e) => {
            return ReadOnly::No(format!(
                "`git` with these options is not read-only for robota: {}",
                e.0
            ))
        }
    };
    let Some(&sub_index) = global.operands.first() else {
        return ReadOnly::No("`git` without a subcommand is not read-only".into());
    };
    let sub_word = &args[sub_index];
    if !sub_word.is_static() {
        return ReadOnly::No("`git` runs a subcommand that is only known when it runs".into());
    }
    let sub = sub_word.text.as_str();
    let Some(sub_spec) = git_sub_spec(sub) else {
        return ReadOnly::No(format!("`git {sub}` may change the repository"));
    };
    let rest = &args[sub_index + 1..];
    let mut words: Vec<ShellWord> = rest.to_vec();
    // `git diff --no-index A B` compares any two files.
    let no_index = sub == "diff" && rest.iter().any(|w| w.is_static() && w.text == "--no-index");
    if no_index {
        words.retain(|w| !(w.is_static() && w.text == "--no-index"));
    }
    let parsed: Parsed = match getopt::parse(&words, &sub_spec) {
        Ok(p) => p,
        Err(e) => {
            return ReadOnly::No(format!(
                "`git {sub}` is used in a way robota cannot vouch for: {}",
                e.0
            ))
        }
    };
    if sub == "branch" && !parsed.operands.is_empty() && !parsed.has("list") && !parsed.has("l") {
        return ReadOnly::No("`git branch NAME` creates a branch".into());
    }
    // Commands that print file contents read the whole work tree (a Read deny rule may cover a
    // tracked file); the others print names and metadata only.
    let shows_contents = match sub {
        "diff" | "show" | "blame" => true,
        "log" => [
            "p",
            "u",
            "U",
            "patch",
            "word-diff",
            "color-words",
            "cc",
            "dd",
            "remerge-diff",
        ]
        .iter()
        .any(|o| parsed.has(o)),
        _ => false,
    };
    let mut reads = Reads {
        git: true,
        cwd: shows_contents,
        recursive: shows_contents,
        ..Reads::default()
    };
    if no_index {
        reads.git_no_index = true;
        reads.paths = parsed.operands.iter().map(|&i| words[i].clone()).collect();
    }
    ReadOnly::Yes(reads)
}

/// Whether the command (wrappers stripped) is in the built-in read-only set.
#[cfg(test)]
pub(crate) fn is_read_only(argv: &[ShellWord]) -> bool {
    matches!(read_only(argv), ReadOnly::Yes(_))
}

// ---- Commands that change files -------------------------------------------------------------

/// The files a command creates, changes or deletes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Targets {
    /// The words naming them (conservative when `unknown`: every word that could be one).
    pub words: Vec<ShellWord>,
    /// The command line could not be parsed exactly, so the list may be incomplete.
    pub unknown: bool,
    /// Words naming what the command deletes or rewrites wholesale (for the critical-path check).
    pub deleted: Vec<ShellWord>,
    /// Words naming files it reads (the sources of `cp`), for acceptEdits.
    pub reads: Vec<ShellWord>,
}

#[rustfmt::skip]
const RM: OptSpec = spec(
    &[
        ('f', F), ('i', F), ('I', F), ('r', F), ('R', F), ('d', F), ('v', F),
    ],
    &[
        ("force", F), ("interactive", O), ("one-file-system", F), ("no-preserve-root", F),
        ("preserve-root", O), ("recursive", F), ("dir", F), ("verbose", F),
    ],
);
#[rustfmt::skip]
const RMDIR: OptSpec = spec(
    &[('p', F), ('v', F)],
    &[
        ("ignore-fail-on-non-empty", F), ("parents", F), ("verbose", F),
    ],
);
#[rustfmt::skip]
const CP_MV_LONG: &[(&str, Arg)] = &[
    ("archive", F), ("attributes-only", F), ("backup", O), ("copy-contents", F), ("force", F),
    ("interactive", F), ("link", F), ("dereference", F), ("no-clobber", F), ("no-dereference", F),
    ("preserve", O), ("no-preserve", R), ("parents", F), ("recursive", F), ("reflink", O),
    ("remove-destination", F), ("sparse", R), ("strip-trailing-slashes", F), ("symbolic-link", F),
    ("suffix", R), ("target-directory", R), ("no-target-directory", F), ("update", O),
    ("verbose", F), ("one-file-system", F), ("context", O), ("debug", F),
    ("keep-directory-symlink", F), ("exchange", F), ("no-copy", F),
];
#[rustfmt::skip]
const CP_MV: OptSpec = spec(
    &[
        ('a', F), ('b', F), ('d', F), ('f', F), ('i', F), ('H', F), ('l', F), ('L', F), ('n', F),
        ('P', F), ('p', F), ('R', F), ('r', F), ('s', F), ('S', R), ('t', R), ('T', F), ('u', F),
        ('v', F), ('x', F), ('Z', F),
    ],
    CP_MV_LONG,
);
#[rustfmt::skip]
const LN: OptSpec = spec(
    &[
        ('b', F), ('d', F), ('F', F), ('f', F), ('i', F), ('L', F), ('n', F), ('P', F), ('r', F),
        ('s', F), ('S', R), ('t', R), ('T', F), ('v', F),
    ],
    &[
        ("backup", O), ("directory", F), ("force", F), ("interactive", F), ("logical", F),
        ("no-dereference", F), ("physical", F), ("relative", F), ("symbolic", F), ("suffix", R),
        ("target-directory", R), ("no-target-directory", F), ("verbose", F),
    ],
);
#[rustfmt::skip]
const TOUCH: OptSpec = spec(
    &[
        ('a', F), ('c', F), ('d', R), ('f', F), ('h', F), ('m', F), ('r', R), ('t', R),
    ],
    &[
        ("no-create", F), ("date", R), ("no-dereference", F), ("reference", R), ("time", R),
    ],
);
#[rustfmt::skip]
const MKDIR: OptSpec = spec(
    &[('m', R), ('p', F), ('v', F), ('Z', F)],
    &[("mode", R), ("parents", F), ("verbose", F), ("context", O)],
);
#[rustfmt::skip]
const SED: OptSpec = spec(
    &[
        ('n', F), ('e', R), ('f', R), ('E', F), ('r', F), ('s', F), ('u', F), ('z', F), ('l', R),
        ('i', O),
    ],
    &[
        ("quiet", F), ("silent", F), ("expression", R), ("file", R), ("in-place", O),
        ("line-length", R), ("posix", F), ("regexp-extended", F), ("separate", F), ("sandbox", F),
        ("unbuffered", F), ("null-data", F), ("debug", F), ("follow-symlinks", F),
    ],
);

/// Commands that change the files they name, as far as the checks go: `rm rmdir unlink shred mv
/// cp ln install touch mkdir chmod chown chgrp truncate tee sed -i dd find -delete`.
const MUTATORS: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "mv", "cp", "ln", "install", "touch", "mkdir", "chmod",
    "chown", "chgrp", "truncate", "tee", "sed", "gsed", "dd", "find", "git",
];

/// The files a command changes, or `None` when it is not one of the commands that change the
/// files they name.
pub(crate) fn mutated_targets(argv: &[ShellWord]) -> Option<Targets> {
    let name = argv.first().filter(|w| w.is_static())?.text.as_str();
    let name = name.rsplit('/').next().unwrap_or(name);
    if !MUTATORS.contains(&name) {
        return None;
    }
    let args = &argv[1..];
    let operands =
        |p: &Parsed| -> Vec<ShellWord> { p.operands.iter().map(|&i| args[i].clone()).collect() };
    let exact = |spec: &OptSpec| getopt::parse(args, spec).ok();
    Some(match name {
        "rm" | "rmdir" | "unlink" => {
            let parsed = match name {
                "rm" => exact(&RM),
                "rmdir" => exact(&RMDIR),
                _ => exact(&OptSpec::NONE),
            };
            match parsed {
                Some(p) => {
                    let words = operands(&p);
                    Targets {
                        deleted: words.clone(),
                        words,
                        ..Targets::default()
                    }
                }
                None => failed(args, true),
            }
        }
        "mv" | "cp" => match exact(&CP_MV) {
            Some(p) => {
                let mut words = operands(&p);
                let target_dir = p
                    .all("t")
                    .chain(p.all("target-directory"))
                    .find_map(|o| option_value_word(args, o));
                let sources: Vec<ShellWord> = match &target_dir {
                    Some(_) => words.clone(),
                    None => words[..words.len().saturating_sub(1)].to_vec(),
                };
                if let Some(t) = target_dir {
                    words.push(t);
                }
                Targets {
                    deleted: if name == "mv" {
                        sources.clone()
                    } else {
                        Vec::new()
                    },
                    reads: sources,
                    words,
                    unknown: false,
                }
            }
            None => failed(args, name == "mv"),
        },
        "ln" => match exact(&LN) {
            Some(p) => {
                let mut words = operands(&p);
                if let Some(t) = p
                    .all("t")
                    .chain(p.all("target-directory"))
                    .find_map(|o| option_value_word(args, o))
                {
                    words.push(t);
                }
                Targets {
                    words,
                    ..Targets::default()
                }
            }
            None => failed(args, false),
        },
        "touch" => match exact(&TOUCH) {
            Some(p) => Targets {
                words: operands(&p),
                ..Targets::default()
            },
            None => failed(args, false),
        },
        "mkdir" => match exact(&MKDIR) {
            Some(p) => Targets {
                words: operands(&p),
                ..Targets::default()
            },
            None => failed(args, false),
        },
        "sed" | "gsed" => return sed_targets(args),
        "git" => return git_config_targets(args),
        "dd" => {
            let words = args
                .iter()
                .filter_map(|w| {
                    w.text.strip_prefix("of=").map(|t| ShellWord {
                        text: t.to_string(),
                        raw: w.raw.clone(),
                        ..w.clone()
                    })
                })
                .collect();
            Targets {
                words,
                unknown: args.iter().any(|w| !w.is_static()),
                ..Targets::default()
            }
        }
        // `find` changes files only with `-delete` (and writes with `-fprint*`/`-fls`).
        "find" => {
            let writes = args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
                )
            });
            if !writes {
                return None;
            }
            let mut starts: Vec<ShellWord> = args
                .iter()
                .skip_while(|w| matches!(w.text.as_str(), "-H" | "-L" | "-P"))
                .take_while(|w| !w.text.starts_with(['-', '(', '!']))
                .cloned()
                .collect();
            if starts.is_empty() {
                starts.push(ShellWord::literal("."));
            }
            let mut words = starts.clone();
            for pair in args.windows(2) {
                if matches!(
                    pair[0].text.as_str(),
                    "-fprint" | "-fprint0" | "-fprintf" | "-fls"
                ) {
                    words.push(pair[1].clone());
                }
            }
            let deletes = args.iter().any(|w| w.text == "-delete");
            Targets {
                words,
                deleted: if deletes { starts } else { Vec::new() },
                unknown: args.iter().any(|w| !w.is_static()),
                reads: Vec::new(),
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let mut t = conservative(args, false);
            // A recursive change of permissions or owner rewrites a whole tree.
            let recursive = args.iter().any(|w| {
                w.is_static()
                    && (w.text == "--recursive"
                        || (w.text.starts_with('-')
                            && !w.text.starts_with("--")
                            && w.text.contains('R')))
            });
            if recursive {
                t.deleted = t.words.clone();
            }
            t
        }
        "shred" => {
            let mut t = conservative(args, false);
            t.deleted = t.words.clone();
            t
        }
        // install, truncate, tee: every word that could be a file.
        _ => conservative(args, false),
    })
}

/// `git config` writing a setting: the configuration file it changes (`.git/config`,
/// `~/.gitconfig`, `--file F`). Settings such as `core.fsmonitor` or `core.hooksPath` make git
/// run programs, so the file counts as the protected path it is. `None` for other git commands
/// and for reads (`--get`, `--list`, one operand).
fn git_config_targets(args: &[ShellWord]) -> Option<Targets> {
    let sub_index = args.iter().position(|w| !w.text.starts_with('-'))?;
    if args[..sub_index].iter().any(|w| !w.is_static()) || args[sub_index].text != "config" {
        return None;
    }
    let rest = &args[sub_index + 1..];
    const READS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
        "get",
        "list",
        "--show-origin",
        "--show-scope",
    ];
    let operands: Vec<&ShellWord> = rest.iter().filter(|w| !w.text.starts_with('-')).collect();
    let writes_flag = rest.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "--add"
                | "--unset"
                | "--unset-all"
                | "--replace-all"
                | "--rename-section"
                | "--remove-section"
                | "--edit"
                | "-e"
                | "set"
                | "unset"
                | "edit"
                | "rename-section"
                | "remove-section"
        )
    });
    let reads = rest.iter().any(|w| READS.contains(&w.text.as_str()));
    if !writes_flag && (reads || operands.len() <= 1) && rest.iter().all(ShellWord::is_static) {
        return None;
    }
    let file = rest
        .windows(2)
        .find(|p| matches!(p[0].text.as_str(), "--file" | "-f"))
        .map(|p| p[1].clone())
        .or_else(|| {
            rest.iter()
                .find_map(|w| w.text.strip_prefix("--file=").map(ShellWord::literal))
        });
    let target = if let Some(f) = file {
        f
    } else if rest.iter().any(|w| w.text == "--global") {
        ShellWord {
            tilde: true,
            ..ShellWord::literal("~/.gitconfig")
        }
    } else if rest.iter().any(|w| w.text == "--system") {
        ShellWord::literal("/etc/gitconfig")
    } else {
        ShellWord::literal(".git/config")
    };
    Some(Targets {
        words: vec![target],
        unknown: rest.iter().any(|w| !w.is_static()),
        ..Targets::default()
    })
}

/// [`conservative`] for a command line whose options could not be read: the list may be
/// incomplete.
fn failed(args: &[ShellWord], deletes: bool) -> Targets {
    Targets {
        unknown: true,
        ..conservative(args, deletes)
    }
}

/// Every word that could name a file: operands, and values of `--opt=VALUE`. `unknown` is set
/// when an option could have swallowed or hidden one (`-tDIR`).
fn conservative(args: &[ShellWord], deletes: bool) -> Targets {
    let mut words = Vec::new();
    let mut unknown = false;
    let mut options_done = false;
    for w in args {
        if !options_done && w.is_static() && w.text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && w.is_static() && w.text.starts_with('-') && w.text.len() > 1 {
            match w.text.split_once('=') {
                Some((_, value)) => words.push(ShellWord {
                    text: value.to_string(),
                    ..w.clone()
                }),
                // A short option cluster may carry an attached value (`-tDIR`) robota does not
                // know how to read.
                None if !w.text.starts_with("--") && w.text.len() > 2 => unknown = true,
                None => {}
            }
            continue;
        }
        if !w.is_static() {
            unknown = true;
        }
        words.push(w.clone());
    }
    Targets {
        deleted: if deletes { words.clone() } else { Vec::new() },
        words,
        unknown,
        reads: Vec::new(),
    }
}

/// The files `sed` edits in place: its operands, minus the script (the first operand unless
/// `-e`/`-f` gave it). `None` without `-i`.
fn sed_targets(args: &[ShellWord]) -> Option<Targets> {
    match getopt::parse(args, &SED) {
        Ok(p) => {
            if !p.has("i") && !p.has("in-place") {
                return None;
            }
            let mut operands: Vec<ShellWord> =
                p.operands.iter().map(|&i| args[i].clone()).collect();
            let script_given = ["e", "f", "expression", "file"].iter().any(|o| p.has(o));
            if !script_given && !operands.is_empty() {
                operands.remove(0);
            }
            Some(Targets {
                words: operands,
                ..Targets::default()
            })
        }
        Err(_) => {
            // Over-detecting `-i` only costs a check.
            let in_place = args.iter().any(|w| {
                !w.is_static()
                    || w.text.starts_with("--in")
                    || (w.text.starts_with('-')
                        && !w.text.starts_with("--")
                        && w.text.contains('i'))
            });
            in_place.then(|| {
                let mut t = conservative(args, false);
                t.unknown = true;
                t
            })
        }
    }
}

/// Whether acceptEdits may approve this command on its own (its targets are then checked to be
/// inside the workspace): `mkdir`, `touch`, `rm`, `rmdir`, `mv`, `cp` and `sed -i` with a plain
/// substitution script, every word fixed (no globs, nothing computed at run time — a glob can
/// turn a planted file name into an option) and options robota knows.
pub(crate) fn accept_edits_command(argv: &[ShellWord]) -> bool {
    let Some(name) = name_of(argv) else {
        return false;
    };
    if !argv.iter().all(ShellWord::is_static) {
        return false;
    }
    let args = &argv[1..];
    match name {
        "mkdir" => getopt::parse(args, &MKDIR).is_ok(),
        "touch" => getopt::parse(args, &TOUCH).is_ok_and(|p| !p.has("r") && !p.has("reference")),
        "rm" => getopt::parse(args, &RM).is_ok_and(|p| !p.has("no-preserve-root")),
        "rmdir" => getopt::parse(args, &RMDIR).is_ok(),
        "mv" | "cp" => getopt::parse(args, &CP_MV).is_ok(),
        "sed" => match getopt::parse(args, &SED) {
            Ok(p) if (p.has("i") || p.has("in-place")) && !p.has("f") && !p.has("file") => {
                let scripts: Vec<&str> = p
                    .all("e")
                    .chain(p.all("expression"))
                    .filter_map(|o| o.value.as_deref())
                    .collect();
                let scripts = if scripts.is_empty() {
                    match p.operands.first() {
                        Some(&i) => vec![args[i].text.as_str()],
                        None => return false,
                    }
                } else {
                    scripts
                };
                scripts.iter().all(|s| plain_sed_script(s))
            }
            _ => false,
        },
        _ => false,
    }
}

/// A `sed` script of plain substitutions and deletions: `s/a/b/g`, `3d`, `/re/d`, joined by `;`
/// or newlines. Anything else — the `e` (execute), `w`/`W` (write a file), `r`/`R` (read a
/// file) commands or `s///e`/`s///w` flags — is not plain.
fn plain_sed_script(script: &str) -> bool {
    let mut chars = script.chars().peekable();
    loop {
        // Separators and an optional address: line numbers, `$`, `,`, or `/regex/`.
        while matches!(chars.peek(), Some(';' | '\n' | ' ' | '\t')) {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return true;
        };
        // Address.
        let mut c = c;
        loop {
            match c {
                '0'..='9' | '$' | ',' | '~' | '+' => {
                    chars.next();
                }
                '/' => {
                    chars.next();
                    if !skip_delimited(&mut chars, '/') {
                        return false;
                    }
                }
                _ => break,
            }
            match chars.peek() {
                Some(&next) => c = next,
                None => return false,
            }
        }
        if c == '!' {
            chars.next();
            match chars.peek() {
                Some(&next) => c = next,
                None => return false,
            }
        }
        chars.next();
        match c {
            'd' | 'p' | 'P' | 'D' | 'N' | 'n' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'q' | 'Q' => {}
            's' | 'y' => {
                let Some(delim) = chars.next() else {
                    return false;
                };
                if delim == '\\' || delim == '\n' {
                    return false;
                }
                if !skip_delimited(&mut chars, delim) || !skip_delimited(&mut chars, delim) {
                    return false;
                }
                if c == 's' {
                    while let Some(&flag) = chars.peek() {
                        if flag.is_ascii_digit()
                            || matches!(flag, 'g' | 'p' | 'i' | 'I' | 'm' | 'M')
                        {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
            }
            _ => return false,
        }
        match chars.peek() {
            None => return true,
            Some(';' | '\n' | ' ' | '\t') => {}
            Some(_) => return false,
        }
    }
}

/// Skips to just past the next unescaped `delim`.
fn skip_delimited(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, delim: char) -> bool {
    while let Some(c) = chars.next() {
        if c == '\\' {
            if chars.next().is_none() {
                return false;
            }
            continue;
        }
        if c == delim {
            return true;
        }
        if c == '\n' {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<ShellWord> {
        s.split(' ').map(ShellWord::literal).collect()
    }

    #[test]
    fn read_only_set() {
        assert!(is_read_only(&argv("ls -la")));
        assert!(is_read_only(&argv("git status")));
        assert!(is_read_only(&argv("git log --oneline")));
        assert!(is_read_only(&argv("git log -5")));
        assert!(!is_read_only(&argv("git push")));
        assert!(!is_read_only(&argv("git diff --output=x")));
        assert!(!is_read_only(&argv("git diff --output x")));
        assert!(!is_read_only(&argv("git log --ext-diff")));
        assert!(!is_read_only(&argv("git -C sub status")));
        assert!(!is_read_only(&argv("git -c core.fsmonitor=x status")));
        assert!(!is_read_only(&argv("git --git-dir=x status")));
        assert!(!is_read_only(&argv("git branch new")));
        assert!(is_read_only(&argv("git branch --show-current")));
        assert!(!is_read_only(&argv("find . -delete")));
        assert!(!is_read_only(&argv("find . -exec rm {} ;")));
        assert!(!is_read_only(&argv("find . -fprint x")));
        assert!(is_read_only(&argv("find src -name *.rs -type f")));
        assert!(!is_read_only(&argv("rg --pre cat x")));
        assert!(!is_read_only(&argv("rg --pre=cat x")));
        assert!(!is_read_only(&argv("rg --hostname-bin=x y")));
        assert!(!is_read_only(&argv("rg -z x")));
        assert!(is_read_only(&argv("rg -n --hidden TODO src")));
        assert!(!is_read_only(&argv("sort -o out in")));
        assert!(!is_read_only(&argv("sort -ro out in")));
        assert!(!is_read_only(&argv("sort --compress-program=sh in")));
        assert!(!is_read_only(&argv("sort --compress in")));
        assert!(is_read_only(&argv("sort -rn -k2 in")));
        assert!(!is_read_only(&argv("uniq a b")));
        assert!(!is_read_only(&argv("file -C -m x")));
        assert!(!is_read_only(&argv("date -s 2020-01-01")));
        assert!(!is_read_only(&argv("tail -f log")));
        assert!(!is_read_only(&argv("printf -v PATH /tmp")));
        assert!(is_read_only(&argv("printf %s x")));
        assert!(!is_read_only(&argv("test -v x")));
        assert!(!is_read_only(&argv("LS")));
        assert!(!is_read_only(&argv("lsof")));
        assert!(is_read_only(&argv("command -v rm")));
        assert!(!is_read_only(&argv("git")));
        assert!(is_read_only(&argv("grep -rn -e foo src")));
        assert!(is_read_only(&argv("head -5 a")));
    }

    #[test]
    fn reads_name_the_files() {
        let ReadOnly::Yes(r) = read_only(&argv("grep -r foo src lib")) else {
            panic!()
        };
        let names: Vec<_> = r.paths.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(names, ["src", "lib"]);
        assert!(r.recursive);
        let ReadOnly::Yes(r) = read_only(&argv("grep -f pats x")) else {
            panic!()
        };
        let names: Vec<_> = r.paths.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(names, ["pats", "x"]);
        let ReadOnly::Yes(r) = read_only(&argv("rg TODO")) else {
            panic!()
        };
        assert!(r.cwd && r.paths.is_empty());
        let ReadOnly::Yes(r) = read_only(&argv("git diff --no-index a b")) else {
            panic!()
        };
        assert!(r.git_no_index && r.paths.len() == 2);
    }

    #[test]
    fn mutators() {
        let t = |s: &str| {
            mutated_targets(&argv(s))
                .map(|v| v.words.into_iter().map(|w| w.text).collect::<Vec<_>>())
        };
        assert_eq!(t("rm -rf .git"), Some(vec![".git".to_string()]));
        assert_eq!(
            t("cp -t dst a"),
            Some(vec!["a".to_string(), "dst".to_string()])
        );
        assert_eq!(
            t("cp -tdst a"),
            Some(vec!["a".to_string(), "dst".to_string()])
        );
        assert_eq!(
            t("mv -vtdst a"),
            Some(vec!["a".to_string(), "dst".to_string()])
        );
        assert_eq!(
            t("cp --target-directory=d a"),
            Some(vec!["a".to_string(), "d".to_string()])
        );
        assert!(
            mutated_targets(&argv("cp --target-dir=d a"))
                .unwrap()
                .unknown
        );
        assert_eq!(t("sed s/a/b/ f"), None);
        assert_eq!(t("sed -i s/.git/x/ f"), Some(vec!["f".to_string()]));
        assert_eq!(
            t("sed -i -e s/a/b/ f g"),
            Some(vec!["f".to_string(), "g".to_string()])
        );
        assert_eq!(t("dd if=a of=b"), Some(vec!["b".to_string()]));
        assert_eq!(t("find .git -delete"), Some(vec![".git".to_string()]));
        assert_eq!(t("find . -name x"), None);
        assert_eq!(t("ls"), None);
        assert_eq!(t("/bin/rm x"), Some(vec!["x".to_string()]));
        let mv = mutated_targets(&argv("mv a b c")).unwrap();
        assert_eq!(mv.deleted.len(), 2);
    }

    #[test]
    fn accept_edits_commands() {
        assert!(accept_edits_command(&argv("mkdir -p a/b")));
        assert!(accept_edits_command(&argv("rm -rf build")));
        assert!(accept_edits_command(&argv("sed -i s/a/b/g f")));
        assert!(accept_edits_command(&argv("sed -i -e 3d -e s|x|y| f")));
        assert!(!accept_edits_command(&argv("sed -i s/a/b/e f")));
        assert!(!accept_edits_command(&argv("sed -i s/a/b/w\u{20}x f")));
        assert!(!accept_edits_command(&argv("sed -i 1e\u{20}id f")));
        assert!(!accept_edits_command(&argv("sed -i -f script f")));
        assert!(!accept_edits_command(&argv("chmod 755 x")));
        let mut glob = argv("rm x");
        glob[1].glob = true;
        assert!(!accept_edits_command(&glob));
    }
}
