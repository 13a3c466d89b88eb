//! The two small pattern languages rules use: `*`-only wildcards (Bash commands, tool names,
//! domains, agent names, parameter values) and gitignore-style path segments (`*`, `?`, `[…]`
//! within one segment, `**` across segments).
//!
//! Hand-written rather than compiled through `globset`/`regex` because anchors are resolved per
//! evaluation (cwd and home come with the context), and these matchers need no compilation step.

/// `*` matches any run of characters (including spaces, `/` and newlines); every other character
/// matches itself. Iterative with single-star backtracking, so it is linear-ish and cannot blow up
/// on adversarial input.
pub(crate) fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether `pattern` (a gitignore-style path pattern split into segments) matches the path
/// `segments`. `**` matches zero or more whole segments; other segments go through
/// [`segment_match`].
pub(crate) fn segments_match(pattern: &[String], segments: &[&str]) -> bool {
    // Dynamic programming over (pattern index, segment index); paths are short.
    let (np, ns) = (pattern.len(), segments.len());
    let mut reach = vec![vec![false; ns + 1]; np + 1];
    reach[0][0] = true;
    for pi in 0..np {
        for si in 0..=ns {
            if !reach[pi][si] {
                continue;
            }
            if pattern[pi] == "**" {
                for cell in &mut reach[pi + 1][si..=ns] {
                    *cell = true;
                }
            } else if si < ns && segment_match(&pattern[pi], segments[si]) {
                reach[pi + 1][si + 1] = true;
            }
        }
    }
    reach[np][ns]
}

/// One path segment against one pattern segment: `*` (any run), `?` (one character), `[…]`
/// classes (ranges, `!`/`^` negation) and `\` escapes. Unlike a shell, `*` also matches a leading
/// dot, as in `.gitignore` files. Same single-star backtracking as [`wildcard_match`], so a rule
/// with many `*` cannot make matching a long file name explode.
pub(crate) fn segment_match(pattern: &str, text: &str) -> bool {
    let p = tokenize_segment(pattern);
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(SegTok::Star) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(tok) if tok.matches(t[ti]) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    while let Some(SegTok::Star) = p.get(pi) {
        pi += 1;
    }
    pi == p.len()
}

/// One element of a segment pattern.
enum SegTok {
    Star,
    AnyChar,
    Lit(char),
    Class {
        negate: bool,
        items: Vec<(char, char)>,
    },
}

impl SegTok {
    fn matches(&self, c: char) -> bool {
        match self {
            SegTok::Star => true,
            SegTok::AnyChar => true,
            SegTok::Lit(l) => *l == c,
            SegTok::Class { negate, items } => {
                items.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negate
            }
        }
    }
}

fn tokenize_segment(pattern: &str) -> Vec<SegTok> {
    let p: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '*' => {
                // Runs of `*` are one star.
                if !matches!(out.last(), Some(SegTok::Star)) {
                    out.push(SegTok::Star);
                }
                i += 1;
            }
            '?' => {
                out.push(SegTok::AnyChar);
                i += 1;
            }
            '\\' if i + 1 < p.len() => {
                out.push(SegTok::Lit(p[i + 1]));
                i += 2;
            }
            '[' => match parse_class(&p[i..]) {
                Some((tok, used)) => {
                    out.push(tok);
                    i += used;
                }
                // An unclosed `[` is a literal bracket.
                None => {
                    out.push(SegTok::Lit('['));
                    i += 1;
                }
            },
            c => {
                out.push(SegTok::Lit(c));
                i += 1;
            }
        }
    }
    out
}

/// Parses a `[…]` class starting at `p[0] == '['`: the token and the characters it used, or
/// `None` when it is not closed.
fn parse_class(p: &[char]) -> Option<(SegTok, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let start = i;
    let mut items = Vec::new();
    while i < p.len() {
        if p[i] == ']' && i > start {
            return Some((SegTok::Class { negate, items }, i + 1));
        }
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            items.push((p[i], p[i + 2]));
            i += 3;
        } else {
            items.push((p[i], p[i]));
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_basics() {
        assert!(wildcard_match("npm run *", "npm run build"));
        assert!(wildcard_match("* --version", "node --version"));
        assert!(wildcard_match("git * main", "git push origin main"));
        assert!(!wildcard_match("git * main", "git push origin main2"));
        assert!(wildcard_match("ls*", "lsof"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("a", "ab"));
        assert!(wildcard_match("a*b*c", "a xx b yy c"));
        assert!(!wildcard_match("a*b*c", "a xx b yy"));
        // Adversarial input stays fast (would be exponential with naive recursion).
        let text = "a".repeat(5000);
        assert!(!wildcard_match("*a*a*a*a*a*a*b", &text));
    }

    #[test]
    fn segments() {
        let pat = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
        assert!(segments_match(&pat("src/**"), &["src", "a", "b.rs"]));
        assert!(segments_match(&pat("src/**"), &["src"]));
        assert!(segments_match(&pat("**/*.env"), &["a", "b", "x.env"]));
        assert!(segments_match(&pat("**/*.env"), &["x.env"]));
        assert!(!segments_match(&pat("src/*"), &["src", "a", "b.rs"]));
        assert!(segments_match(&pat("src/*.rs"), &["src", "main.rs"]));
        assert!(segment_match("*", ".env"));
        assert!(segment_match("a?.txt", "ab.txt"));
        assert!(!segment_match("a?.txt", "a.txt"));
        assert!(segment_match("[abc].rs", "b.rs"));
        assert!(!segment_match("[!abc].rs", "b.rs"));
        assert!(segment_match("[a-z]x", "qx"));
        assert!(segment_match("\\*", "*"));
        assert!(!segment_match("\\*", "a"));
        assert!(segment_match("[", "["));
        assert!(!segment_match("[a-z]", ""));
        assert!(segment_match("a*b?c*", "axxbyczz"));
        // Many stars against a long name stay fast.
        let long = "a".repeat(255);
        assert!(!segment_match("*a*a*a*a*a*a*a*a*a*a*b", &long));
    }
}
