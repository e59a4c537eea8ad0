//! `kfp-compile`: compiles a KFP pipeline IR to the Argo Workflow a KFP release would create.
//!
//! ```text
//! kfp-compile [--release X] [--settings FILE] IR_FILE   compile (YAML or JSON; `-` is stdin)
//! kfp-compile --recover WORKFLOW_FILE                  print the IR a compiled workflow carries
//! ```
//!
//! Output is JSON on stdout. Bad input prints one line on stderr and exits with 2.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use kfp_compiler::{CompileOptions, IrFile, Release, recover_ir};
use serde::Deserialize;
use serde_json::{Value, json};

const USAGE: &str = "usage: kfp-compile [--release X] [--settings FILE] IR_FILE\n       kfp-compile --recover WORKFLOW_FILE\n\n\
IR_FILE is a PipelineSpec (YAML or JSON, optionally followed by a platform spec document) or a\n\
PipelineJob JSON; `-` reads stdin. X is the KFP release to compile as (2.14.4, 2.15.0, 2.16.0,\n\
2.16.1, 2.17.0; default 2.17.0). FILE is a JSON object of KFP API server settings\n\
(V2_DRIVER_IMAGE, PIPELINE_LOG_LEVEL, ...), read as release X reads them; without it,\n\
KFP's compiler test environment is used (nothing set).";

enum Command {
    Compile {
        release: Release,
        settings: Option<String>,
        input: String,
    },
    Recover {
        input: String,
    },
    Help,
}

fn main() -> ExitCode {
    let command = match parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(message) => return fail(&format!("{message}\n{USAGE}")),
    };
    let output = match command {
        Command::Help => {
            return match writeln!(io::stdout(), "{USAGE}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => write_error(&e),
            };
        }
        Command::Compile {
            release,
            settings,
            input,
        } => compile(release, settings.as_deref(), &input),
        Command::Recover { input } => recover(&input),
    };
    match output {
        Ok(value) => emit(&value),
        Err(message) => fail(&message),
    }
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut settings = None;
    let mut release = None;
    let mut recover = false;
    let mut inputs = Vec::new();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--recover" => recover = true,
            "--settings" => {
                settings = Some(args.next().ok_or("--settings needs a file")?);
            }
            _ if arg.starts_with("--settings=") => {
                settings = Some(arg["--settings=".len()..].to_owned());
            }
            "--release" => {
                release = Some(parse_release(
                    &args.next().ok_or("--release needs a version")?,
                )?);
            }
            _ if arg.starts_with("--release=") => {
                release = Some(parse_release(&arg["--release=".len()..])?);
            }
            _ if arg.starts_with('-') && arg != "-" => return Err(format!("unknown option {arg}")),
            _ => inputs.push(arg),
        }
    }
    let [input] = <[String; 1]>::try_from(inputs)
        .map_err(|_| "expected exactly one input file".to_owned())?;
    match (recover, settings, release) {
        (true, Some(_), _) => Err("--settings does not apply to --recover".into()),
        (true, _, Some(_)) => Err("--release does not apply to --recover".into()),
        (true, None, None) => Ok(Command::Recover { input }),
        (false, settings, release) => Ok(Command::Compile {
            release: release.unwrap_or(Release::LATEST),
            settings,
            input,
        }),
    }
}

/// An exact supported version; anything else names the supported ones.
fn parse_release(version: &str) -> Result<Release, String> {
    version
        .parse()
        .map_err(|e: kfp_compiler::UnknownRelease| e.to_string())
}

fn compile(release: Release, settings: Option<&str>, input: &str) -> Result<Value, String> {
    let options = match settings {
        None => CompileOptions::from_settings_for(release, &Value::Object(Default::default()))
            .map_err(|e| e.to_string())?,
        Some(path) => {
            let text = read(path)?;
            let settings: Value = serde_json::from_str(&text)
                .map_err(|e| one_line(path, &format!("settings are not JSON: {e}")))?;
            CompileOptions::from_settings_for(release, &settings).map_err(|e| one_line(path, &e))?
        }
    };
    let documents = documents(input)?;
    let ir = IrFile::from_documents(documents).map_err(|e| one_line(input, &e))?;
    ir.compile(&options).map_err(|e| one_line(input, &e))
}

/// `path: error` on a single line.
fn one_line(path: &str, error: &dyn std::fmt::Display) -> String {
    format!("{path}: {error}").replace('\n', " ")
}

fn recover(input: &str) -> Result<Value, String> {
    let workflow = documents(input)?
        .into_iter()
        .next()
        .ok_or_else(|| format!("{input}: empty"))?;
    let ir = recover_ir(&workflow).map_err(|e| one_line(input, &e))?;
    Ok(json!({
        "pipelineJob": ir.pipeline_job(),
        "platformSpec": ir.platform_spec,
    }))
}

fn read(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut text = String::new();
        io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("stdin: {e}"))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))
}

/// The documents of a JSON file (one or more values) or of a YAML stream. JSON is read as
/// JSON first: YAML does not allow the tab indentation JSON files may have.
fn documents(path: &str) -> Result<Vec<Value>, String> {
    let text = read(path)?;
    if text.trim_start().starts_with(['{', '['])
        && let Ok(documents) = serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
    {
        return Ok(documents);
    }
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| {
            Value::deserialize(document)
                .map_err(|e| one_line(path, &format!("not YAML or JSON: {e}")))
        })
        .collect()
}

fn emit(value: &Value) -> ExitCode {
    let mut stdout = io::stdout().lock();
    let written = serde_json::to_writer_pretty(&mut stdout, value)
        .map_err(io::Error::from)
        .and_then(|()| writeln!(stdout))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => write_error(&e),
    }
}

/// A reader that went away is not an error worth reporting.
fn write_error(error: &io::Error) -> ExitCode {
    if error.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    let _ = writeln!(io::stderr(), "kfp-compile: writing output: {error}");
    ExitCode::FAILURE
}

fn fail(message: &str) -> ExitCode {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default();
    let mut stderr = io::stderr();
    let _ = writeln!(stderr, "kfp-compile: {first}");
    for line in lines {
        let _ = writeln!(stderr, "{line}");
    }
    ExitCode::from(2)
}
