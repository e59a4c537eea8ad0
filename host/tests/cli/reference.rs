//! `docs/reference/cli.md` is what the command definitions render (`make cli-reference` writes
//! it), every flag of every command has help, `run --help` groups its flags by loop, and
//! `pipewarden completions` writes a script for each shell.

use clap::CommandFactory as _;
use pipewarden::cli::{Cli, reference};

fn reference_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference/cli.md")
}

#[test]
fn the_cli_reference_is_current() {
    let rendered = reference::markdown(&Cli::command());
    if std::env::var_os("UPDATE_CLI_REFERENCE").is_some() {
        std::fs::write(reference_path(), &rendered).expect("write docs/reference/cli.md");
    }
    let written = std::fs::read_to_string(reference_path()).unwrap_or_default();
    assert!(
        written == rendered,
        "docs/reference/cli.md is out of date: run `make cli-reference` and commit it"
    );
}

#[test]
fn every_flag_of_every_command_says_what_it_does() {
    fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let own = matches!(arg.get_id().as_str(), "help" | "version");
            if !own && !arg.is_hide_set() && reference::help(arg).is_empty() {
                missing.push(format!(
                    "{path} --{}",
                    arg.get_long().unwrap_or(arg.get_id().as_str())
                ));
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut command = Cli::command();
    command.build();
    let mut missing = Vec::new();
    walk(&command, "pipewarden", &mut missing);
    assert!(missing.is_empty(), "flags without help: {missing:#?}");
}

#[test]
fn run_help_groups_its_flags_by_what_they_configure() {
    let mut command = Cli::command();
    let help = command
        .find_subcommand_mut("run")
        .expect("run")
        .render_long_help()
        .to_string();
    let headings: Vec<&str> = help
        .lines()
        .filter(|line| !line.starts_with(' ') && line.ends_with(':'))
        .collect();
    for wanted in [
        "Policy:",
        "Controller:",
        "HTTP:",
        "Leader election:",
        "Exit gate:",
        "SWF loop:",
    ] {
        assert!(headings.contains(&wanted), "no {wanted} in {headings:?}");
    }
}

#[test]
fn completions_are_written_for_each_shell() {
    let binary = env!("CARGO_BIN_EXE_pipewarden");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef pipewarden"),
        ("fish", "complete -c pipewarden"),
    ] {
        let output = std::process::Command::new(binary)
            .args(["completions", shell])
            .output()
            .expect("run pipewarden completions");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{shell}: {:?}", output.status);
        assert!(script.contains(marker), "{shell} script lacks {marker:?}");
        assert!(
            script.contains("exit-catchup-window"),
            "{shell}: no run flags"
        );
    }
}
