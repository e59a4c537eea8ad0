//! Editing Go-style command lines (`--flag value`, `--flag=value`) as KFP's binaries take them.
//!
//! Parsing rules: an argument `--name=value` is one flag; `--name` followed by an argument that
//! does not start with `--` is a flag and its value; `--name` followed by another flag (or
//! nothing) is a bare flag; a lone `--` ends the flags. Everything else is kept as it is. A
//! positional argument right after a bare boolean flag would be read as its value, which is why
//! booleans belong in `equals` style.

use crate::{FlagSpec, FlagStyle};

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
