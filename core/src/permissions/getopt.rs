//! Option parsing as the programs themselves do it (`getopt_long`-style), so the permission
//! engine sees the same options, values and operands a command will see: clustered short options
//! (`-tI grep`), attached values (`-n5`, `-tDIR`, `--user=root`), separate values (`-u root`),
//! `--` ending the options, and GNU argument permutation (options after operands).
//!
//! Fail closed: an option the spec does not list, an abbreviated long option (GNU would expand
//! `--compress` to `--compress-program`), or a word whose value is only known at run time where an
//! option could stand (`"$x"` may be `-o file`) makes the parse fail, and the caller then treats
//! the command as one it does not understand.

use super::shell::ShellWord;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A flag.
    None,
    /// Needs a value: attached (`-n5`, `--lines=5`) or the next word (`-n 5`, `--lines 5`).
    Required,
    /// Takes a value only when attached (`-i[REPLACE]`, `--color[=WHEN]`).
    Optional,
}

/// The options one program accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptSpec {
    /// Short options: `(letter, Arg)`.
    pub short: &'static [(char, Arg)],
    /// Long options without the leading `--`: `(name, Arg)`. Only exact names match.
    pub long: &'static [(&'static str, Arg)],
    /// Options may follow operands (GNU permutation). When false, the first operand ends the
    /// options (POSIX; wrappers such as `timeout` and `env`, whose first operand is a command).
    pub permute: bool,
    /// `-NUM` is an option (`head -5`, `nice -5`).
    pub numeric: bool,
    /// Long options may be written with one dash (`find`-style `-name` is not this; this is for
    /// programs such as `stat --printf` that accept `-printf`). Rarely set.
    pub single_dash_long: bool,
}

impl OptSpec {
    /// A spec with no options at all (every word is an operand, `--` still ends options).
    pub const NONE: OptSpec = OptSpec {
        short: &[],
        long: &[],
        permute: true,
        numeric: false,
        single_dash_long: false,
    };
}

/// One option found in a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    /// The option's name: a letter for short options, the long name without dashes otherwise,
    /// and `NUM` for `-NUM`.
    pub name: String,
    /// Its value, when it has one (quote-removed text).
    pub value: Option<String>,
    /// Index of the word that holds the value (the option's own word when attached).
    pub value_word: Option<usize>,
}

/// A parsed command line (the words after the program name).
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    pub opts: Vec<Opt>,
    /// Indices (into the parsed words) of the operands, in order.
    pub operands: Vec<usize>,
    /// Whether a `--` was seen.
    pub saw_double_dash: bool,
}

impl Parsed {
    /// Whether option `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|o| o.name == name)
    }

    /// The options named `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Opt> + 'a {
        self.opts.iter().filter(move |o| o.name == name)
    }
}

/// Why a command line could not be parsed with certainty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OptError(pub String);

/// Parses `words` (without the program name) against `spec`.
pub(crate) fn parse(words: &[ShellWord], spec: &OptSpec) -> Result<Parsed, OptError> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while i < words.len() {
        let w = &words[i];
        if options_done {
            out.operands.push(i);
            i += 1;
            continue;
        }
        if !w.is_static() {
            // A word known only at run time may turn out to be an option (`$x` = `--pre=sh`).
            // Quoted or not, it is an operand only where no option can stand anymore.
            if could_be_option(w) {
                return Err(OptError(format!(
                    "`{}` is only known when the command runs and could be an option",
                    w.raw
                )));
            }
            out.operands.push(i);
            if !spec.permute {
                options_done = true;
            }
            i += 1;
            continue;
        }
        let t = w.text.as_str();
        if t == "--" {
            out.saw_double_dash = true;
            options_done = true;
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            i = parse_long(words, i, long, spec, &mut out)?;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let body = &t[1..];
            if spec.numeric && body.chars().all(|c| c.is_ascii_digit()) {
                out.opts.push(Opt {
                    name: "NUM".into(),
                    value: Some(body.to_string()),
                    value_word: Some(i),
                });
                i += 1;
                continue;
            }
            if spec.single_dash_long && spec.long.iter().any(|(n, _)| body.starts_with(n)) {
                i = parse_long(words, i, body, spec, &mut out)?;
                continue;
            }
            i = parse_short(words, i, body, spec, &mut out)?;
            continue;
        }
        out.operands.push(i);
        if !spec.permute {
            options_done = true;
        }
        i += 1;
    }
    Ok(out)
}

/// Whether a dynamic word could expand to something starting with `-`.
fn could_be_option(w: &ShellWord) -> bool {
    // The static text before the first expansion decides: `x$y` never starts with `-`, while
    // `$y`, `"$y"` and `-$y` may.
    let raw = w.raw.trim_start_matches(['"', '\'']);
    !raw.starts_with(|c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '~'))
}

