//! Editing Go-style command lines (`--flag value`, `--flag=value`) as KFP's binaries take them.
//!
//! Parsing rules: an argument `--name=value` is one flag; `--name` followed by an argument that
//! does not start with `--` is a flag and its value; `--name` followed by another flag (or
//! nothing) is a bare flag; a lone `--` ends the flags. Everything else is kept as it is. A
//! positional argument right after a bare boolean flag would be read as its value, which is why
//! booleans belong in `equals` style.

use serde::{Deserialize, Serialize};

/// One command-line flag an edit guarantees.
///
/// With `value`, the flag is set to it (added if missing). With `default`, an existing value is
/// kept and the default is used only when the flag is missing. With neither, the flag's value
/// is per pipeline: it is kept, and a missing flag is an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlagSpec {
    /// Without leading dashes: `log_level`, written as `--log_level`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default)]
    pub style: FlagStyle,
}

/// How a flag and its value are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagStyle {
    /// `--flag value`: two arguments.
    #[default]
    Separate,
    /// `--flag=value`: one argument; what Go's flag package needs for booleans.
    Equals,
}

impl FlagSpec {
    /// A flag set to `value`, written `--name value`.
    pub fn set(name: &str, value: &str) -> Self {
        Self {
            name: name.to_owned(),
            value: Some(value.to_owned()),
            default: None,
            style: FlagStyle::Separate,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !is_flag_name(&self.name) {
            return Err(if self.name.starts_with('-') {
                "write the name without dashes (log_level, not --log_level)".to_owned()
            } else {
                "a flag name is letters, digits, '_', '-' or '.'".to_owned()
            });
        }
        if self.value.is_some() && self.default.is_some() {
            return Err("give either value or default, not both".to_owned());
        }
        Ok(())
    }
}

fn is_flag_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Flag {
        name: String,
        value: Option<String>,
        style: FlagStyle,
    },
    Other(String),
}

fn parse(args: &[String]) -> Vec<Token> {
    let mut tokens = Vec::with_capacity(args.len());
    let mut rest = args.iter().peekable();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            tokens.push(Token::Other(arg.clone()));
            tokens.extend(rest.by_ref().cloned().map(Token::Other));
            break;
        }
        let Some(body) = arg.strip_prefix("--").filter(|body| !body.is_empty()) else {
            tokens.push(Token::Other(arg.clone()));
            continue;
        };
        let token = match body.split_once('=') {
            Some((name, value)) => Token::Flag {
                name: name.to_owned(),
                value: Some(value.to_owned()),
                style: FlagStyle::Equals,
            },
            None => Token::Flag {
                name: body.to_owned(),
                value: rest.next_if(|next| !next.starts_with("--")).cloned(),
                style: FlagStyle::Separate,
            },
        };
        tokens.push(token);
    }
    tokens
}

fn write(tokens: Vec<Token>) -> Vec<String> {
    let mut args = Vec::with_capacity(tokens.len() * 2);
    for token in tokens {
        match token {
            Token::Other(arg) => args.push(arg),
            Token::Flag {
                name, value: None, ..
            } => args.push(format!("--{name}")),
            Token::Flag {
                name,
                value: Some(value),
                style: FlagStyle::Equals,
            } => args.push(format!("--{name}={value}")),
            Token::Flag {
                name,
                value: Some(value),
                style: FlagStyle::Separate,
            } => {
                args.push(format!("--{name}"));
                args.push(value);
            }
        }
    }
    args
}

/// The value of the first `--name` in `args`; `None` when absent or bare.
pub fn flag_value(args: &[String], name: &str) -> Option<String> {
    parse(args)
        .into_iter()
        .find_map(|token| match token {
            Token::Flag {
                name: found, value, ..
            } if found == name => Some(value),
            _ => None,
        })
        .flatten()
}

/// Applies `specs` to `args` and returns the new command line.
///
/// Present flags get the spec's value (if it sets one) and style; every occurrence of a
/// repeated flag is updated. A missing flag is inserted right after the previous spec's flag,
/// so listing specs in the target version's order reproduces its order. Arguments no spec
/// names keep their values and relative order. Applying the same specs twice changes nothing.
pub fn apply_flags(args: &[String], specs: &[&FlagSpec]) -> Result<Vec<String>, String> {
    let mut tokens = parse(args);
    let mut cursor = 0;
    for spec in specs {
        let positions: Vec<usize> = tokens
            .iter()
            .enumerate()
            .filter(|(_, token)| matches!(token, Token::Flag { name, .. } if *name == spec.name))
            .map(|(index, _)| index)
            .collect();
        if let Some(&last) = positions.last() {
            for index in positions {
                if let Token::Flag { value, style, .. } = &mut tokens[index] {
                    if let Some(wanted) = &spec.value {
                        *value = Some(wanted.clone());
                    }
                    if value.is_some() {
                        *style = spec.style;
                    }
                }
            }
            cursor = last + 1;
        } else {
            let value = spec
                .value
                .as_ref()
                .or(spec.default.as_ref())
                .ok_or_else(|| {
                    format!(
                        "--{} is missing and its value is per pipeline, so it cannot be added",
                        spec.name
                    )
                })?;
            let flag = Token::Flag {
                name: spec.name.clone(),
                value: Some(value.clone()),
                style: spec.style,
            };
            tokens.insert(cursor, flag);
            cursor += 1;
        }
    }
    Ok(write(tokens))
}

#[cfg(test)]
mod tests;
