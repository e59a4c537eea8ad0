//! `docs/reference/cli.md`, rendered from the command definitions themselves: every command,
//! its usage, and its flags grouped by heading with their variables, defaults and values.
//! `host/tests/cli/reference.rs` fails when the file is not what this renders.

use clap::{Arg, Command};

/// The whole reference page for `command` and its subcommands.
pub fn markdown(command: &Command) -> String {
    let mut page = String::from(
        "# Command line reference\n\nGenerated from the binary's own definitions; do not edit. \
         `make cli-reference` writes it again, and `cargo test -p pipewarden --test \
         cli reference::` fails when it is out of date.\n",
    );
    let mut command = command.clone();
    command.build();
    render(&command, &mut Vec::new(), &mut page);
    page
}

fn render(command: &Command, path: &mut Vec<String>, page: &mut String) {
    path.push(command.get_name().to_owned());
    let leaf = command.get_subcommands().next().is_none();
    if path.len() > 1 || leaf {
        page.push_str(&format!("\n## `{}`\n\n", path.join(" ")));
        if let Some(about) = command.get_long_about().or(command.get_about()) {
            page.push_str(&format!("{}\n\n", one_paragraph(&about.to_string())));
        }
        let usage = command.clone().render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ").trim();
        page.push_str(&format!("```\n{usage}\n```\n"));
        flags(command, page);
        if let Some(examples) = command.get_after_help() {
            examples_section(&examples.to_string(), page);
        }
    }
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        render(sub, path, page);
    }
    path.pop();
}

/// The flags in the order `--help` shows them, one table per heading.
fn flags(command: &Command, page: &mut String) {
    let args: Vec<&Arg> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in &args {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    for heading in headings {
        page.push_str(&format!("\n### {}\n\n", heading.unwrap_or("Options")));
        page.push_str("| flag | variable | default | what |\n| --- | --- | --- | --- |\n");
        for arg in args.iter().filter(|a| a.get_help_heading() == heading) {
            page.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                name(arg),
                arg.get_env()
                    .map(|e| format!("`{}`", e.to_string_lossy()))
                    .unwrap_or_default(),
                defaults(arg),
                cell(&help(arg)),
            ));
        }
    }
}

/// The `Examples:` a command's `--help` ends with, as a shell block.
fn examples_section(text: &str, page: &mut String) {
    let body: Vec<&str> = text
        .lines()
        .skip_while(|line| line.trim() == "Examples:")
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect();
    page.push_str(&format!(
        "\n### Examples\n\n```sh\n{}\n```\n",
        body.join("\n")
    ));
}

fn name(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|names| names.iter().map(|n| format!(" <{n}>")).collect::<String>())
        .unwrap_or_default();
    let takes_value = arg.get_action().takes_values();
    match (arg.get_long(), arg.get_short()) {
        (Some(long), Some(short)) if takes_value => format!("`-{short}`, `--{long}{value}`"),
        (Some(long), Some(short)) => format!("`-{short}`, `--{long}`"),
        (Some(long), None) if takes_value => format!("`--{long}{value}`"),
        (Some(long), None) => format!("`--{long}`"),
        _ => format!("`{}`", value.trim()),
    }
}

fn defaults(arg: &Arg) -> String {
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    values.join(", ")
}

/// The flag's help, with its possible values when it takes one of a set.
pub fn help(arg: &Arg) -> String {
    let text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| one_paragraph(&h.to_string()))
        .unwrap_or_default();
    let values = arg.get_possible_values();
    let values: Vec<_> = values.iter().filter(|v| !v.is_hide_set()).collect();
    let possible: Vec<String> = values
        .iter()
        .map(|v| match v.get_help() {
            Some(help) => format!("`{}`: {}", v.get_name(), one_paragraph(&help.to_string())),
            None => v.get_name().to_owned(),
        })
        .collect();
    let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
    let takes_bool = names == ["true", "false"];
    let described = values.iter().any(|v| v.get_help().is_some());
    let stop = if text.is_empty() || text.ends_with(['.', ']']) {
        ""
    } else {
        "."
    };
    if possible.is_empty() || takes_bool {
        text
    } else if described {
        format!("{text}{stop} One of: {}", possible.join("; "))
    } else {
        format!("{text}{stop} One of: {}.", possible.join(", "))
    }
}

fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