fn parse_long(
    words: &[ShellWord],
    i: usize,
    body: &str,
    spec: &OptSpec,
    out: &mut Parsed,
) -> Result<usize, OptError> {
    let (name, attached) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let Some((known, arg)) = spec.long.iter().find(|(n, _)| *n == name) else {
        return Err(OptError(
            if spec.long.iter().any(|(n, _)| n.starts_with(name)) {
                format!("`--{name}` abbreviates an option, which could be read as another one")
            } else {
                format!("`--{name}` is not an option robota knows to be safe here")
            },
        ));
    };
    match (arg, attached) {
        (Arg::None, Some(_)) => Err(OptError(format!("`--{name}` takes no value"))),
        (Arg::None, None) | (Arg::Optional, None) => {
            out.opts.push(Opt {
                name: known.to_string(),
                value: None,
                value_word: None,
            });
            Ok(i + 1)
        }
        (_, Some(v)) => {
            out.opts.push(Opt {
                name: known.to_string(),
                value: Some(v.to_string()),
                value_word: Some(i),
            });
            Ok(i + 1)
        }
        (Arg::Required, None) => {
            let value = words
                .get(i + 1)
                .ok_or_else(|| OptError(format!("`--{name}` is missing its value")))?;
            if !value.is_static() {
                // The value is an operand of the option, not an option itself; its text is
                // unknown but it cannot change how the rest parses.
            }
            out.opts.push(Opt {
                name: known.to_string(),
                value: Some(value.text.clone()),
                value_word: Some(i + 1),
            });
            Ok(i + 2)
        }
    }
}

fn parse_short(
    words: &[ShellWord],
    i: usize,
    body: &str,
    spec: &OptSpec,
    out: &mut Parsed,
) -> Result<usize, OptError> {
    for (pos, c) in body.char_indices() {
        let Some((_, arg)) = spec.short.iter().find(|(l, _)| *l == c) else {
            return Err(OptError(format!(
                "`-{c}` is not an option robota knows to be safe here"
            )));
        };
        let rest = &body[pos + c.len_utf8()..];
        match arg {
            Arg::None => {
                out.opts.push(Opt {
                    name: c.to_string(),
                    value: None,
                    value_word: None,
                });
            }
            Arg::Optional => {
                out.opts.push(Opt {
                    name: c.to_string(),
                    value: (!rest.is_empty()).then(|| rest.to_string()),
                    value_word: (!rest.is_empty()).then_some(i),
                });
                return Ok(i + 1);
            }
            Arg::Required => {
                if !rest.is_empty() {
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: Some(rest.to_string()),
                        value_word: Some(i),
                    });
                    return Ok(i + 1);
                }
                let value = words
                    .get(i + 1)
                    .ok_or_else(|| OptError(format!("`-{c}` is missing its value")))?;
                out.opts.push(Opt {
                    name: c.to_string(),
                    value: Some(value.text.clone()),
                    value_word: Some(i + 1),
                });
                return Ok(i + 2);
            }
        }
    }
    Ok(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<ShellWord> {
        s.split(' ')
            .filter(|w| !w.is_empty())
            .map(ShellWord::literal)
            .collect()
    }

    const XARGS: OptSpec = OptSpec {
        short: &[
            ('t', Arg::None),
            ('I', Arg::Required),
            ('n', Arg::Required),
            ('i', Arg::Optional),
        ],
        long: &[("replace", Arg::Optional), ("max-args", Arg::Required)],
        permute: false,
        numeric: false,
        single_dash_long: false,
    };

    #[test]
    fn clustered_short_option_takes_the_next_word_as_its_value() {
        let p = parse(&words("-tI grep rm -rf x"), &XARGS).unwrap();
        assert!(p.has("t"));
        assert_eq!(p.all("I").next().unwrap().value.as_deref(), Some("grep"));
        // The first operand — the command xargs runs — is `rm`, not `grep`.
        assert_eq!(p.operands.first(), Some(&2));
    }

    #[test]
    fn attached_values_and_optional_arguments() {
        let p = parse(&words("-n5 -iX echo"), &XARGS).unwrap();
        assert_eq!(p.all("n").next().unwrap().value.as_deref(), Some("5"));
        assert_eq!(p.all("i").next().unwrap().value.as_deref(), Some("X"));
        assert_eq!(p.operands, [2]);
        let p = parse(&words("--max-args 3 --replace echo"), &XARGS).unwrap();
        assert_eq!(p.operands, [3]);
    }

    #[test]
    fn unknown_abbreviated_and_dynamic_options_fail() {
        assert!(parse(&words("-tq echo"), &XARGS).is_err());
        assert!(parse(&words("--max echo"), &XARGS).is_err());
        assert!(parse(&words("--nope echo"), &XARGS).is_err());
        let mut dynamic = ShellWord::literal("$x");
        dynamic.dynamic = true;
        assert!(parse(&[dynamic.clone()], &XARGS).is_err());
        // After `--` anything is an operand.
        let mut ws = words("--");
        ws.push(dynamic);
        assert_eq!(parse(&ws, &XARGS).unwrap().operands, [1]);
    }

    #[test]
    fn permutation_keeps_parsing_after_operands() {
        const SORT: OptSpec = OptSpec {
            short: &[('r', Arg::None)],
            long: &[],
            permute: true,
            numeric: false,
            single_dash_long: false,
        };
        assert!(parse(&words("a -r b"), &SORT).is_ok());
        assert!(parse(&words("a -o b"), &SORT).is_err());
        assert_eq!(parse(&words("a -- -o"), &SORT).unwrap().operands, [0, 2]);
    }
}
